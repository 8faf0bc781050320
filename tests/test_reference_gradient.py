"""The reference-gradient suite (kv_refcarrier): four carriers on one draw, steps naming their own
tool calls, gates on a tiny model, and the evaluator on answer patterns with known accuracies."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.reference_gradient import CARRIER_AT, KINDS
from matbench.data_gen.trigger import VERDICTS
from matbench.evaluators import EVALUATORS
from matbench.protocol.frames import FRAMES
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_a_group_is_one_draw_under_four_carriers():
    pairs = SUITES.get("reference_gradient").generate(0, 8)
    assert [p.variant for p in pairs] == list(KINDS) * 2
    group = pairs[:4]
    for p in group[1:]:
        assert [i for i in range(24) if p.events[i] != group[0].events[i]] == [CARRIER_AT]
        assert p.slot_alternatives == group[0].slot_alternatives and len(p.slot_alternatives[0][1]) == 4
    render = FRAMES["tool_steps"].render_event
    assert render(23, group[3].events[CARRIER_AT]).startswith(
        "<step 24>\naction: record_verdict()\nobservation: register "
    )
    assert render(0, group[0].events[0]).startswith("<step 1>\naction: reg_op()\nobservation: sensor ")
    a, b = group[0].member(0).events, group[0].member(1).events
    assert [i for i in range(24) if a[i] != b[i]] == [group[0].source, group[0].source + 1]
    assert a[group[0].source + 1].endswith("threshold EXCEEDED") and b[group[0].source + 1].endswith("threshold NORMAL")
    assert group[3].arm("harv").question.startswith("What verdict did register ")
    assert group[0].arm("harv").question.startswith("Was sensor ")


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("reference_gradient").generate(0, 4))  # asserts every gate
    assert [r.variant for r in records] == list(KINDS)


def _record(index: int, kind: str, harv: tuple[str, str]) -> PairRecord:
    def arm(ans):
        return ArmRecord(ans, outcome(ans, VERDICTS), ans, ((0.0, 0.0), (0.0, 0.0)), 0.0)

    arms = {
        "harv": arm(harv),
        "sel": arm(("NORMAL", "NORMAL")),
        "txt": arm(VERDICTS),
        "control": arm(("NORMAL", "NORMAL")),
    }
    return PairRecord(f"reference_gradient-v1-s0-{index:05d}", kind, VERDICTS, VERDICTS, 2, 100, (100, 100), arms)


def test_the_papers_predicted_gradient_reads_as_such():
    """copy and state carry the verdict, outcome in half the groups, neutral never."""
    records = []
    for g in range(4):
        for j, kind in enumerate(KINDS):
            follows = kind in ("copy", "state") or (kind == "outcome" and g < 2)
            records.append(_record(4 * g + j, kind, VERDICTS if follows else ("NORMAL", "NORMAL")))
    m = EVALUATORS.get("reference_gradient")(suite="reference_gradient").summarize(records)
    head = m["headline"]
    assert head["harv_accuracy"] == {"neutral": 0.5, "outcome": 0.75, "state": 1.0, "copy": 1.0}
    assert head["sel_accuracy"] == dict.fromkeys(KINDS, 0.5)  # the leak check stays donor-blind
    assert head["state_minus_neutral"] == {"n_groups": 4, "mean": 0.5, "ci": [0.5, 0.5]}
    assert head["copy_minus_neutral"]["mean"] == 0.5
    assert head["harv_classes"] == {"neutral": "0:0", "outcome": "2:0", "state": "4:0", "copy": "4:0"}
    assert head["control_clean"] is True and head["comprehension"] == 1.0
