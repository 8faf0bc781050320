"""The sliding-window suite (kv_swgate): a far row, fillers by gap and a near row; `--serving auto`
runs compact and native; on a sliding-window model the two differ, on full attention they agree."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.sliding_window import FAR_AT, GAPS
from matbench.engine.pair_engine import probe_logits
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records


def test_gaps_rotate_and_the_far_row_is_padded_to_its_budget():
    pairs = SUITES.get("sliding_window").generate(0, 8)
    assert [p.variant for p in pairs] == [f"gap{g}" for g in GAPS] * 2
    for p, gap in zip(pairs, GAPS * 2):
        assert len(p.events) == 2 + 1 + gap // 20 and p.source == FAR_AT
        assert p.arms[0].served == (FAR_AT, len(p.events) - 1) and p.arms[0].uses_source
        assert p.padded == ((FAR_AT, p.source_bodies),) and set(p.values) == {"ONLINE", "OFFLINE"}
        assert p.decoys == (0, len(p.events) - 1)
    assert SUITES.get("sliding_window").servings == ("compact", "native")


def test_auto_serving_runs_both_modes_for_this_suite_only(tiny_llama):
    from matbench.run.evaluate import EvalConfig, plan

    engine = engine_for(tiny_llama)
    both = plan(EvalConfig(model="m", suite="sliding_window", output="o"), engine)
    assert [s.serving for s in both] == ["compact", "native"]
    assert [s.serving for s in plan(EvalConfig(model="m", suite="discovery", output="o"), engine)] == ["compact"]
    chosen = plan(EvalConfig(model="m", suite="sliding_window", output="o", servings=("native",)), engine)
    assert [s.serving for s in chosen] == ["native"]


def test_gates_on_tiny_models(tiny_llama, tiny_gemma):
    pairs = SUITES.get("sliding_window").generate(0, 2)
    assert len(gated_records(tiny_llama, pairs)) == len(gated_records(tiny_gemma, pairs)) == 2  # every gate


def test_compact_serving_differs_from_native_only_under_sliding_windows(tiny_llama, tiny_gemma):
    pair = SUITES.get("sliding_window").generate(0, 2)[1]  # gap 600: far row beyond the 64-token window
    diffs = []
    for loaded in (tiny_llama, tiny_gemma):
        engine = engine_for(loaded)
        layout, caches = engine.prepare(pair)
        compact = probe_logits(engine, pair, caches, pair.arms[0], serving="compact", query_position=layout.length)
        native = probe_logits(engine, pair, caches, pair.arms[0], serving="native")
        diffs.append(float((compact - native).abs().max()))
    assert diffs[0] < 1e-4 and diffs[1] > 1e-2


def _record(index: int, gap: int, answers) -> PairRecord:
    values = ("ONLINE", "OFFLINE")
    arm = ArmRecord(answers, outcome(answers, values), values, ((0.0, 0.0), (0.0, 0.0)), 0.25 if index else 0.0)
    return PairRecord(
        f"sliding_window-v1-s0-{index:05d}", f"gap{gap}", values, values, 1, 100, (100, 100), {"far_near": arm}
    )


def test_follow_and_shift_by_gap():
    records = [
        _record(0, 240, ("ONLINE", "OFFLINE")),
        _record(1, 2400, ("ONLINE", "ONLINE")),
        _record(2, 2400, ("ONLINE", "OFFLINE")),
    ]
    head = EVALUATORS.get("sliding_window")(suite="sliding_window").summarize(records)["headline"]
    assert head["follow_by_gap"] == {"gap240": 1.0, "gap2400": 0.5}
    assert head["accuracy_by_gap"] == {"gap240": 1.0, "gap2400": 0.75}
    assert head["shift_by_gap"] == {"gap240": 0.0, "gap2400": 0.25}
