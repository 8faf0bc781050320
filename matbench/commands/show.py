"""`matbench show`: print exactly what a model sees for one item, without loading its weights.

For each arm and donor member: the header and every served event as the token ids the engine
serves (decoded verbatim), their token counts and the original positions of the kept rows, the
query with its token count, and where the query starts under the chosen serving mode. Everything
comes from the engine's own objects (`PairEngine` built around a weightless skeleton of the model,
its layout, `requests` and `serving.query_start`), so `show` cannot disagree with `eval`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from matbench.commands.common import add_dialog_sources, add_model, add_suite_rows, suite_seed
from matbench.errors import MatbenchError
from matbench.protocol.pairs import SERVING_MODES
from matbench.protocol.readouts import READOUTS

SHOW_EPILOG = """examples:
  matbench show --model smollm2-135m --suite discovery --readout trace
  matbench show --model gemma3-270m --suite access --item 3 --arm sel_txt --serving native
  matbench show --model smollm2-135m --item discovery-v2-s0-00005 --format json > item5.json
  matbench show --model smollm2-135m --suite discovery --paper-seed 3900 --item 1   # kv_causal's own item 1

Pieces marked [A=B] have the same token ids and positions in both donor members; [A!=B] pieces
differ, which only a donor-visible arm (one that serves the source) may show. Rows are the suite's
declared served events (the oracle policy, eval's default). Only the tokenizer and the model's
config are read: no weights are loaded."""

MEMBERS = ("A", "B")


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="print exactly what a model sees for one item (pieces, tokens, positions, query)",
        description="Print the rendered header, every served event and the query of one item, for each "
        "arm and donor member, with token counts, original positions of the kept rows and the query's "
        "position and cache slot, as `matbench eval` serves them. Loads the tokenizer, not the weights.",
        epilog=SHOW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model(p)
    p.add_argument("--suite", default="discovery", help="suite name (default: discovery)")
    p.add_argument(
        "--item",
        default="0",
        metavar="K",
        help="the item: an index into the suite's rows or an item_id (default: 0, the first row)",
    )
    p.add_argument("--arm", help="show only this arm (default: every arm)")
    p.add_argument(
        "--readout",
        choices=READOUTS.names(),
        help="the readout whose query is shown (default: probe, or the suite's own where it is read from free text)",
    )
    p.add_argument(
        "--serving",
        default="auto",
        choices=("auto", *SERVING_MODES),
        help="compact, native or auto (default: native for models with sliding-window layers, "
        "else compact), as in eval",
    )
    p.add_argument(
        "--format",
        default="text",
        choices=("text", "json"),
        help="text (default: for the eye) or json (one object, for diffs)",
    )
    add_suite_rows(p)
    p.add_argument(
        "--paper-seed",
        type=int,
        metavar="SEED",
        help="show the item the paper's own script draws at this seed (its --seed; kv_causal's is 3900) "
        "instead of a matbench row: the rendering its parity test pins (suites whose generator "
        "reproduces the paper's random stream; another suite is refused naming them)",
    )
    p.add_argument("--trust-remote-code", action="store_true", help="allow the checkpoint's own Python code")
    add_dialog_sources(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from matbench.commands.eval import default_readouts

    args.readout = args.readout or default_readouts(args.suite)[0]
    pair, index = choose_item(args)
    arms = choose_arms(pair, args.arm)
    engine = weightless_engine(
        args.model,
        revision=args.revision,
        serving=args.serving,
        readout=args.readout,
        trust_remote_code=args.trust_remote_code,
    )
    described = describe(engine, pair, arms, READOUTS.get(args.readout))
    shown = {
        "suite": args.suite,
        "item": {"index": index, **described.pop("item")},
        "model": args.model,
        "serving_requested": args.serving,
        **described,
    }
    if args.format == "json":
        print(json.dumps(shown, indent=1, ensure_ascii=False))
    else:
        sys.stdout.write(render_text(shown))
    return 0


# --- choosing the item and arms (before anything heavy loads) ------------------------------------


def choose_item(args: argparse.Namespace) -> tuple[Any, int]:
    """The item `--item` names among the suite's rows, loaded as `matbench eval` loads them."""
    from matbench.run.distributed import Shard
    from matbench.run.evaluate import EvalConfig, check_config, load_suite

    cfg = EvalConfig(
        model=args.model,
        suite=args.suite,
        dataset=args.dataset,
        dataset_revision=args.dataset_revision,
        limit=args.limit,
        seed=suite_seed(args),
        readouts=(args.readout,),
        locomo=args.locomo,
        realtalk=args.realtalk,
        template=args.template,
    )
    check_config(cfg, Shard())  # eval's refusals (--limit, a misspelt suite), each as one line
    key = args.item.strip()
    if args.paper_seed is not None:
        pairs = paper_items(args, int(key) + 1 if key.isdigit() else args.limit or 64)
    else:
        pairs, _ = load_suite(cfg)
    if key.lstrip("-").isdigit():
        index = int(key)
        if not 0 <= index < len(pairs):
            more = "" if args.limit else "; pass --limit to load more rows"
            raise MatbenchError(
                f"item index {index} is out of range: suite {args.suite} has {len(pairs)} rows "
                f"(0-{len(pairs) - 1}){more}"
            )
        return pairs[index], index
    for index, pair in enumerate(pairs):
        if pair.item_id == key:
            return pair, index
    raise MatbenchError(
        f"suite {args.suite} has no item {key!r} among its {len(pairs)} rows (ids "
        f"{pairs[0].item_id} ... {pairs[-1].item_id}); give an index or one of those ids"
    )


def paper_items(args: argparse.Namespace, n: int) -> list[Any]:
    """The first n items the paper's own script draws at --paper-seed (`Suite.paper`)."""
    from matbench.data_gen import SUITES

    paper = SUITES.get(args.suite).paper
    if paper is None:
        known = ", ".join(name for name in SUITES.names() if SUITES.get(name).paper)
        raise MatbenchError(
            f"--paper-seed: matbench does not reproduce the paper's draws for suite {args.suite} (it does for "
            f"{known}); its parity fixtures pin the paper's renderings: tests/parity/fixtures/{args.suite}.json"
        )
    if args.dataset or args.seed is not None or args.template != "orig":
        raise MatbenchError("--paper-seed renders the paper script's own items; drop --dataset, --seed and --template")
    return paper.items(args.paper_seed, n)


def choose_arms(pair: Any, name: str | None) -> tuple[Any, ...]:
    if name is None:
        return pair.arms
    for arm in pair.arms:
        if arm.name == name:
            return (arm,)
    raise MatbenchError(f"item {pair.item_id} has no arm {name!r}; valid arms: {', '.join(a.name for a in pair.arms)}")


# --- the engine without weights ------------------------------------------------------------------


class ConfigOnlyModel:
    """A model's config without its layers or weights: what a `PairEngine` reads of a model to
    render, lay out, resolve the serving mode and build serve requests. Running it is an error."""

    def __init__(self, config: Any) -> None:
        self.config = config

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise MatbenchError("matbench show loads no weights: this model cannot run")

    __call__ = forward

    def parameters(self) -> Any:
        return iter(())


def weightless_engine(
    model: str,
    *,
    revision: str | None = None,
    serving: str = "auto",
    readout: str = "probe",
    trust_remote_code: bool = False,
) -> Any:
    """A `PairEngine` for `model` built from its tokenizer and config alone (`ConfigOnlyModel`):
    the engine eval builds, less the weights, which rendering and laying out never touch."""
    from matbench.engine.pair_engine import PairEngine
    from matbench.models.gguf import one_gguf_parse
    from matbench.models.loading import LoadedModel, load_config, load_tokenizer
    from matbench.models.servable import check_servable
    from matbench.models.sources import resolve_source

    source = resolve_source(model, revision)
    with one_gguf_parse(source):  # an unconverted GGUF file: one parse for config and tokenizer
        config = load_config(source, trust_remote_code)
        check_servable(config, model)  # what eval refuses, show refuses
        tokenizer = load_tokenizer(model, revision=revision, trust_remote_code=trust_remote_code)
    loaded = LoadedModel(ConfigOnlyModel(config), tokenizer, source, "float32", "cpu")
    return PairEngine(loaded, serving=serving, readout=readout)


# --- what the model sees ---------------------------------------------------------------------------


def _ranges(values: list[int]) -> list[list[int]]:
    """Inclusive [first, last] runs of consecutive integers."""
    out: list[list[int]] = []
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def _ranges_text(runs: list[list[int]]) -> str:
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs) or "(none)"


def _query_parts(text: str, question: str, tail: str) -> dict[str, str] | None:
    """The query text cut at the arm's question and the chat tail (None where they are not found)."""
    at = text.find(question)
    end = text.rfind(tail) if tail else -1
    if at < 0 or end < at + len(question):
        return None
    return {
        "before_question": text[:at],
        "question": question,
        "suffix": text[at + len(question) : end],
        "chat_tail": tail,
        "assistant_prefix": text[end + len(tail) :],
    }


def describe(engine: Any, pair: Any, arms: tuple[Any, ...], readout: Any) -> dict[str, Any]:
    """Everything `show` prints, as one JSON-ready dict: per arm and member the served pieces and the
    query, from the engine's layout and the serve requests it would batch."""
    import torch

    from matbench.engine.cache import EventCache, text_layout
    from matbench.engine.serving import query_start
    from matbench.models.loading import tokenizer_fingerprint

    tokenizer, renderer = engine.loaded.tokenizer, engine.renderer
    layout = engine.prefetch_layouts([pair])[0]  # the engine's own layout (identity gate included)
    # Row-less caches with the geometry of the global prefill (and of the text re-encodings).
    joint = tuple(
        EventCache((), (), torch.tensor(m.positions, dtype=torch.long), m.header_span, m.event_spans, layout.length)
        for m in layout.members
    )
    derived = {
        arm.name: tuple(text_layout(joint[m], layout.members[m], arm.served)[1] for m in (0, 1))
        for arm in pair.arms
        if arm.encoding == "text"
    }
    requests = engine.requests(pair, joint, readout, derived)
    varying = pair.varying()

    def decode(ids: list[int]) -> dict[str, Any]:
        text = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        exact = list(tokenizer(text, add_special_tokens=False).input_ids) == list(ids)
        return {"text": text, "n_tokens": len(ids), "ids": list(ids), "retokenizes": exact}

    def role(i: int) -> str | None:
        if i == pair.source:
            return "source"
        if i in varying:
            return "donor-dependent"
        return "decoy" if i in pair.decoys else None

    shown_arms = []
    for arm in arms:
        k = next(j for j, a in enumerate(pair.arms) if a.name == arm.name)
        members = []
        for m in (0, 1):
            request, member = requests[2 * k + m], layout.members[m]
            cache = request.cache
            kept = request.kept_slots().tolist()
            pieces: list[dict[str, Any]] = []
            slots: list[int] = []
            for i in (None, *sorted(arm.served)):
                lo, hi = member.header_span if i is None else member.event_spans[i]
                clo, chi = cache.header_span if i is None else cache.event_spans[i]
                slots.extend(range(clo, chi))
                rows_from = MEMBERS[1 - m] if i in arm.swapped else MEMBERS[m]
                positions = cache.positions[clo:chi].tolist()
                # The source slot's position budget: positions its shorter rendering leaves unused.
                skipped = (
                    list(range(positions[-1] + 1, positions[0] + layout.budget))
                    if i == pair.source and arm.encoding != "text" and positions
                    else []
                )
                pieces.append(
                    {
                        "piece": "header" if i is None else f"event {i}",
                        "event": i,
                        "role": None if i is None else role(i),
                        **decode(list(member.input_ids[lo:hi])),
                        "positions": _ranges(positions),
                        "skipped_positions": _ranges(skipped),
                        "rows_from": rows_from,
                    }
                )
            if slots != kept:  # the pieces are exactly the rows the request keeps, in order
                raise AssertionError(f"arm {arm.name}: shown slots differ from the served request's")
            position, coord = query_start(request, engine.serving)
            if engine.serving == "native":
                rule = "L, after the whole trajectory"
            elif request.query_position is not None:
                rule = "L, after the whole trajectory (the arm asks at the end)"
            else:
                rule = f"max kept position {int(cache.positions[kept].max())} + 1"
            query = decode(list(request.query_ids))
            query.update(
                parts=_query_parts(query["text"], arm.question, renderer.tail),
                position=position,
                rule=rule,
                slot=len(kept),
                mask_coordinate=coord,
            )
            members.append(
                {
                    "member": MEMBERS[m],
                    "donor_value": pair.arm_values(arm)[m],
                    "pieces": pieces,
                    "n_rows": len(kept),
                    "length": cache.length,
                    "query": query,
                    "kept_positions": [f"{p['piece']}: {_ranges_text(p['positions'])}" for p in pieces],
                }
            )
        same = [_same(a, b) for a, b in zip(members[0]["pieces"], members[1]["pieces"])]
        shown_arms.append(
            {
                "name": arm.name,
                "served": sorted(arm.served),
                "question": arm.question,
                "encoding": arm.encoding,
                "uses_source": arm.uses_source,
                "query_at_end": arm.query_at_end,
                "swapped": list(arm.swapped),
                "appended": list(arm.appended),
                "expected": arm.expected,
                "menu": list(pair.arm_menu(arm)),
                "values": list(pair.arm_values(arm)),
                "differs": [p["piece"] for p, s in zip(members[0]["pieces"], same) if not s]
                + [
                    f"query {key.replace('_', ' ')}" if key != "ids" else "query"
                    for key in ("ids", "position", "slot")
                    if members[0]["query"][key] != members[1]["query"][key]
                ],
                "members": members,
            }
        )
    return {
        "item": {
            "item_id": pair.item_id,
            "variant": pair.variant,
            "source": pair.source,
            "values": list(pair.values),
            "menu": list(pair.menu),
            "budget": layout.budget,
            "length": layout.length,
            "paired": pair.paired,
            "donor_dependent": sorted(varying),
            "decoys": list(pair.decoys),
        },
        "tokenizer": {
            "chat_template": renderer.chat,
            "bos_ids": list(renderer.bos_ids),
            "fingerprint": tokenizer_fingerprint(tokenizer),
        },
        "serving": engine.serving,
        "readout": readout.name,
        "arms": shown_arms,
    }


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether a served piece has the same token ids and positions in both members."""
    return a["ids"] == b["ids"] and a["positions"] == b["positions"]


# --- text view ---------------------------------------------------------------------------------------


def _block(title: str, text: str) -> list[str]:
    """A piece verbatim between fences (the text exactly: a final newline is the line break before
    the closing fence, which says when there is none), then its repr()."""
    ends = text.endswith("\n")
    return [
        f"--- {title}",
        "<<<",
        text[:-1] if ends else text,
        ">>>" if ends else ">>> (no final newline)",
        f"repr: {text!r}",
    ]


def render_text(shown: dict[str, Any]) -> str:
    item, tok = shown["item"], shown["tokenizer"]
    serving = shown["serving"] + (" (auto)" if shown["serving_requested"] == "auto" else "")
    lines = [
        f"matbench show: suite {shown['suite']}, item {item['index']} = {item['item_id']}"
        + (f" (variant {item['variant']})" if item["variant"] else ""),
        (
            f"model {shown['model']}: {'chat template' if tok['chat_template'] else 'no chat template (base model)'}, "
            f"BOS {tok['bos_ids'] or 'none'} (tokenizer {tok['fingerprint']}); serving {serving}; "
            f"readout {shown['readout']}"
        ),
        (
            f"donor pair: source event {item['source']} (position budget {item['budget']}); donor values A = "
            f"{item['values'][0]}, B = {item['values'][1]}; menu {', '.join(item['menu'])}; L = {item['length']}"
        ),
        "[A=B]: same token ids and positions in both members; [A!=B]: they differ (a donor-visible arm only)",
    ]
    for arm in shown["arms"]:
        a, b = arm["members"]
        served = ", ".join(str(i) for i in arm["served"]) or "none"
        flags = [f"{arm['encoding']} rows", "donor-visible" if arm["uses_source"] else "donor-hidden"]
        if arm["swapped"]:
            flags.append(f"events {', '.join(map(str, arm['swapped']))} take the other member's rows")
        if arm["query_at_end"]:
            flags.append("query at L")
        if arm["expected"]:
            flags.append(f"expected {arm['expected']}")
        lines += [
            "",
            f"=== arm {arm['name']}: header + events {served}; {'; '.join(flags)}",
            (
                f"donor values A = {arm['values'][0]}, B = {arm['values'][1]}; menu {', '.join(arm['menu'])}; "
                f"differs between members: {', '.join(arm['differs']) or 'nothing'}"
            ),
        ]
        for pa, pb in zip(a["pieces"], b["pieces"]):
            label = pa["piece"] + (f" ({pa['role']})" if pa["role"] else "")
            if _same(pa, pb):
                lines += _block(
                    f"{label} [A=B]: {pa['n_tokens']} tokens, positions {_ranges_text(pa['positions'])}"
                    + _rows_note(pa, pb),
                    pa["text"],
                )
                lines += _retokenize_note(pa)
                continue
            for p in (pa, pb):
                member = "A" if p is pa else "B"
                gap = (
                    f" ({_ranges_text(p['skipped_positions'])} unused: the source's budget is "
                    f"{shown['item']['budget']})"
                    if p["skipped_positions"]
                    else ""
                )
                lines += _block(
                    f"{label} [A!=B] member {member}: {p['n_tokens']} tokens, positions "
                    f"{_ranges_text(p['positions'])}{gap}",
                    p["text"],
                )
                lines += _retokenize_note(p)
        qa, qb = a["query"], b["query"]
        for q, member in ((qa, "[A=B]"),) if qa["ids"] == qb["ids"] else ((qa, "member A"), (qb, "member B")):
            lines += _block(f"query {member}: {q['n_tokens']} tokens", q["text"])
            lines += _retokenize_note(q)
            if q["parts"]:
                lines.append("query parts: " + "; ".join(f"{k.replace('_', ' ')} {v!r}" for k, v in q["parts"].items()))
        lines.append(f"kept rows ({shown['serving']} serving):")
        for m in (a, b):
            lines.append(f"  {m['member']} ({m['n_rows']} rows): {'; '.join(m['kept_positions'])}")
        lines.append("query start:")
        for m in (a, b):
            q = m["query"]
            where = f"cache slot {q['slot']}" + (
                f", mask coordinate {q['mask_coordinate']}" if q["mask_coordinate"] != q["slot"] else ""
            )
            lines.append(f"  {m['member']}: position {q['position']} = {q['rule']}; {where}")
    return "\n".join(lines) + "\n"


def _rows_note(pa: dict[str, Any], pb: dict[str, Any]) -> str:
    if pa["rows_from"] == "A" and pb["rows_from"] == "B":
        return ""
    return f"; rows: A's from {pa['rows_from']}, B's from {pb['rows_from']}"


def _retokenize_note(piece: dict[str, Any]) -> list[str]:
    if piece["retokenizes"]:
        return []
    return [
        (f"note: this text does not tokenize back to the same ids (the ids are what the model sees): {piece['ids']}")
    ]
