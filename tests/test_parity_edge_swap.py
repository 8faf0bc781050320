"""Paper parity, edge swap: matbench renders the paper's own draws (kv_causal.py Part B, recorded in
tests/parity/fixtures/edge_swap.json by tests/parity/make_edge_swap.py) byte for byte: each leaf's
whole prefill and its served rows and query under the trace readout, for the member whose two
dropped values are the paper's (va != vb; matbench's pairs are that half), up to the position
budget of the two source slots (the paper renders one unpaired trajectory and budgets no source)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.edge_swap import LEAF_AT, ROOT_A, ROOT_B, SOURCE_A, SOURCE_B, EdgeSwapDraw, build
from tests.parity.compare import EVENT, budget_shifts, fixture, served, trajectory

FIXTURE = fixture("edge_swap")
LEAVES = {"LA": "a", "LB": "b"}  # the paper's leaf -> matbench's
STATE = re.compile(r"register (\w+) set to state (\w+)")


def bodies_of(runs: list) -> list[str]:
    bodies = [body for _, body in EVENT.findall("".join(t for t, _ in runs))]
    assert len(bodies) == 24
    return bodies


def draw_of(item: dict) -> tuple[EdgeSwapDraw, str, str]:
    """The paper's draws, read back from its two prefills, with its va and vb."""
    la, lb = bodies_of(item["prefill"]["LA"]), bodies_of(item["prefill"]["LB"])
    decoy, state_a = STATE.fullmatch(la[0]).groups()
    state_b = STATE.fullmatch(lb[0]).group(2)
    source_a, va = STATE.fullmatch(la[SOURCE_A]).groups()
    source_b, vb = STATE.fullmatch(la[SOURCE_B]).groups()
    root_a = re.fullmatch(rf"register (\w+) mirrors register {source_a}", la[ROOT_A]).group(1)
    root_b = re.fullmatch(rf"register (\w+) mirrors register {source_b}", la[ROOT_B]).group(1)
    target = re.fullmatch(rf"register (\w+) mirrors register {root_a}", la[LEAF_AT]).group(1)
    assert lb[LEAF_AT] == f"register {target} mirrors register {root_b}"
    draw = EdgeSwapDraw(decoy, source_a, source_b, root_a, root_b, target, (state_a, state_b), tuple(la))
    return draw, va, vb


DIFF = [k for k, item in enumerate(FIXTURE["items"]) if draw_of(item)[1] != draw_of(item)[2]]


def test_the_fixture_holds_both_members_of_the_papers_scored_half():
    values = [draw_of(FIXTURE["items"][k])[1:] for k in DIFF]
    assert len(FIXTURE["items"]) == 10 and values.count(("ONLINE", "OFFLINE")) == 4
    assert values.count(("OFFLINE", "ONLINE")) == 2  # member B's geometry, its budget after Sb


@pytest.mark.parametrize("k", DIFF)
@pytest.mark.parametrize("paper_leaf", sorted(LEAVES))
def test_matbench_renders_the_papers_draws_identically_up_to_the_source_budgets(k, paper_leaf):
    item = FIXTURE["items"][k]
    draw, va, vb = draw_of(item)
    pair = build(draw, f"parity-{k}", LEAVES[paper_leaf])
    member = 0 if va == "ONLINE" else 1  # member A: va ONLINE, vb OFFLINE; B the reverse
    assert pair.member(member).events[SOURCE_A].endswith(va) and pair.member(member).events[SOURCE_B].endswith(vb)
    assert trajectory(pair, member) == budget_shifts(pair, member, item["prefill"][paper_leaf])
    ours, paper = served(pair, "edge", member, "trace"), item["serves"][paper_leaf]
    assert ours["rows"] == budget_shifts(pair, member, paper["rows"])
    assert ours["query"] == paper["query"]
    assert paper["call"] == "greedy_pos" and paper["max_tokens"] == 160
    # the edge arm's donor values are the referenced chain's, so `follow` is the paper's tracking
    referenced = va if paper_leaf == "LA" else vb
    assert pair.arm_values(pair.arm("edge"))[member] == referenced


def test_the_check_can_fail():
    draw, va, _ = draw_of(FIXTURE["items"][DIFF[0]])
    member = 0 if va == "ONLINE" else 1
    swapped = build(draw, "parity-x", "b")  # the other leaf against LA's recording
    paper = FIXTURE["items"][DIFF[0]]["serves"]["LA"]
    assert served(swapped, "edge", member, "trace")["rows"] != budget_shifts(swapped, member, paper["rows"])
    moved = build(dataclasses.replace(draw, decoy_states=draw.decoy_states[::-1]), "parity-y", "a")
    assert (
        trajectory(moved, member) != budget_shifts(moved, member, FIXTURE["items"][DIFF[0]]["prefill"]["LA"])
        or draw.decoy_states[0] == draw.decoy_states[1]
    )


def test_the_papers_own_draws_for_its_seed_are_the_recorded_items():
    """`matbench show --suite edge_swap --paper-seed`: kv_causal's stream reproduced (each item's
    Part A passed over), its Part B items rendered as the fixture pins them, not read back from it."""
    from matbench.data_gen import SUITES

    paper = SUITES.get("edge_swap").paper
    assert (paper.script, paper.seed) == ("kv_causal", 3900)
    pairs = paper.items(paper.seed, 2 * len(FIXTURE["items"]))
    assert len(pairs) == 2 * len(FIXTURE["items"])
    for k in DIFF:
        item = FIXTURE["items"][k]
        _, va, _ = draw_of(item)
        member = 0 if va == "ONLINE" else 1
        for offset, paper_leaf in enumerate(("LA", "LB")):
            pair = pairs[2 * k + offset]
            assert pair.item_id == f"paper-kv_causal-s3900-{k:05d}-{LEAVES[paper_leaf]}"
            assert trajectory(pair, member) == budget_shifts(pair, member, item["prefill"][paper_leaf])
            served_rows = served(pair, "edge", member, "trace")["rows"]
            assert served_rows == budget_shifts(pair, member, item["serves"][paper_leaf]["rows"])
    assert paper.items(paper.seed + 1, 1)[0].events != pairs[0].events
