"""Pairs with a second donor-dependent event (an explicit-verdict carrier) and fixed query positions."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from matbench.engine.gates import run_gates
from matbench.engine.layout import layout_pair
from matbench.engine.render import Renderer
from matbench.engine.serving import ServeRequest, serve_compact
from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair
from tests.helpers import engine_for

MENU = ("EXCEEDED", "NORMAL")


def _pair(**kw) -> DonorPair:
    events = tuple(f"register KAPPA refreshed to {100 + i}" for i in range(8))
    events = events[:3] + ("<donor>", "<verdict>") + events[5:]
    base = {
        "item_id": "exp",
        "events": events,
        "source": 3,
        "source_bodies": (
            "sensor S7 measured 190; the alert threshold is 150",
            "sensor S7 measured 90; the alert threshold is 150",
        ),
        "values": MENU,
        "menu": MENU,
        "donor_events": (
            (
                4,
                "audit note: sensor S7 was above the threshold, verdict EXCEEDED",
                "audit note: sensor S7 was not above the threshold at any time, verdict NORMAL",
            ),
        ),
        "arms": (
            Arm("carrier", (0, 4), "Was sensor S7 above the alert threshold?", uses_source=True),
            Arm("filler", (0, 6), "Was sensor S7 above the alert threshold?"),
            Arm("filler_at_end", (0, 6), "Was sensor S7 above the alert threshold?", query_at_end=True),
            Arm("control", (0, 1, 2), "Was sensor S7 above the alert threshold?"),
        ),
    }
    base.update(kw)
    return DonorPair(**base)


def test_every_donor_dependent_slot_gets_a_budget(tokenizer):
    pair = _pair()
    pair.validate()
    layout = layout_pair(pair, Renderer(tokenizer))
    a, b = layout.members
    for m in (a, b):
        assert m.positions[m.event_spans[5][0]] == a.positions[a.event_spans[5][0]]
    # The verdict bodies differ in length ("was above" vs "was not above"): a second budget.
    la, lb = (m.event_spans[4][1] - m.event_spans[4][0] for m in (a, b))
    assert la != lb
    assert a.positions[a.event_spans[5][0]] - a.positions[a.event_spans[4][0]] == max(la, lb)
    assert layout.prefix_tokens == a.event_spans[3][0]


def test_serving_a_donor_dependent_event_needs_a_donor_visible_arm():
    bad = _pair(arms=(Arm("carrier", (0, 4), "Q?"),))
    with pytest.raises(MatbenchError, match="serves the source or a donor-dependent event"):
        bad.validate()
    with pytest.raises(MatbenchError, match="donor_events must name existing events"):
        _pair(donor_events=((3, "x", "y"),)).validate()


def test_gates_and_fixed_query_position_on_a_tiny_model(tiny_llama):
    pair = _pair()
    engine = engine_for(tiny_llama)
    layout, caches = engine.prepare(pair)
    record = engine.score(pair, layout, caches)
    assert all(g.passed for g in run_gates(engine, pair, layout, caches, record))
    assert record.arms["control"].shift == 0.0
    moved, plain = record.arms["filler_at_end"], record.arms["filler"]
    assert moved.probe_logp != plain.probe_logp  # the query position matters...
    ids = engine.query_ids(pair, pair.arm("filler"), engine.probe_readout)
    _, logits = serve_compact(engine.runner, [ServeRequest(caches[0], (0, 6), ids)], query_position=layout.length)
    expected = engine.scorer(MENU).log_probs(logits)[0]
    assert torch.allclose(torch.tensor(moved.probe_logp[0]), expected, atol=1e-5)  # ...and it is L


def test_rows_round_trip_donor_events_and_variants():
    from matbench.data_gen.rows import pair_to_row, row_to_pair

    pair = dataclasses.replace(_pair(), variant="exp/1")
    assert row_to_pair(pair_to_row(pair, "programming", "1", 0, 0)) == pair
