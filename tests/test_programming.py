"""The programming suite: balanced carrier kinds, donor operands, exp upper bound, evaluator."""

from __future__ import annotations

import collections
import re

from matbench.data_gen import SUITES
from matbench.data_gen.programming import KINDS, REVIEW_AT
from matbench.evaluators import EVALUATORS
from tests.helpers import gated_records


def test_structure_balance_and_operands():
    pairs = SUITES.get("programming").generate(0, 200)
    assert collections.Counter(p.variant for p in pairs) == {f"{k}/{t}": 20 for k in KINDS for t in (1, 2)}
    for p in pairs:
        (hi, thr_a), (lo, thr_b) = (map(int, re.findall(r"\d+", body)) for body in p.source_bodies)
        assert thr_a == thr_b and hi >= thr_a + 30 and lo <= thr_b - 30 and p.values == ("EXCEEDED", "NORMAL")
        kind = p.variant.split("/")[0]
        carrier = p.source + 1
        assert p.arm("both").served == (carrier, REVIEW_AT) and p.arm("both@L").query_at_end
        assert (kind == "exp") == bool(p.donor_events) == p.arm("carrier").uses_source
        if kind == "exp":
            a, b = p.donor_events[0][1:]
            assert "EXCEEDED" in a and "NORMAL" in b
        else:
            assert "EXCEEDED" not in p.events[carrier] and "NORMAL" not in p.events[carrier]
        assert all(str(n) not in p.events[i].split() for n in (hi, lo) for i in range(len(p.events)))


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("programming").generate(0, 10)  # two of each kind
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("programming")(suite="programming").summarize(records)
    assert set(metrics["by_carrier"]) == set(KINDS)
    assert all(m["both"]["n_pairs"] == 2 for m in metrics["by_carrier"].values())
    assert metrics["headline"]["control_clean"] is True
    assert metrics["headline"]["nld_minus_pas_both"] == (
        metrics["headline"]["follow_rate"]["nld"]["both"] - metrics["headline"]["follow_rate"]["pas"]["both"])


def test_groups_of_ten_share_every_draw():
    pairs = SUITES.get("programming").generate(0, 20)
    for group in (pairs[:10], pairs[10:]):
        assert {p.source_bodies for p in group} == {group[0].source_bodies}
        assert sorted(p.variant for p in group) == sorted(f"{k}/{t}" for k in KINDS for t in (1, 2))
    assert pairs[0].source_bodies != pairs[10].source_bodies
