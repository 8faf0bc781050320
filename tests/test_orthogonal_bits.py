"""The orthogonal-bits suite (kv_orthobit2): opposite-corner donor pairs, three questions of one
served cache, gates on a tiny model, and the evaluator's reconstruction."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.orthogonal_bits import AXIS, DIAGONAL, DIR4, RECONSTRUCT
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_the_two_bits_name_the_state_and_pairs_differ_in_both():
    assert sorted(RECONSTRUCT.values()) == sorted(DIR4) and len(RECONSTRUCT) == 4
    pairs = SUITES.get("orthogonal_bits").generate(0, 32)
    assert {p.variant for p in pairs} <= {"NORTH/WEST", "WEST/NORTH", "SOUTH/EAST", "EAST/SOUTH"}
    for p in pairs:
        a, b = p.values
        assert AXIS[a] != AXIS[b] and DIAGONAL[a] != DIAGONAL[b]
        assert p.arm("harv_kv/bit_a").values == (AXIS[a], AXIS[b]) and p.arm("sel_txt/bit_b").values == (
            DIAGONAL[a],
            DIAGONAL[b],
        )
        assert p.arm("harv_kv/q4").served == (0, 23) and p.arm("control").served == tuple(range(p.source))
        assert p.arm("harv_kv/bit_a").question.endswith("If it is EAST or WEST, answer BLUE.")
    assert len(pairs[0].arms) == 10


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("orthogonal_bits").generate(0, 2))  # asserts every gate
    assert len(records) == 2 and set(records[0].arms["harv_kv/bit_a"].answers) <= {"RED", "BLUE"}


def _record(index: int, bits_a, bits_b) -> PairRecord:
    values = ("NORTH", "WEST")
    arms = {}
    for enc in ("harv_kv", "sel_txt", "full_txt"):
        for q, answers, vals in (
            ("q4", (None, None), values),
            ("bit_a", bits_a, ("RED", "BLUE")),
            ("bit_b", bits_b, ("RED", "BLUE")),
        ):
            own = {"menu": ("RED", "BLUE"), "values": vals} if q != "q4" else {}
            arms[f"{enc}/{q}"] = ArmRecord(answers, outcome(answers, vals), vals, ((0.0, 0.0), (0.0, 0.0)), 0.0, **own)
    arms["control"] = ArmRecord(("NORTH", "NORTH"), "const", ("NORTH", "NORTH"), ((0.0, 0.0), (0.0, 0.0)), 0.0)
    return PairRecord(f"orthogonal_bits-v1-s0-{index:05d}", "NORTH/WEST", values, DIR4, 10, 100, (100, 100), arms)


def test_reconstruction_from_both_bits():
    # Pair 0: both members right on both bits; pair 1: member B (WEST) answers the diagonal RED (EAST).
    records = [_record(0, ("RED", "BLUE"), ("RED", "BLUE")), _record(1, ("RED", "BLUE"), ("RED", "RED"))]
    m = EVALUATORS.get("orthogonal_bits")(suite="orthogonal_bits").summarize(records)
    head = m["headline"]
    assert head["harv_kv"] == {"q4": 0.0, "bit_a": 1.0, "bit_b": 0.75}
    assert head["reconstructed"]["harv_kv"]["accuracy"] == 0.75 and head["control_clean"] is True
    # every declared metric reads its value and renders as a table cell (the reconstructed accuracy
    # is {"accuracy", "ci"}, not a {"mean", "ci"} value)
    evaluator = EVALUATORS.get("orthogonal_bits")
    cells = {metric.key: metric.text(metric.value(m)) for metric in evaluator.contract}
    assert cells["harv_reconstructed"] == "0.750 [{:.3f}, {:.3f}]".format(*head["reconstructed"]["harv_kv"]["ci"])
