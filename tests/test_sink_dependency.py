"""The sink-vs-dependency suite (kv_phantom E3): kv_phantom's copy chain among sensor reads, the
2 x 2 of encodings and tasks plus the full prefill, donor-visible pairs, gates on a tiny model, and
the evaluator."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.sink_dependency import N_EVENTS, REGISTERS
from matbench.evaluators import EVALUATORS
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records

ARMS = ["head_retr", "head_hop", "nohead_retr", "nohead_hop", "full_retr", "full_hop"]


def test_items_hold_one_copy_chain_and_serve_everything():
    pairs = SUITES.get("sink_dependency").generate(0, 32)
    for p in pairs:
        assert p.paired and len(p.events) == N_EVENTS and [a.name for a in p.arms] == ARMS
        chain = [i for i, e in enumerate(p.events) if "register" in e]
        assert len(chain) == 3 and p.source == chain[0]
        assert p.events[chain[0]].startswith(f"probe() => register {REGISTERS[0]} initialized to ")
        assert p.events[chain[2]] == "probe() => register GAMMA copied from register BETA"
        a, b = (p.member(m).events for m in (0, 1))
        asked = p.donor_events[0][0]
        assert [i for i in range(N_EVENTS) if a[i] != b[i]] == sorted((p.source, asked))
        assert p.arm("head_hop").values == p.values == (a[p.source].rsplit(" ", 1)[1], b[p.source].rsplit(" ", 1)[1])
        assert p.arm("nohead_retr").values == (a[asked].rsplit(" ", 1)[1], b[asked].rsplit(" ", 1)[1])
        for arm in p.arms:
            mine, other = arm.values
            assert arm.menu == arm.values and mine[0] != other[0] and arm.uses_source
            assert arm.served == tuple(range(N_EVENTS)) and arm.budget == 12
            assert all(other not in e for e in a)  # member B's values appear in no step of member A
        assert {a.encoding for a in p.arms} == {"isolated", "headless", "text"}


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("sink_dependency").generate(0, 1))  # asserts every gate
    assert sorted(records[0].arms) == sorted(ARMS)


def test_headless_and_isolated_rows_differ_only_in_what_came_before(tiny_llama):
    import torch

    pair = SUITES.get("sink_dependency").generate(0, 1)[0]
    engine = engine_for(tiny_llama)
    layout, caches = engine.prepare(pair)
    derived = engine.derived_caches(pair, layout, caches)
    head, alone = derived["head_retr"][0], derived["nohead_retr"][0]
    lo, hi = layout.members[0].event_spans[0]
    last = len(head.keys) - 1
    assert torch.equal(head.keys[last][:, :, :lo], alone.keys[last][:, :, :lo])  # the header rows: shared
    assert not torch.allclose(head.keys[last][:, :, lo:hi], alone.keys[last][:, :, lo:hi], atol=1e-4)


def _record(index: int, hits: dict[str, int]) -> PairRecord:
    values = ("111", "222")

    def arm(name):
        ans = values if hits.get(name, 0) == 2 else (None, None)
        return ArmRecord(ans, outcome(ans, values), values, ((0.0, 0.0), (0.0, 0.0)), 0.5 * hits.get(name, 0))

    return PairRecord(
        f"sink_dependency-v1-s0-{index:05d}", "", values, values, 1, 100, (100, 100), {name: arm(name) for name in ARMS}
    )


def test_the_two_by_two_its_interaction_and_the_shifts():
    # head fixes retrieval (2 of 2 vs 0) but not multi-hop (0 vs 0) in both items.
    records = [_record(i, {"head_retr": 2, "full_retr": 2, "full_hop": 2}) for i in range(2)]
    m = EVALUATORS.get("sink_dependency")(suite="sink_dependency").summarize(records)
    head = m["headline"]
    assert head["accuracy"] == {
        "head_retr": 1.0,
        "head_hop": 0.0,
        "nohead_retr": 0.0,
        "nohead_hop": 0.0,
        "full_retr": 1.0,
        "full_hop": 1.0,
    }
    assert head["head_effect"]["retr"]["mean"] == 1.0 and head["head_effect"]["hop"]["mean"] == 0.0
    assert head["interaction"]["mean"] == pytest.approx(1.0)
    assert m["arms"]["full_hop"]["donor_shift"]["mean"] == 1.0 and m["arms"]["head_hop"]["classes"]["follow"] == 0
