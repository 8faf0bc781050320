"""The variable-tracking suite (kv_vartrack, kv_vardecomp): chains of 1, 2 and 4 hops near and far,
the six servings, gates on a tiny model, and the evaluator."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.var_tracking import N_EVENTS
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records

ARMS = ["full_txt", "sel_txt", "harv_kv", "sel_ikv", "iso", "anch"]


def test_cells_rotate_and_chains_follow_the_paper():
    pairs = SUITES.get("var_tracking").generate(0, 96)
    assert [p.variant for p in pairs[:6]] == ["h1/near", "h1/far", "h2/near", "h2/far", "h4/near", "h4/far"]
    assert [p.variant for p in pairs] == [p.variant for p in pairs[:6]] * 16
    for p in pairs:
        hops, span = int(p.variant[1]), p.variant.split("/")[1]
        chain = p.arm("harv_kv").served
        assert len(chain) == hops + 1 and p.source == chain[0] and [a.name for a in p.arms] == ARMS
        if span == "far":
            assert chain[0] == 0 and chain[-1] == N_EVENTS - 1
        else:
            assert list(chain) == list(range(chain[0], chain[0] + hops + 1))
        assert all(f" {v}" not in p.events[i] for v in p.values for i in range(N_EVENTS) if i != p.source)
        assert p.values[0][0] != p.values[1][0] and all(a.uses_source and a.budget == 12 for a in p.arms)
        assert p.member(1).events[p.source].endswith(f"initialized to {p.values[1]}")
    assert {a.encoding for a in pairs[0].arms} == {"text", "joint", "isolated", "anchored"}


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("var_tracking").generate(0, 2))  # asserts every gate
    assert [r.variant for r in records] == ["h1/near", "h1/far"]


def _record(index: int, variant: str, right: dict[str, int]) -> PairRecord:
    values = ("123", "456")

    def arm(name):
        ans = values if right.get(name, 0) == 2 else (values[0], values[0]) if right.get(name) == 1 else (None, None)
        return ArmRecord(ans, outcome(ans, values), values, ((0.0, 0.0), (0.0, 0.0)), 0.0)

    return PairRecord(
        f"var_tracking-v1-s0-{index:05d}",
        variant,
        values,
        values,
        3,
        100,
        (100, 100),
        {name: arm(name) for name in ARMS},
    )


def test_the_table_and_the_decomposition():
    records = [
        _record(0, "h1/near", {"full_txt": 1, "sel_txt": 2, "harv_kv": 2, "sel_ikv": 1}),
        _record(1, "h1/far", {"full_txt": 0, "sel_txt": 1, "harv_kv": 2, "sel_ikv": 0}),
    ]
    m = EVALUATORS.get("var_tracking")(suite="var_tracking").summarize(records)
    head = m["headline"]
    assert head["table"]["h1/near"]["full_txt"] == 0.5 and head["table"]["h1/far"]["harv_kv"] == 1.0
    assert head["table_by_arm"]["sel_ikv"] == {"h1/near": 0.5, "h1/far": 0.0}
    d = head["decomposition"]
    assert d["routing"]["mean"] == pytest.approx(0.5) and d["pre_digestion"]["mean"] == pytest.approx(0.25)
    assert d["joint_conditioning"]["mean"] == pytest.approx(0.75)
