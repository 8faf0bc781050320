"""The binding-capacity suite (kv_bicap): three carrier layouts sharing one draw, both sources
flipping together, gates on a tiny model, and the evaluator's BOTH, cross-talk and contrasts."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.binding_capacity import FLIP
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_groups_share_a_draw_and_both_sources_flip():
    pairs = SUITES.get("binding_capacity").generate(0, 96)
    assert [p.variant for p in pairs] == ["one", "two_in_one", "two_sep"] * 32
    for one, two_in_one, two_sep in zip(pairs[::3], pairs[1::3], pairs[2::3]):
        assert one.events[:22] == two_in_one.events[:22] and one.events[22] == two_in_one.events[22]
        assert two_in_one.events[23] == f"{two_sep.events[22]}; {two_sep.events[23]}"
        assert one.events[23] == two_sep.events[22] and one.values == two_sep.values
        assert [a.served for a in two_sep.arms][:2] == [(0, 22, 23)] * 2 and one.arm("harv/q1").served == (0, 23)
        m2, body_a, body_b = two_sep.donor_events[0]
        assert body_b == body_a.replace(body_a.split()[-1], FLIP[body_a.split()[-1]])
        assert two_sep.arm("harv/q2").values == (body_a.split()[-1], body_b.split()[-1])
        assert 8 <= two_sep.source < 12 <= m2 < 16
    assert [len(p.arms) for p in pairs[:3]] == [4, 7, 7]


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("binding_capacity").generate(0, 3))  # asserts every gate
    assert [r.variant for r in records] == ["one", "two_in_one", "two_sep"]


def _record(index: int, layout: str, v1: tuple[str, str], v2: tuple[str, str], q1, q2) -> PairRecord:
    def arm(answers, values):
        return ArmRecord(answers, outcome(answers, values), values, ((0.0, 0.0), (0.0, 0.0)), 0.0, values=values)

    arms = {"control": arm(v1 if index == 0 else ("ONLINE", "ONLINE"), v1)}  # item 0 follows: not clean
    for enc in ("harv", "sel", "full_txt"):
        arms[f"{enc}/q1"] = arm(q1, v1)
        if layout != "one":
            arms[f"{enc}/q2"] = arm(q2, v2)
    return PairRecord(
        f"binding_capacity-v1-s0-{index:05d}", layout, v1, ("ONLINE", "OFFLINE"), 10, 100, (100, 100), arms
    )


def test_both_cross_talk_and_the_paired_cost():
    on, off = ("ONLINE", "OFFLINE"), ("OFFLINE", "ONLINE")
    records = [
        _record(0, "one", on, on, on, None),
        _record(1, "two_in_one", on, off, off, off),  # T1 answered with v2 in both members: cross-talk
        _record(2, "two_sep", on, off, on, off),
        _record(3, "one", on, on, on, None),
        _record(4, "two_in_one", on, on, on, on),
        _record(5, "two_sep", on, on, on, (None, "ONLINE")),
    ]
    m = EVALUATORS.get("binding_capacity")(suite="binding_capacity").summarize(records)
    head = m["headline"]
    assert head["harv"] == {
        "one/q1": 1.0,
        "two_in_one/q1": 0.5,
        "two_in_one/q2": 1.0,
        "two_sep/q1": 1.0,
        "two_sep/q2": 0.5,
    }
    assert head["both"] == {"two_in_one": 0.5, "two_sep": 0.5}
    assert head["cross_talk"] == {"two_in_one": 1.0, "two_sep": 0.0}
    assert head["vs_one"]["two_in_one"]["mean"] == pytest.approx(-0.5) and head["vs_one"]["two_sep"]["mean"] == 0.0
    assert head["control_clean"] is False
