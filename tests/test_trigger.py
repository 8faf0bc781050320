"""The trigger suite: 16 constructions per group, fixed query position, gates, evaluator."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.trigger import CARRIER_AT, CONSTRUCTIONS
from matbench.engine.layout import layout_pair
from matbench.engine.render import Renderer
from matbench.evaluators import EVALUATORS
from tests.helpers import gated_records


def test_groups_share_draws_and_cover_the_bank():
    pairs = SUITES.get("trigger").generate(0, 32)
    for group in (pairs[:16], pairs[16:]):
        assert [p.variant for p in group] == [f"{f}/{n}" for f, n in CONSTRUCTIONS]
        assert len({p.source for p in group}) == 1 and len({p.events[0] for p in group}) == 1
        carriers = {p.events[CARRIER_AT] for p in group}
        assert len(carriers) == 16 and set(dict(group[0].slot_alternatives)[CARRIER_AT]) == carriers
    assert pairs[0].source_bodies != pairs[16].source_bodies or pairs[0].events != pairs[16].events


def test_query_position_is_fixed_across_the_bank(tokenizer):
    renderer = Renderer(tokenizer)
    group = SUITES.get("trigger").generate(0, 16)
    lengths = {layout_pair(p, renderer).length for p in group}
    assert len(lengths) == 1  # every construction leaves L unchanged
    layouts = [layout_pair(p, renderer) for p in group]
    starts = {lay.members[0].positions[lay.members[0].event_spans[CARRIER_AT][0]] for lay in layouts}
    assert len(starts) == 1  # the source, verdict and carrier slots are budgeted over both families


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("trigger").generate(0, 16)
    pairs = [pairs[0], pairs[5], pairs[8], pairs[14]]  # two mirror, two flag constructions
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("trigger")(suite="trigger").summarize(records)
    assert set(metrics["by_construction"]) == {p.variant for p in pairs}
    assert all(m["n_pairs"] == 1 for m in metrics["by_construction"].values())
    assert metrics["headline"]["control_clean"] is True
