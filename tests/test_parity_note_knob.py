"""Paper parity, note knob: matbench renders kv_noteknob2.py's own draws (recorded in
tests/parity/fixtures/note_knob.json by tests/parity/make_note_knob.py) byte for byte, per
setting (bin2, num, verdict) and variant (note, filler): the member whose gold is the paper's, its
whole prefill up to the source's position budget, harv_drop's and harv_complete's served rows and
query with their 12-token budget, and the sel_txt and full_txt text prompts.

The paper's draws are read back from its prefill; the other member's value is one matbench could
pair with it (bin2: the other state; num: a number with another first digit; verdict: an operand
on the other side of the threshold). Only bin2's source changes length across members (ONLINE is
one character shorter than OFFLINE): there every position after the source moves by its budget."""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.base import REGISTER_POOL, STATES
from matbench.data_gen.note_knob import DOWNSTREAM_AT, FILL_T, KINDS, NOTE_T, SETTINGS, VERDICTS, NoteDraw, build
from tests.parity.compare import EVENT, budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("note_knob")
SOURCE = {
    "bin2": r"register (\w+) set to state (\w+)",
    "num": r"register (\w+) initialized to (\d+)",
    "verdict": r"sensor (\w+) measured (\d+); the alert threshold is (\d+)",
}
CASES = [(k, kind) for k in range(len(FIXTURE["items"])) for kind in KINDS]


def bodies_of(runs) -> list[str]:
    bodies = [body for _, body in EVENT.findall("".join(t for t, _ in runs))]
    assert len(bodies) == 24
    return bodies


def draw_of(item: dict, kind: str = "note") -> tuple[NoteDraw, int, str]:
    """The paper's draws read back from its prefill of `kind`: (draw, the member whose gold is the
    paper's, that gold)."""
    setting, bodies = item["setting"], bodies_of(item["variants"][kind]["prefill"])
    source = next(i for i in range(1, DOWNSTREAM_AT) if re.fullmatch(SOURCE[setting], bodies[i]))
    found = re.fullmatch(SOURCE[setting], bodies[source]).groups()
    source_reg, value = found[0], found[1]
    if setting == "verdict":
        decoy_reg = re.fullmatch(r"sensor (\w+) logged a routine idle reading", bodies[0]).group(1)
        assert bodies[DOWNSTREAM_AT] == f"the operator reviewed sensor {source_reg} against the alert threshold"
        target = next(r for r in REGISTER_POOL if r not in (decoy_reg, source_reg))  # kv_noteknob2 never shows T
        threshold = int(found[2])
        gold = VERDICTS[0] if int(value) > threshold else VERDICTS[1]
        values = (value, "100") if gold == VERDICTS[0] else ("998", value)  # (above, below) the threshold
        draw = NoteDraw(setting, decoy_reg, source_reg, target, values, "", threshold, source, tuple(bodies))
        return draw, VERDICTS.index(gold), gold
    target, copied = re.fullmatch(r"register (\w+) copied from register (\w+)", bodies[DOWNSTREAM_AT]).groups()
    assert copied == source_reg
    if setting == "bin2":
        decoy_reg, decoy = re.fullmatch(r"register (\w+) set to state (\w+)", bodies[0]).groups()
        draw = NoteDraw(setting, decoy_reg, source_reg, target, STATES, decoy, 0, source, tuple(bodies))
        return draw, STATES.index(value), value
    decoy_reg, decoy = re.fullmatch(r"register (\w+) initialized to (\d+)", bodies[0]).groups()
    other = next(str(n) for n in range(100, 999) if str(n)[0] != value[0] and str(n) != decoy)
    return NoteDraw(setting, decoy_reg, source_reg, target, (value, other), decoy, 0, source, tuple(bodies)), 0, value


@pytest.mark.parametrize("k,kind", CASES, ids=[f"{FIXTURE['items'][k]['setting']}-{k}-{kind}" for k, kind in CASES])
def test_matbench_renders_the_papers_draws_identically_up_to_the_source_budget(k, kind):
    item = FIXTURE["items"][k]
    recorded = item["variants"][kind]
    draw, member, gold = draw_of(item, kind)
    pair = build(draw, f"parity-{k}", kind)
    pair.validate()
    assert pair.values[member] == gold
    assert trajectory(pair, member) == budget_shifts(pair, member, recorded["prefill"])
    for arm in ("harv_drop", "harv_complete"):
        ours, paper = served(pair, arm, member, "short"), recorded["serves"][arm]
        assert paper["call"] == "greedy_pos"
        assert ours["rows"] == budget_shifts(pair, member, paper["rows"]) and ours["query"] == paper["query"]
        assert pair.arm(arm).budget == paper["max_tokens"] == 12
    for arm in ("sel_txt", "full_txt"):
        paper = recorded["serves"][arm]
        assert paper["call"] == "greedy" and paper["rows"] == []  # a plain text prompt, contiguous from 0
        assert text_prompt(pair, arm, "short", member) == paper["query"]
        assert pair.arm(arm).budget == paper["max_tokens"] == 12


def test_the_fixture_holds_every_setting_both_golds_and_the_papers_knob_texts():
    items = FIXTURE["items"]
    assert [it["setting"] for it in items] == [s for s in SETTINGS for _ in range(3)]
    for setting in ("bin2", "verdict"):
        assert {draw_of(it)[2] for it in items if it["setting"] == setting} == set(
            STATES if setting == "bin2" else VERDICTS
        )
    for item in items:
        draw, _, _ = draw_of(item)
        note, filler = (bodies_of(item["variants"][kind]["prefill"]) for kind in KINDS)
        # kv_noteknob2's two variants differ in slot m+1 only: its note, or the neutral filler.
        assert [i for i in range(24) if note[i] != filler[i]] == [draw.source + 1]
        assert note[draw.source + 1] == NOTE_T[item["setting"]].format(S=draw.source_reg)
        assert filler[draw.source + 1] == FILL_T
        if item["setting"] == "bin2":  # the paper's decoy always states the negation of the gold
            assert draw.decoy_value != draw_of(item)[2]


def test_the_check_can_fail():
    item = FIXTURE["items"][0]  # bin2
    draw, member, _ = draw_of(item)
    paper = item["variants"]["note"]
    # The filler where the paper has its note.
    assert trajectory(build(draw, "x", "filler"), member) != budget_shifts(
        build(draw, "x", "note"), member, paper["prefill"]
    )
    pair = build(draw, "y", "note")
    # The other member (the budget then shifts nothing: its source is the longer).
    assert trajectory(pair, 1 - member) != budget_shifts(pair, 1 - member, paper["prefill"])
    # A source one slot later moves the knob and every later position.
    moved = build(dataclasses.replace(draw, source=draw.source + 1), "z", "note")
    assert "".join(t for t, _ in trajectory(moved, member)) != "".join(t for t, _ in paper["prefill"])
    # harv_drop without the knob's rows; harv_complete's source left out.
    arm = pair.arm("harv_drop")
    bare = dataclasses.replace(pair, arms=(dataclasses.replace(arm, served=(0, DOWNSTREAM_AT)),))
    assert served(bare, "harv_drop", member, "short")["rows"] != budget_shifts(
        pair, member, paper["serves"]["harv_drop"]["rows"]
    )
    assert served(pair, "harv_drop", member, "short")["rows"] != budget_shifts(
        pair, member, paper["serves"]["harv_complete"]["rows"]
    )
    # bin2's own answer instruction replaced by the readouts' menu suffix.
    menu = dataclasses.replace(pair, arms=(dataclasses.replace(arm, open_question=False),))
    assert served(menu, "harv_drop", member, "short")["query"] != paper["serves"]["harv_drop"]["query"]
    # verdict asked without the menu (an open question): the paper's "Answer EXCEEDED or NORMAL:" is lost.
    verdict = FIXTURE["items"][6]
    vdraw, vmember, _ = draw_of(verdict)
    vpair = build(vdraw, "v", "note")
    open_arm = dataclasses.replace(vpair.arm("sel_txt"), open_question=True)
    assert (
        text_prompt(dataclasses.replace(vpair, arms=(open_arm,)), "sel_txt", "short", vmember)
        != verdict["variants"]["note"]["serves"]["sel_txt"]["query"]
    )
