"""Paper parity, decoy audit: matbench renders kv_decoyctl2.py's own draws (recorded in
tests/parity/fixtures/decoy_audit.json by tests/parity/make_decoy_audit.py) byte for byte, for
each decoy mode: the member whose gold is the paper's, its whole prefill up to the source's position
budget, harv_kv's and sel_ikv's served rows and query, and the sel_txt and full_txt text prompts.
kv_decoyctl2 decodes 8 tokens and takes the first state word; matbench's `short` decodes 12."""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.access import CARRIER_AT, DECOY_AT
from matbench.data_gen.decoy_audit import MODES, DecoyDraw, build
from matbench.engine.layout import layout_pair
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("decoy_audit")


def draw_of(item: dict) -> tuple[DecoyDraw, str]:
    """The paper's draws and gold, read back from its prefill."""
    bodies = [body for _, body in EVENT.findall("".join(t for t, _ in item["prefill"]))]
    assert len(bodies) == 24
    target, source_reg = re.fullmatch(r"register (\w+) copied from register (\w+)", bodies[CARRIER_AT]).groups()
    source = next(i for i in range(1, CARRIER_AT) if bodies[i].startswith(f"register {source_reg} set to state "))
    gold = bodies[source].rsplit(" ", 1)[1]
    decoy = re.fullmatch(r"register (\w+) (?:set to state (\w+)|completed a routine self-test)", bodies[DECOY_AT])
    fillers = tuple("" if i in (DECOY_AT, source, CARRIER_AT) else b for i, b in enumerate(bodies))
    return DecoyDraw(decoy.group(1), source_reg, target, decoy.group(2) or "ONLINE", source, fillers), gold


def gaps(pair, member: int) -> list[int]:
    """Positions matbench's budgets skip after each donor-dependent slot of `member`: ONLINE is one
    character shorter than OFFLINE (the source; an opposite decoy too)."""
    return [1 if pair.member(member).events[slot].endswith(" ONLINE") else 0 for slot in sorted(pair.varying())]


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_draws_identically_up_to_the_source_budget(k):
    item = FIXTURE["items"][k]
    draw, gold = draw_of(item)
    pair = build(draw, f"parity-{k}", item["mode"])
    member = ("ONLINE", "OFFLINE").index(gold)
    layout = layout_pair(pair, RENDERER).members[member]
    skipped = [
        max(b - a for a, b in (x.event_spans[s] for x in layout_pair(pair, RENDERER).members))
        - (layout.event_spans[s][1] - layout.event_spans[s][0])
        for s in sorted(pair.varying())
    ]
    assert skipped == gaps(pair, member)
    assert trajectory(pair, member) == budget_shifts(pair, member, item["prefill"])
    for arm in ("harv_kv", "sel_ikv"):
        ours, paper = served(pair, arm, member, "short"), item["serves"][arm]
        assert ours["rows"] == budget_shifts(pair, member, paper["rows"]) and ours["query"] == paper["query"]
        assert paper["max_tokens"] == 8 and READOUTS.get("short").max_new_tokens == 12
    for arm in ("sel_txt", "full_txt"):
        assert text_prompt(pair, arm, "short", member) == item["serves"][arm]["query"]


def test_the_fixture_holds_every_mode_and_both_golds():
    assert [it["mode"] for it in FIXTURE["items"]] == [m for m in MODES for _ in range(2)]
    golds = {draw_of(it)[1] for it in FIXTURE["items"]}
    assert golds == {"ONLINE", "OFFLINE"}


def test_the_check_can_fail():
    item = FIXTURE["items"][0]  # opposite
    draw, gold = draw_of(item)
    member = ("ONLINE", "OFFLINE").index(gold)
    other = build(draw, "x", "independent" if draw.decoy_value == gold else "none")
    assert trajectory(other, member) != trajectory(build(draw, "y", "opposite"), member)
    moved = build(dataclasses.replace(draw, source=draw.source + 1), "z", "opposite")
    assert "".join(t for t, _ in trajectory(moved, member)) != "".join(t for t, _ in item["prefill"])
