"""`matbench show`: what it prints is what the engine lays out and serves, piece by piece, without
loading any weights; bad input is one line."""

from __future__ import annotations

import json

import pytest

from matbench.cli import main
from matbench.data_gen import SUITES
from matbench.engine.layout import layout_pair
from matbench.engine.pair_engine import PairEngine
from matbench.engine.render import Renderer
from matbench.engine.serving import SERVING
from matbench.models.loading import load_tokenizer, tokenizer_fingerprint
from matbench.protocol.readouts import READOUTS


def run_cli(args, capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def show_json(capsys, *args) -> dict:
    code, out, err = run_cli(["show", *args, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("matbench: error: ")
    return lines[0]


def expand(runs) -> list[int]:
    return [p for a, b in runs for p in range(a, b + 1)]


def _without_weights(tmp_path_factory, loaded, name: str):
    path = tmp_path_factory.mktemp(name)
    loaded.model.config.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def config_only_dir(tmp_path_factory, tiny_llama):
    """The tiny Llama's config and tokenizer, and no weights: all `show` needs."""
    return _without_weights(tmp_path_factory, tiny_llama, "tiny-llama-no-weights")


@pytest.fixture(scope="module")
def gemma_dir(tmp_path_factory, tiny_gemma):
    """A config with sliding-window layers (auto serving is native for it), without weights."""
    return _without_weights(tmp_path_factory, tiny_gemma, "tiny-gemma-no-weights")


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_pieces_are_the_engine_layout(capsys, config_only_dir, tiny_llama, serving):
    """Token counts, ids and kept positions are the layout's; the query starts at max kept position
    + 1 (compact) or at L (native), at the slot after the kept rows."""
    shown = show_json(capsys, "--model", str(config_only_dir), "--suite", "discovery", "--serving", serving)
    pair = SUITES.get("discovery").generate(0)[0]
    engine = PairEngine(tiny_llama)
    layout = layout_pair(pair, Renderer(tiny_llama.tokenizer))
    assert shown["item"]["item_id"] == pair.item_id and shown["serving"] == serving
    assert shown["item"]["length"] == layout.length and shown["item"]["budget"] == layout.budget
    assert [a["name"] for a in shown["arms"]] == [a.name for a in pair.arms]
    for arm, seen in zip(pair.arms, shown["arms"]):
        for m, member in enumerate(layout.members):
            got = seen["members"][m]
            spans = [member.header_span] + [member.event_spans[i] for i in sorted(arm.served)]
            assert [p["event"] for p in got["pieces"]] == [None, *sorted(arm.served)]
            kept = []
            for piece, (lo, hi) in zip(got["pieces"], spans):
                assert piece["n_tokens"] == hi - lo
                assert piece["ids"] == list(member.input_ids[lo:hi])
                assert expand(piece["positions"]) == list(member.positions[lo:hi])
                kept += member.positions[lo:hi]
            assert got["n_rows"] == len(kept)
            query = got["query"]
            assert query["ids"] == list(engine.query_ids(pair, arm, READOUTS.get("probe")))
            assert query["n_tokens"] == len(query["ids"])
            assert query["slot"] == len(kept)
            if serving == "compact":
                assert query["position"] == max(kept) + 1 and query["mask_coordinate"] == len(kept)
            else:
                assert query["position"] == layout.length == query["mask_coordinate"]


@pytest.mark.parametrize(
    "suite,serving", [("access", "compact"), ("access", "native"), ("landing", "compact"), ("programming", "compact")]
)
def test_show_agrees_with_what_the_engine_serves(capsys, tiny_dir, tiny_llama, suite, serving):
    """Against the real engine on the same model: every arm's kept positions (text re-encodings,
    isolated and swapped rows, fixed query positions included) and where serving puts the query."""
    shown = show_json(capsys, "--model", str(tiny_dir), "--suite", suite, "--serving", serving, "--readout", "short")
    pair = SUITES.get(suite).generate(0)[0]
    engine = PairEngine(tiny_llama, serving=serving)
    layout, caches = engine.prepare(pair)
    readout = READOUTS.get("short")
    requests = engine.requests(pair, caches, readout, engine.derived_caches(pair, layout, caches))
    for k, seen in enumerate(shown["arms"]):
        for m in (0, 1):
            request, got = requests[2 * k + m], seen["members"][m]
            kept = request.kept_slots()
            assert [p for piece in got["pieces"] for p in expand(piece["positions"])] == request.cache.positions[
                kept
            ].tolist()
            assert got["query"]["ids"] == list(request.query_ids)
            batch, _ = SERVING[serving](engine.runner, [request])
            n = len(request.query_ids)
            assert got["query"]["position"] == int(batch.next_position[0]) - n
            assert got["query"]["mask_coordinate"] == int(batch.next_coord[0]) - n
            assert got["query"]["slot"] == len(kept)


def test_donor_hidden_arms_serve_identical_text_and_donor_visible_arms_mark_the_source(capsys, config_only_dir):
    shown = show_json(capsys, "--model", str(config_only_dir), "--readout", "trace")
    pair = SUITES.get("discovery").generate(0)[0]
    for arm, seen in zip(pair.arms, shown["arms"]):
        a, b = seen["members"]
        assert (a["donor_value"], b["donor_value"]) == pair.values
        if arm.uses_source:
            assert f"event {pair.source}" in seen["differs"]
            source = next(p for p in a["pieces"] if p["event"] == pair.source)
            assert source["role"] == "source" and pair.values[0] in source["text"]
            continue
        assert seen["differs"] == []
        assert [p["text"] for p in a["pieces"]] == [p["text"] for p in b["pieces"]]
        assert a["query"]["text"] == b["query"]["text"]
        assert a["kept_positions"] == b["kept_positions"]
    code, out, _ = run_cli(["show", "--model", str(config_only_dir), "--arm", "root"], capsys)
    assert code == 0 and "[A!=B] member" not in out and "differs between members: nothing" in out
    code, out, _ = run_cli(["show", "--model", str(config_only_dir), "--arm", "txt"], capsys)
    assert code == 0
    for member in "AB":
        assert f"event {pair.source} (source) [A!=B] member {member}" in out
    assert f"donor values A = {pair.values[0]}, B = {pair.values[1]}" in out


def test_text_view_prints_every_piece_verbatim_with_its_repr(capsys, config_only_dir):
    shown = show_json(capsys, "--model", str(config_only_dir), "--arm", "chain", "--readout", "trace")
    code, out, _ = run_cli(["show", "--model", str(config_only_dir), "--arm", "chain", "--readout", "trace"], capsys)
    assert code == 0
    member = shown["arms"][0]["members"][0]
    for piece in [*member["pieces"], member["query"]]:
        text = piece["text"]
        verbatim = "<<<\n" + (text if text.endswith("\n") else text + "\n") + ">>>"
        assert verbatim in out and f"repr: {text!r}" in out
    for line in member["kept_positions"]:
        assert line in out
    event = member["pieces"][-1]
    a, b = event["positions"][0]
    assert f"event {event['event']}: {a}-{b}" in out
    q = member["query"]
    assert f"A: position {q['position']} = max kept position {q['position'] - 1} + 1; cache slot {q['slot']}" in out


def test_auto_serving_follows_sliding_windows_and_items_by_id(capsys, gemma_dir):
    pair = SUITES.get("discovery").generate(0, 3)[2]
    shown = show_json(capsys, "--model", str(gemma_dir), "--item", pair.item_id, "--limit", "3", "--arm", "control")
    assert shown["serving"] == "native" and shown["serving_requested"] == "auto"
    assert shown["item"] == {**shown["item"], "index": 2, "item_id": pair.item_id}
    (arm,) = shown["arms"]
    assert arm["name"] == "control"
    assert all(m["query"]["position"] == shown["item"]["length"] for m in arm["members"])


def test_unknown_arm_lists_the_valid_arms(capsys, config_only_dir):
    code, _, err = run_cli(["show", "--model", str(config_only_dir), "--arm", "rot"], capsys)
    line = one_line_error(err)
    assert code == 2 and "no arm 'rot'" in line and "valid arms: root, chain, txt, control" in line


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--item", "5", "--limit", "3"], "item index 5 is out of range: suite discovery has 3 rows (0-2)"),
        (["--item", "-1"], "item index -1 is out of range"),
        (["--item", "discovery-nope"], "has no item 'discovery-nope'"),
        (["--suite", "discovry"], "unknown suite 'discovry'. Did you mean 'discovery'?"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--dataset", "suites", "--seed", "3"], "--seed applies to generated suites"),
    ],
)
def test_bad_input_is_one_line(capsys, config_only_dir, args, expected):
    code, _, err = run_cli(["show", "--model", str(config_only_dir), *args], capsys)
    assert code == 2 and expected in one_line_error(err)


def test_unknown_model_is_one_line(capsys):
    code, _, err = run_cli(["show", "--model", "smolm2-135m"], capsys)
    assert code == 2 and "did you mean the offline alias 'smollm2-135m'?" in one_line_error(err)


def test_smollm2_show_is_what_eval_serves(capsys, smollm2):
    """The offline model: the tokenizer-only load is the one eval uses, and the trace query, pieces and
    positions equal the loaded engine's."""
    shown = show_json(capsys, "--model", "smollm2-135m", "--readout", "trace")
    assert shown["tokenizer"]["fingerprint"] == tokenizer_fingerprint(smollm2.tokenizer)
    assert shown["serving"] == "compact" and shown["tokenizer"]["chat_template"]
    pair = SUITES.get("discovery").generate(0)[0]
    engine = PairEngine(smollm2, serving="compact")
    layout = layout_pair(pair, engine.renderer)
    for arm, seen in zip(pair.arms, shown["arms"]):
        ids = list(engine.query_ids(pair, arm, READOUTS.get("trace")))
        for m, member in enumerate(layout.members):
            got = seen["members"][m]
            assert got["query"]["ids"] == ids and got["query"]["retokenizes"]
            assert got["query"]["parts"]["question"] == arm.question
            served = [member.header_span] + [member.event_spans[i] for i in sorted(arm.served)]
            assert [p["n_tokens"] for p in got["pieces"]] == [hi - lo for lo, hi in served]
            assert [p for piece in got["pieces"] for p in expand(piece["positions"])] == [
                member.positions[j] for lo, hi in served for j in range(lo, hi)
            ]


def test_tokenizer_from_the_gguf_file_when_not_yet_converted(monkeypatch, tmp_path, smollm2):
    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path))  # no dequantised copy here
    tok = load_tokenizer("smollm2-135m")
    assert tokenizer_fingerprint(tok) == tokenizer_fingerprint(smollm2.tokenizer)
    assert tok.chat_template == smollm2.tokenizer.chat_template
    text = "<step 9>\naction: reg_op()\nobservation: register LAMBDA set to state OFFLINE\n\n\nQuestion: x?"
    assert tok(text, add_special_tokens=False).input_ids == smollm2.tokenizer(text, add_special_tokens=False).input_ids
    assert not list(tmp_path.iterdir())  # nothing converted or written


def test_show_builds_no_weights(config_only_dir):
    from matbench.commands.show import weightless_engine
    from matbench.errors import MatbenchError

    engine = weightless_engine(str(config_only_dir))
    assert list(engine.loaded.model.parameters()) == []
    with pytest.raises(MatbenchError, match="loads no weights"):
        engine.loaded.model(input_ids=None)


def test_a_suite_read_from_free_text_is_shown_under_its_own_readout(capsys, config_only_dir, short_dialogs):
    from tests.helpers import dialog_args

    sources = dialog_args(short_dialogs)
    shown = show_json(
        capsys, "--model", str(config_only_dir), "--suite", "harvest_freeform", "--item", "1", "--arm", "iso", *sources
    )
    assert shown["readout"] == "short" and shown["arms"][0]["name"] == "iso"
    assert shown["arms"][0]["encoding"] == "headless_runs"
    query = shown["arms"][0]["members"][0]["query"]["text"]
    assert "Answer with as few words as possible (a name, a date, a short phrase)." in query


def test_paper_seed_shows_the_papers_own_item(capsys, config_only_dir):
    """`--paper-seed 3900 --item 2`: kv_causal's third item, whose event texts are the ones the
    discovery parity fixture recorded from the paper's script."""
    from tests.parity.compare import EVENT, fixture

    shown = show_json(capsys, "--model", str(config_only_dir), "--paper-seed", "3900", "--item", "2", "--arm", "txt")
    assert shown["item"]["item_id"] == "paper-kv_causal-s3900-00002"
    recorded = fixture("discovery")["items"][2]["prefill"]
    for member, value in zip(shown["arms"][0]["members"], ("ONLINE", "OFFLINE"), strict=True):
        events = [p["text"] for p in member["pieces"] if p["piece"].startswith("event")]
        paper = [
            f"<step {int(step)}>\naction: reg_op()\nobservation: {body}\n"
            for step, body in EVENT.findall("".join(t for t, _ in recorded[value]))
        ]
        assert len(events) == 24 and events == paper


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--suite", "update", "--paper-seed", "1"],
            (
                "does not reproduce the paper's draws for suite update (it does for binding_capacity, discovery, "
                "edge_swap, orthogonal_bits, recompute_matrix, sink_dependency, sliding_window, trigger, var_tracking)"
            ),
        ),
        (["--paper-seed", "1", "--seed", "2"], "--paper-seed renders the paper script's own items"),
    ],
)
def test_paper_seed_refusals_are_one_line(capsys, config_only_dir, args, expected):
    code, _, err = run_cli(["show", "--model", str(config_only_dir), *args], capsys)
    assert code == 2 and expected in one_line_error(err)


def test_the_running_docs_name_every_suite_with_a_paper_stream():
    """docs/running.md's --paper-seed paragraph names each suite that declares the paper's stream
    and the script it reproduces, so a new stream cannot go undocumented."""
    from pathlib import Path

    running = (Path(__file__).resolve().parent.parent / "docs" / "running.md").read_text()
    section = " ".join(running[running.index("`--paper-seed SEED`") :].split("\n\n")[0].split())
    streams = [name for name in SUITES.names() if SUITES.get(name).paper]
    assert len(streams) >= 1
    for name in streams:
        assert name in section and SUITES.get(name).paper.script in section, name
