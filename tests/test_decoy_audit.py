"""The decoy-audit suite (kv_decoyctl2): three decoy modes on one draw, the opposite decoy as a
donor-dependent event, gates on a tiny model (mask and layout n/a where every arm is
donor-visible), and the evaluator on answer patterns whose accuracies are known."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.access import CARRIER_AT, DECOY_AT
from matbench.engine.gates import run_gates
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for

STATES = ("ONLINE", "OFFLINE")


def test_a_group_is_one_draw_under_three_decoys():
    pairs = SUITES.get("decoy_audit").generate(0, 6)
    assert [p.variant.split("/")[0] for p in pairs] == ["opposite", "independent", "none"] * 2
    opposite, independent, none = pairs[:3]
    assert [i for i in range(24) if opposite.events[i] != none.events[i]] == [DECOY_AT]
    assert opposite.member(0).events[DECOY_AT].endswith(" OFFLINE")  # member A's gold is ONLINE
    assert opposite.member(1).events[DECOY_AT].endswith(" ONLINE")
    assert independent.variant == f"independent/{independent.events[DECOY_AT].split()[-1]}"
    assert none.events[DECOY_AT].endswith("completed a routine self-test")
    assert all(a.uses_source for a in opposite.arms) and "control" not in [a.name for a in opposite.arms]
    for pair in (independent, none):
        assert not pair.arm("harv_kv").uses_source and pair.arm("harv_kv").served == (DECOY_AT, CARRIER_AT)
        assert pair.arm("control").served == tuple(range(pair.source))


def test_gates_on_a_tiny_model(tiny_llama):
    engine = engine_for(tiny_llama)
    for pair in SUITES.get("decoy_audit").generate(0, 3):
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        gates = {g.name: g for g in run_gates(engine, pair, layout, caches, record)}
        assert all(g.passed for g in gates.values()), gates
        visible = pair.variant == "opposite"
        assert (gates["mask"].max_abs_diff is None) is visible and (gates["layout"].max_abs_diff is None) is visible
        assert ("control" in gates) is not visible


def _record(index: int, mode: str, answers: tuple[str, str]) -> PairRecord:
    def arm(ans):
        return ArmRecord(ans, outcome(ans, STATES), ans, ((0.0, 0.0), (0.0, 0.0)), 0.0)

    arms = {name: arm(answers) for name in ("harv_kv", "sel_ikv", "sel_txt")}
    arms["full_txt"] = arm(STATES)
    if mode != "opposite":
        arms["control"] = arm(("ONLINE", "ONLINE"))
    variant = "independent/ONLINE" if mode == "independent" else mode
    return PairRecord(f"decoy_audit-v1-s0-{index:05d}", variant, STATES, STATES, 1, 100, (100, 100), arms)


def test_an_eliminating_model_scores_only_with_the_opposite_decoy():
    """It answers the value the served decoy does not state: right in every opposite item, the
    decoy's complement (OFFLINE, member A wrong) with the independent ONLINE decoy, and nothing
    read without a decoy."""
    records = []
    for g in range(4):
        records += [
            _record(3 * g, "opposite", STATES),
            _record(3 * g + 1, "independent", ("OFFLINE", "OFFLINE")),
            _record(3 * g + 2, "none", ("ONLINE", "ONLINE")),
        ]
    m = EVALUATORS.get("decoy_audit")(suite="decoy_audit").summarize(records)
    head = m["headline"]
    assert head["harv_kv_accuracy"] == {"opposite": 1.0, "independent": 0.5, "none": 0.5}
    assert head["decoy_inflation"] == {"n_groups": 4, "mean": 0.5, "ci": [0.5, 0.5]}
    assert head["decoy_echo"] == 0.0 and head["control_clean"] is True
    assert m["by_mode"]["none"]["harv_kv"]["classes"]["const"] == 4
    assert head["comprehension"] == {"opposite": 1.0, "independent": 1.0, "none": 1.0}
    metric = EVALUATORS.get("decoy_audit").metric("decoy_inflation")
    assert metric.text(metric.value(m)) == "+0.500 [+0.500, +0.500]"


@pytest.mark.parametrize("answers,echo", [(("ONLINE", "ONLINE"), 1.0), (("OFFLINE", "ONLINE"), 0.5)])
def test_the_decoy_echo_counts_answers_equal_to_the_independent_decoy(answers, echo):
    records = [_record(3 * g + 1, "independent", answers) for g in range(3)]
    assert EVALUATORS.get("decoy_audit")(suite="decoy_audit").summarize(records)["headline"]["decoy_echo"] == echo


def test_a_run_without_every_mode_reads_its_missing_metrics_as_dashes():
    records = [_record(0, "opposite", STATES)]  # --limit 1: the first mode only
    m = EVALUATORS.get("decoy_audit")(suite="decoy_audit").summarize(records)
    texts = {metric.key: metric.text(metric.value(m)) for metric in EVALUATORS.get("decoy_audit").contract}
    assert texts["none_classes"] == texts["none_shift"] == texts["independent_shift"] == "—"
    assert texts["decoy_inflation"] == "—" and texts["control_clean"] == "—"
    assert m["headline"]["harv_kv_accuracy"] == {"opposite": 1.0}
