"""The landing suite: structure, determinism, gates and its evaluator on a tiny model."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.landing import (
    DEPTH3_AT,
    EDGE_AT,
    NEUTRAL_AT,
    PERTURB_AT,
    ROOT_AT,
)
from matbench.evaluators import EVALUATORS
from tests.helpers import gated_records


def test_landing_structure_and_determinism():
    suite = SUITES.get("landing")
    pairs = suite.generate(0, 100)
    assert pairs == suite.generate(0, 100) and pairs != suite.generate(1, 100)
    for p in pairs:
        mirror, target, far = p.registers[1], p.registers[2], p.registers[3]
        assert p.events[ROOT_AT].endswith(f"mirrors register {p.source_bodies[0].split()[1]}")
        assert p.events[EDGE_AT] == f"register {target} mirrors register {mirror}"
        assert p.events[DEPTH3_AT] == f"register {far} mirrors register {target}"
        assert mirror in p.events[PERTURB_AT] and "ONLINE" not in p.events[PERTURB_AT] and "OFFLINE" not in p.events[PERTURB_AT]
        assert "refreshed" in p.events[NEUTRAL_AT]
        served = {a.name: set(a.served) for a in p.arms}
        assert served["root_edge"] == served["root_only"] | served["edge_only"]
        assert served["depth3_root"] - served["depth3_noroot"] == {ROOT_AT}
        assert served["perturb"] ^ served["neutral"] == {PERTURB_AT, NEUTRAL_AT}
        assert all(p.source not in s for name, s in served.items() if name != "txt")


def test_landing_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("landing").generate(0, 3)
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("landing")(suite="landing").summarize(records)
    assert set(metrics["arms"]) == {a.name for a in pairs[0].arms}
    assert all(sum(m["classes"].values()) == 3 for m in metrics["arms"].values())
    assert metrics["headline"]["control_clean"] is True


def test_swapping_every_donor_carrying_row_turns_one_member_into_the_other(tiny_llama):
    import dataclasses

    import pytest

    from matbench.errors import MatbenchError
    from matbench.protocol.pairs import Arm
    from tests.helpers import engine_for

    pair = SUITES.get("landing").generate(0, 1)[0]
    question = pair.arm("root_edge").question
    full_swap = Arm("full_swap", (0, ROOT_AT, EDGE_AT), question, swapped=(ROOT_AT, EDGE_AT))
    pair = dataclasses.replace(pair, arms=pair.arms + (full_swap,))
    pair.validate()
    engine = engine_for(tiny_llama)
    record = engine.score(pair, *engine.prepare(pair))
    same, swapped, cross = (record.arms[a].probe_logp for a in ("root_edge", "full_swap", "root_edge_cross"))
    # The decoy precedes the source (identical rows); with root and edge swapped, member A is served
    # exactly member B's rows and vice versa.
    assert swapped[0] == same[1] and swapped[1] == same[0]
    assert record.arms["full_swap"].shift == -record.arms["root_edge"].shift
    # Crossing only the edge gives neither member's rows.
    assert cross[0] not in (same[0], same[1])
    bad = dataclasses.replace(pair, arms=(Arm("x", (0, ROOT_AT), question, swapped=(EDGE_AT,)),))
    with pytest.raises(MatbenchError, match="swapped events must be served"):
        bad.validate()
