"""PairEngine: donor pairs through global prefill, sparse serving and readouts.

For each pair: one shared-prefix prefill of both members. Then every arm x member of every pair
in a batch is served together, once per serving mode for the probe (which gives the donor margin
shift for every readout) and once more per generating readout (short, trace).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from matbench.engine.cache import ANCHOR_WINDOW, EventCache, isolated_cache, spliced_cache, text_cache
from matbench.engine.decode import greedy_decode
from matbench.engine.encodings import Encoding, encode_many
from matbench.engine.layout import PairLayout, layout_pairs
from matbench.engine.memory import token_groups
from matbench.engine.policies import ServingPolicy
from matbench.engine.policies.oracle import OracleEvents
from matbench.engine.policies.setting import PolicySetting, setting_for
from matbench.engine.prefixes import PrefixStore, shared_length, token_arrays, worth_reusing
from matbench.engine.probe import ProbeScorer, batched_log_probs, first_token_answers, first_token_ids
from matbench.engine.render import Renderer
from matbench.engine.runtime import ModelRunner
from matbench.engine.selection import governed, select
from matbench.engine.serving import SERVING, ServeRequest
from matbench.errors import MatbenchError
from matbench.models.loading import LoadedModel
from matbench.protocol.margins import donor_shift
from matbench.protocol.outcomes import outcome
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import READOUTS, Readout
from matbench.protocol.records import ArmRecord, PairRecord, Selection


@dataclass
class PairEngine:
    """Runs donor pairs for one model; `serving` and `readout` are the defaults of `score`."""

    loaded: LoadedModel
    serving: str = "auto"  # "compact", "native", or "auto" (native where sliding windows exist)
    readout: str = "probe"
    chunk_size: int | None = None
    # Which rows are kept (matbench.engine.policies); the oracle is the suite's own served events.
    policy: ServingPolicy = field(default_factory=OracleEvents)
    # Under a policy other than the oracle (matbench.engine.selection): whether the source's rows
    # may be kept ("natural") or are always dropped ("evicted"), and whose picks both members are
    # served ("a" or "b").
    source: str = "natural"
    kept_from: str = "a"
    runner: ModelRunner = field(init=False)
    renderer: Renderer = field(init=False)
    _scorers: dict = field(init=False, default_factory=dict)
    _first_ids: dict = field(init=False, default_factory=dict)
    _last_prefill: tuple | None = field(init=False, default=None)
    _prefixes: PrefixStore = field(init=False, default_factory=PrefixStore)  # members to start from
    _layouts: dict = field(init=False, default_factory=dict)  # prefetched, by pair
    # Tokens (pairs x longest member) per batched prefill forward: bounds activation memory
    # (long dialogs prefill alone); None = 65,536 on a GPU, 8,192 on the CPU.
    prefill_batch_tokens: int | None = None
    # Start a member from the rows of an earlier member it begins with (matbench.engine.prefixes);
    # None = on a GPU. Off, every member is prefilled whole, as a one-pair run does.
    share_prefixes: bool | None = None
    # Build the isolated and text encodings of a whole batch in a few batched forwards
    # (matbench.engine.encodings); None = on a GPU. Off, one forward per encoded event.
    batch_encodings: bool | None = None

    def __post_init__(self) -> None:
        on_gpu = self.loaded.device.startswith("cuda")
        if self.share_prefixes is None:
            self.share_prefixes = on_gpu
        if self.batch_encodings is None:
            self.batch_encodings = on_gpu
        if self.prefill_batch_tokens is None:
            self.prefill_batch_tokens = 65536 if self.loaded.device.startswith("cuda") else 8192
        self.runner = ModelRunner(self.loaded.model, self.loaded.text_config, decode_graphs=self.loaded.decode_graphs)
        self.renderer = Renderer(self.loaded.tokenizer)
        self.serving = self.resolve_serving(self.serving)
        self.setting = PolicySetting(self.policy, self.source, self.kept_from)  # refuses a bad mode in one line
        READOUTS.get(self.readout)
        self.probe_readout: Readout = READOUTS.get("probe")
        eos = self.loaded.tokenizer.eos_token_id
        self.stop_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        gen_cfg = getattr(self.loaded.model, "generation_config", None)
        gen_eos = getattr(gen_cfg, "eos_token_id", None)
        self.stop_ids |= set(gen_eos if isinstance(gen_eos, list) else [gen_eos]) - {None}

    def scorer(self, menu: tuple[str, ...]) -> ProbeScorer:
        if menu not in self._scorers:
            self._scorers[menu] = ProbeScorer.for_menu(menu, self.renderer.ids)
        return self._scorers[menu]

    def first_ids(self, menu: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        """The logit readout's candidate token ids for `menu`, tokenized once per menu."""
        if menu not in self._first_ids:
            self._first_ids[menu] = first_token_ids(menu, self.renderer.ids)
        return self._first_ids[menu]

    def query_ids(self, pair: DonorPair, arm: Arm, readout: Readout) -> tuple[int, ...]:
        return tuple(self.renderer.ids(self.renderer.arm_query(pair, arm, readout)))

    def prepare(self, pair: DonorPair) -> tuple[PairLayout, tuple[EventCache, EventCache]]:
        _, layout, caches = self.prepare_many([pair])[0]
        return layout, caches

    def prepare_many(self, pairs: list[DonorPair]) -> list[tuple[DonorPair, PairLayout, tuple[EventCache, EventCache]]]:
        """Layouts and global prefills of `pairs`: one batched prefill of the distinct token
        layouts (`matbench.engine.prefill`). Items over one long dialog (harvest) share their
        layout, within the group and with the last prefill of the previous group; a member that
        begins with a member prefilled before (the dialog with a turn appended) prefills only
        what follows it (`matbench.engine.prefixes`)."""
        from matbench.engine.prefill import prefill_pairs

        layouts = self.prefetch_layouts(pairs)  # those not laid out ahead, in one batch
        for p in pairs:
            self._layouts.pop(p, None)
        keys = [tuple((m.input_ids, m.positions) for m in lay.members) for lay in layouts]
        cached = {self._last_prefill[0]: self._last_prefill[1]} if self._last_prefill else {}
        todo = {}
        for key, lay in zip(keys, layouts):
            if key not in cached and key not in todo:
                todo[key] = lay
        waves = self._waves(list(todo.items())) if self.share_prefixes else [list(todo.items())]
        for wave in waves:
            for group in self._prefill_groups(wave):
                layouts_of = [g for _, g in group]
                store = self._prefixes if self.share_prefixes else None
                prefilled = prefill_pairs(self.runner, layouts_of, self.chunk_size, store)
                cached.update(zip([k for k, _ in group], prefilled))
        self._prefixes.trim()  # the last prefilled pair's members stay
        if keys:
            self._last_prefill = (keys[-1], cached[keys[-1]])
        return [(p, lay, cached[key]) for p, lay, key in zip(pairs, layouts, keys)]

    def _waves(self, items: list[tuple[Any, PairLayout]]) -> list[list[tuple[Any, PairLayout]]]:
        """`items` in rounds of prefill: an item whose first member shares a longer prefix with an
        earlier item's first member than with any stored member waits for the round after that
        item's, so it can start from its rows."""
        firsts = [token_arrays(lay.members[0].input_ids, lay.members[0].positions) for _, lay in items]
        rounds: list[int] = []
        for i, first in enumerate(firsts):
            _, best = self._prefixes.best(*first)
            level = 0
            for j in range(i):
                shared = shared_length(firsts[j], first)
                if shared > best and worth_reusing(shared, len(first[0])):
                    best, level = shared, rounds[j] + 1
            rounds.append(level)
        return [[item for item, r in zip(items, rounds) if r == level] for level in range(max(rounds, default=-1) + 1)]

    def prefetch_layouts(self, pairs: list[DonorPair]) -> list[PairLayout]:
        """Lay out `pairs` (render and tokenize, on the CPU) for a later `prepare_many`, and return
        them. Called right after `prepare_many` has queued a batch's prefill, this runs while the
        GPU computes instead of leaving it idle before the next batch."""
        new = list(dict.fromkeys(p for p in pairs if p not in self._layouts))
        if new:  # one batch: the piecewise checks run on all of the tokenizer's threads
            self._layouts.update(zip(new, layout_pairs(new, self.renderer)))
        return [self._layouts[p] for p in pairs]

    @property
    def batch_tokens(self) -> int:
        """`prefill_batch_tokens`, which construction resolved (None there means the device's default)."""
        if self.prefill_batch_tokens is None:
            raise MatbenchError("PairEngine.prefill_batch_tokens is None after construction: set a token count")
        return self.prefill_batch_tokens

    def release_memory(self) -> None:
        """Drop the remembered prefill and return cached accelerator memory (after an OOM)."""
        self._last_prefill = None
        self._prefixes.clear()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _prefill_groups(self, items: list[tuple[Any, PairLayout]]) -> list[list[tuple[Any, PairLayout]]]:
        """Consecutive layouts batched while pairs x longest member stays within the budget."""
        return token_groups(items, lambda item: max(len(m.input_ids) for m in item[1].members), self.batch_tokens)

    def selections(
        self,
        pair: DonorPair,
        layout: PairLayout,
        caches,
        setting: PolicySetting | None = None,
        memo: dict | None = None,
    ) -> dict[str, tuple[tuple, tuple, Selection]]:
        """Per arm the setting's policy governs (none under the oracle; default: the engine's
        own setting): both members' served slots, their per-head choice (or None) and what the
        selection did, under the engine's donor discipline (`matbench.engine.selection`). `memo`
        is shared by every setting of one pair (a member is scored once per policy)."""
        setting = setting or self.setting
        if setting.policy.is_oracle:
            return {}
        memo = {} if memo is None else memo
        # A question-aware policy scores with the arm's question as the probe readout asks it.
        return {
            arm.name: select(
                setting.policy,
                pair,
                layout,
                caches,
                arm,
                self.runner.head_shape,
                runner=self.runner,
                source=setting.source,
                kept_from=setting.kept_from,
                memo=memo,
                question=self.query_ids(pair, arm, self.probe_readout) if setting.policy.question_aware else (),
            )
            for arm in pair.arms
            if governed(pair, arm)
        }

    def merged_caches(self, policy: ServingPolicy, chosen: dict, caches) -> dict[str, tuple[EventCache, EventCache]]:
        """Per governed arm, both members' caches after a merging policy folded the rows each head
        dropped into those it serves (`ServingPolicy.merge`); empty for a policy that only drops."""
        import numpy as np

        if not policy.merges:  # no [L, H_kv, T] masks built for the policies that only drop rows
            return {}
        out: dict[str, tuple[EventCache, EventCache]] = {}
        made: dict[tuple, EventCache] = {}  # the governed arms of a pair share one selection
        layers, kv_heads = self.runner.head_shape
        for name, (slots, heads, _) in chosen.items():
            pair_of = []
            for m in (0, 1):
                key = (m, slots[m], heads[m].tobytes() if heads[m] is not None else None)
                if key not in made:
                    kept = np.zeros((layers, kv_heads, caches[m].positions.shape[0]), dtype=bool)
                    kept[:, :, list(slots[m])] = True if heads[m] is None else heads[m]
                    folded = policy.merge(caches[m], kept)
                    if folded is None:
                        raise MatbenchError(f"policy {policy.spec!r} sets `merges` but its merge() returned no cache")
                    made[key] = folded
                pair_of.append(made[key])
            out[name] = (pair_of[0], pair_of[1])
        return out

    def setting_of(self, combo: tuple) -> PolicySetting:
        """A combo's setting: `(readout, serving)` is the engine's own, `(readout, serving, policy,
        source, kept_from)` names one (several policies served from one prefill)."""
        return self.setting if len(combo) == 2 else setting_for(*combo[2:])

    def requests(self, pair: DonorPair, caches, readout: Readout, derived=None, chosen=None) -> list[ServeRequest]:
        requests = []
        for arm in pair.arms:
            ids = self.query_ids(pair, arm, readout)  # identical for both members
            arm_caches = (derived or {}).get(arm.name, caches)
            slots, heads, _ = (chosen or {}).get(arm.name, ((None, None), (None, None), None))
            requests += [
                ServeRequest(
                    arm_caches[m],
                    arm.served,
                    ids,
                    arm_caches[m].length if arm.query_at_end else None,
                    slots[m],
                    torch.from_numpy(heads[m]) if heads[m] is not None else None,
                )
                for m in (0, 1)
            ]
        return requests

    def derived_caches(self, pair: DonorPair, layout: PairLayout, caches) -> dict[str, tuple[EventCache, EventCache]]:
        """Per arm with a non-joint encoding, the caches its rows come from (isolated or text
        re-encodings, or rows swapped across members), built one arm at a time (`derived_many`)."""
        return self.derived_many([(pair, layout, caches)], batched=False)[0]

    def derived_many(
        self, items: list[tuple[DonorPair, PairLayout, Any]], batched: bool | None = None
    ) -> list[dict[str, tuple[EventCache, EventCache]]]:
        """Per item of a batch and per arm with a non-joint encoding, the caches its rows come
        from: rows swapped across members, or the arm's re-encoding, one per joint cache, encoding
        and served set (an arm that serves no donor-dependent event gets one cache for both
        members: bit-identical rows). `batched` (default `batch_encodings`): every re-encoding of
        the batch in a few forwards as compact caches (`matbench.engine.encodings`); else one
        forward per event, on a copy of the joint cache (`cache.isolated_cache`, `text_cache`)."""
        wanted: list[Encoding] = []
        made: dict[tuple, tuple[int, int]] = {}
        plans: list[dict[str, tuple[int, int]]] = []
        for pair, layout, caches in items:
            plan = {}
            for arm in pair.arms:
                if arm.swapped or arm.encoding == "joint":
                    continue
                key = (
                    arm.encoding,
                    tuple(sorted(arm.served)),
                    id(caches[0]),
                    id(caches[1]) if arm.uses_source else None,
                )
                if key not in made:
                    wanted.append(Encoding(arm.encoding, caches[0], layout.members[0], arm.served))
                    if arm.uses_source:  # the second member's own rows differ
                        wanted.append(Encoding(arm.encoding, caches[1], layout.members[1], arm.served))
                    made[key] = (len(wanted) - 2 if arm.uses_source else len(wanted) - 1, len(wanted) - 1)
                plan[arm.name] = made[key]
            plans.append(plan)
        if self.batch_encodings if batched is None else batched:
            built = encode_many(self.runner, wanted, self.batch_tokens, self.chunk_size)
        else:
            built = [self._encode_one(w) for w in wanted]
        return [
            {**self._swapped(pair, layout, caches), **{name: (built[a], built[b]) for name, (a, b) in plan.items()}}
            for (pair, layout, caches), plan in zip(items, plans)
        ]

    def _encode_one(self, w: Encoding) -> EventCache:
        build: dict[str, Callable[..., EventCache]] = {
            "isolated": isolated_cache,
            "headless": partial(isolated_cache, alone=True),
            "headless_runs": partial(isolated_cache, alone=True, runs=True),
            "anchored": partial(isolated_cache, anchor=ANCHOR_WINDOW),
            "text": text_cache,
        }
        return build[w.encoding](self.runner, w.cache, w.member, w.served, self.chunk_size)

    @staticmethod
    def _swapped(pair: DonorPair, layout: PairLayout, caches) -> dict[str, tuple[EventCache, EventCache]]:
        """Per arm with rows swapped across members, each member's cache with the other's rows."""
        a, b = layout.members
        return {
            arm.name: (
                spliced_cache(caches[0], a, caches[1], b, arm.swapped),
                spliced_cache(caches[1], b, caches[0], a, arm.swapped),
            )
            for arm in pair.arms
            if arm.swapped
        }

    def run_pair(self, pair: DonorPair) -> PairRecord:
        layout, caches = self.prepare(pair)
        return self.score(pair, layout, caches)

    def resolve_serving(self, serving: str) -> str:
        if serving == "auto":
            return "native" if self.loaded.has_sliding_layers else "compact"
        if serving not in SERVING:
            raise MatbenchError(f"unknown serving mode {serving!r}; use compact, native or auto")
        return serving

    def score(self, pair: DonorPair, layout: PairLayout, caches) -> PairRecord:
        """Per-item record for the engine's own readout and serving mode."""
        combo = (self.readout, self.serving)
        return self.score_many([(pair, layout, caches)], [combo])[0][combo]

    def score_many(
        self, items: list[tuple[DonorPair, PairLayout, Any]], combos: list[tuple]
    ) -> list[dict[tuple, PairRecord]]:
        """One record per item and combo, (readout, serving) or (readout, serving, policy,
        source, kept_from) (`setting_of`), serving every arm x member of every item in one batch.
        The probe (and with it the donor shift) runs once per serving mode and setting and is
        shared by every readout; greedy decoding advances all rows together."""
        derived = self.derived_many(items)
        memos: list[dict] = [{} for _ in items]
        by_setting: dict[PolicySetting, list[dict]] = {}
        merged: dict[PolicySetting, list[dict]] = {}  # a merging policy's caches, per governed arm
        for combo in combos:
            setting = self.setting_of(combo)
            if setting not in by_setting:
                by_setting[setting] = [
                    self.selections(pair, layout, caches, setting, memo)
                    for (pair, layout, caches), memo in zip(items, memos)
                ]
                merged[setting] = [
                    {**d, **self.merged_caches(setting.policy, c, caches)}
                    for (_, _, caches), d, c in zip(items, derived, by_setting[setting])
                ]
        spans, offset = [], 0
        for pair, _, _ in items:
            spans.append((offset, offset + 2 * len(pair.arms)))
            offset += 2 * len(pair.arms)
        probes: dict[tuple, list[tuple[list[torch.Tensor], list[str]]]] = {}
        shared: dict[tuple, torch.Tensor] = {}  # logits rows of arms no policy governs (`_logits`)
        out: list[dict[tuple, PairRecord]] = [{} for _ in items]
        for combo in combos:
            readout_name, serving = combo[:2]
            setting = self.setting_of(combo)
            chosen, arm_caches = by_setting[setting], merged[setting]
            serve = SERVING[serving]
            if (serving, setting) not in probes:
                logits = self._logits(serving, items, self.probe_readout, arm_caches, chosen, shared)
                probes[serving, setting] = self._probe([pair for pair, _, _ in items], logits)
            readout = READOUTS.get(readout_name)
            texts: list[list[str] | None] = [None] * len(items)
            firsts: list[list[str] | None] = [None] * len(items)
            if readout.first_token:
                logits = self._logits(serving, items, readout, arm_caches, chosen, shared)
                firsts = [
                    [
                        a
                        for j, arm in enumerate(pair.arms)
                        for a in first_token_answers(
                            logits[lo + 2 * j : lo + 2 * j + 2], pair.arm_menu(arm), self.first_ids(pair.arm_menu(arm))
                        )
                    ]
                    for (pair, _, _), (lo, _) in zip(items, spans)
                ]
            if readout.max_new_tokens:
                # Each arm answers within its question's own budget where the paper set one (8
                # tokens for recognition); rows decode independently, so cutting a row's tokens at
                # its budget is exactly stopping it there.
                limits = [
                    arm.budget or readout.max_new_tokens for pair, _, _ in items for arm in pair.arms for _ in (0, 1)
                ]
                batch, first = serve(
                    self.runner, self._batch_requests(items, readout, arm_caches, chosen), reserve=max(limits)
                )
                generated = greedy_decode(self.runner, batch, first, max(limits), self.stop_ids)
                decoded = [self.renderer.decode(g[:n]) for g, n in zip(generated, limits)]
                texts = [decoded[lo:hi] for lo, hi in spans]
            for k, (pair, layout, _) in enumerate(items):
                cand, probe_answers = probes[serving, setting][k]
                first_k, texts_k = firsts[k], texts[k]
                answers: Sequence[str | None] = probe_answers
                paper: Sequence[str | None] | None = None
                if first_k is not None:  # the paper's own readout: its reading is the answer itself
                    answers = paper = first_k
                if texts_k is not None:
                    menus = [pair.arm_menu(pair.arms[j // 2]) for j in range(len(texts_k))]
                    answers = [readout.parse(t, menu, pair.registers) for t, menu in zip(texts_k, menus)]
                    paper = [readout.paper_parse(t, menu) for t, menu in zip(texts_k, menus)]
                out[k][combo] = self._record(pair, layout, answers, probe_answers, cand, texts_k, chosen[k], paper)
        return out

    def _batch_requests(self, items, readout: Readout, derived, chosen) -> list[ServeRequest]:
        return [
            r
            for (pair, _, caches), d, c in zip(items, derived, chosen)
            for r in self.requests(pair, caches, readout, d, c)
        ]

    def _logits(self, serving: str, items, readout: Readout, derived, chosen, shared: dict) -> torch.Tensor:
        """`[rows, vocab]`: the last-token logits of every request row of `items` (per item arm-major,
        member-minor) served `serving`. A row of an arm the setting's policy does not govern is the
        same request under every setting of the batch (the suite's own rows, the same caches), so
        it is served once per serving mode and readout and kept in `shared`: an eviction audit's
        32 settings of harvest, one governed arm of five, served 320 rows a pair where 72 do."""
        requests = self._batch_requests(items, readout, derived, chosen)
        keys = [
            None if arm.name in c else (serving, readout.name, k, arm.name, m)
            for k, ((pair, _, _), c) in enumerate(zip(items, chosen))
            for arm in pair.arms
            for m in (0, 1)
        ]
        todo = [i for i, key in enumerate(keys) if key is None or key not in shared]
        fresh: dict[int, torch.Tensor] = {}
        if todo:
            _, logits = SERVING[serving](self.runner, [requests[i] for i in todo])
            fresh = dict(zip(todo, logits))
            shared.update((keys[i], fresh[i]) for i in todo if keys[i] is not None)
        return torch.stack([fresh[i] if i in fresh else shared[keys[i]] for i in range(len(requests))])

    def _probe(self, pairs: list[DonorPair], logits: torch.Tensor) -> list[tuple[list[torch.Tensor], list[str]]]:
        """Per pair, per request row (arm-major, member-minor; `logits` holds the pairs' rows in
        order): candidate log-probs over the arm's menu, and the probe's answer."""
        scorers = [self.scorer(pair.arm_menu(arm)) for pair in pairs for arm in pair.arms for _ in (0, 1)]
        cands = batched_log_probs(logits, scorers)
        out, row = [], 0
        for pair in pairs:
            rows = cands[row : row + 2 * len(pair.arms)]
            answers = [scorers[row + k].answers(c[None])[0] for k, c in enumerate(rows)]
            out.append((rows, answers))
            row += len(rows)
        return out

    @staticmethod
    def _record(pair, layout, answers, probe_answers, cand, texts, chosen, paper=None) -> PairRecord:
        arms = {}
        for k, arm in enumerate(pair.arms):
            a, b = 2 * k, 2 * k + 1
            menu, values = pair.arm_menu(arm), pair.arm_values(arm)
            arms[arm.name] = ArmRecord(
                answers=(answers[a], answers[b]),
                outcome=outcome((answers[a], answers[b]), values),
                probe_answers=(probe_answers[a], probe_answers[b]),
                probe_logp=(tuple(cand[a].tolist()), tuple(cand[b].tolist())),
                shift=donor_shift(cand[a].numpy(), cand[b].numpy(), menu, values),
                menu=tuple(menu) if arm.menu else None,
                values=tuple(values) if arm.menu or arm.values else None,
                expected=arm.expected,
                texts=(texts[a], texts[b]) if texts is not None else None,
                paper_answers=(paper[a], paper[b]) if paper is not None else None,
                selection=chosen[arm.name][2] if arm.name in chosen else None,
            )
        return PairRecord(
            item_id=pair.item_id,
            variant=pair.variant,
            values=pair.values,
            menu=pair.menu,
            budget=layout.budget,
            length=layout.length,
            n_tokens=(len(layout.members[0].input_ids), len(layout.members[1].input_ids)),
            arms=arms,
        )


def probe_logits(
    engine: PairEngine, pair: DonorPair, caches, arm: Arm, members=(0, 1), serving: str | None = None, **kw
) -> torch.Tensor:
    """Probe logits of `arm` for the given members (used by the gates), from the joint prefill."""
    return probe_logits_arms(engine, pair, caches, [arm], members, serving, **kw)[0]


def probe_logits_arms(
    engine: PairEngine,
    pair: DonorPair,
    caches,
    arms: list[Arm],
    members=(0, 1),
    serving: str | None = None,
    caches_for=None,
    **kw,
) -> list[torch.Tensor]:
    """`probe_logits` of several arms, served together (the gates): as many arms per forward as
    keep the batch's rows within the engine's prefill token budget (members x L rows per arm at
    most), so a long dialog still serves one arm at a time. `caches_for(arm)`, when given, makes
    the caches an arm is served from (e.g. with noise in its dropped rows), one batch at a time."""
    per_batch = max(1, engine.batch_tokens // max(1, len(members) * max(c.length for c in caches)))
    out: list[torch.Tensor] = []
    for start in range(0, len(arms), per_batch):
        chunk = arms[start : start + per_batch]
        reqs = []
        for arm in chunk:
            ids = engine.query_ids(pair, arm, engine.probe_readout)
            served = caches_for(arm) if caches_for is not None else caches
            reqs += [ServeRequest(served[m], arm.served, ids) for m in members]
        _, logits = SERVING[serving or engine.serving](engine.runner, reqs, **kw)
        out += list(logits.split(len(members)))
    return out
