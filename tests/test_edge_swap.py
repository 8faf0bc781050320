"""The edge-swap suite (kv_causal Part B): leaf pairs sharing one draw, both sources dropped and
swapped jointly, the referenced chain's values on the edge arm; gates on a tiny model; the
evaluator on answer patterns whose edge-tracking is known."""

from __future__ import annotations

import json

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.edge_swap import LEAF_AT, ROOT_A, ROOT_B, SOURCE_A, SOURCE_B
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records

STATES = ("ONLINE", "OFFLINE")


def test_groups_share_every_draw_and_differ_in_the_leaf_and_decoy_only():
    pairs = SUITES.get("edge_swap").generate(0, 8)
    assert [p.variant for p in pairs] == ["leaf_a", "leaf_b"] * 4
    for a, b in zip(pairs[::2], pairs[1::2]):
        differ = [i for i in range(24) if a.events[i] != b.events[i]]
        assert differ in ([LEAF_AT], [0, LEAF_AT])  # the paper draws the decoy's state once per leaf
        assert a.events[LEAF_AT].split()[-1] == a.events[ROOT_A].split()[1]
        assert b.events[LEAF_AT].split()[-1] == b.events[ROOT_B].split()[1]
        assert a.slot_alternatives == b.slot_alternatives == ((LEAF_AT, (a.events[LEAF_AT], b.events[LEAF_AT])),)
    assert pairs[0].events != pairs[2].events


def test_both_sources_are_dropped_and_swap_jointly():
    pair = SUITES.get("edge_swap").generate(0, 2)[1]
    a, b = pair.member(0).events, pair.member(1).events
    assert [i for i in range(24) if a[i] != b[i]] == [SOURCE_A, SOURCE_B]
    assert (a[SOURCE_A].split()[-1], a[SOURCE_B].split()[-1]) == STATES
    assert (b[SOURCE_A].split()[-1], b[SOURCE_B].split()[-1]) == STATES[::-1]
    edge = pair.arm("edge")
    assert edge.served == (0, ROOT_A, ROOT_B, LEAF_AT) and not edge.uses_source
    assert pair.arm_values(edge) == STATES[::-1]  # leaf b: member A's vb is OFFLINE
    assert pair.arm("control").served == tuple(range(SOURCE_A))


def test_gates_pass_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("edge_swap").generate(0, 4)
    records = gated_records(tiny_llama, pairs)  # asserts every gate (A, B, mask, layout, control) per pair
    assert [r.variant for r in records] == ["leaf_a", "leaf_b"] * 2
    for r in records:
        assert r.arms["control"].outcome not in ("follow", "anti") and r.arms["control"].shift == 0.0
        assert r.arm_values("edge") == (STATES if r.variant == "leaf_a" else STATES[::-1])
        # the per-item log keeps the arm's own donor values, so a rescore reads leaf b right
        logged = PairRecord.from_json(json.loads(json.dumps(r.to_json())), "log")
        assert logged.arm_values("edge") == r.arm_values("edge") and logged.arm_values("txt") == r.arm_values("txt")


def _record(variant: str, values: tuple[str, str], answers: tuple[str, str]) -> PairRecord:
    """A record whose edge arm gives `answers`, its txt arm the referenced values, control a constant."""

    def arm(ans):
        return ArmRecord(
            ans, outcome(ans, values), ans, ((0.0, 0.0), (0.0, 0.0)), 0.1 if ans == values else 0.0, values=values
        )

    return PairRecord(
        f"x-{variant}-{answers}",
        variant,
        STATES,
        STATES,
        1,
        100,
        (100, 100),
        {"edge": arm(answers), "txt": arm(values), "control": arm(("ONLINE", "ONLINE"))},
    )


@pytest.mark.parametrize(
    "reads,tracking,wrong,by_leaf",
    [
        ("referenced", 1.0, 0.0, {"leaf_a": "3:0", "leaf_b": "3:0"}),  # the edge selects the root
        ("chain a", 0.5, 0.5, {"leaf_a": "3:0", "leaf_b": "0:3"}),  # always chain a: the edge is ignored
        ("nothing", 0.5, 0.5, {"leaf_a": "0:0", "leaf_b": "0:0"}),  # donor-blind: one constant answer
    ],
)
def test_edge_tracking_and_wrong_chain_on_known_patterns(reads, tracking, wrong, by_leaf):
    records = []
    for variant, referenced in (("leaf_a", STATES), ("leaf_b", STATES[::-1])):
        for _ in range(3):
            answers = {"referenced": referenced, "chain a": STATES, "nothing": ("OFFLINE", "OFFLINE")}[reads]
            records.append(_record(variant, referenced, answers))
    metrics = EVALUATORS.get("edge_swap")(suite="edge_swap").summarize(records)
    head = metrics["headline"]
    assert head["edge_tracking"]["accuracy"] == tracking and head["wrong_chain"] == wrong
    assert head["follow_anti_by_leaf"] == by_leaf
    assert head["control_clean"] is True and head["comprehension"] == 1.0
    lo, hi = head["edge_tracking"]["ci"]
    assert lo <= tracking <= hi and hi - lo > 0
