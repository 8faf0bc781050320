"""Paper parity, reference gradient: matbench renders kv_refcarrier.py's own draws (recorded in
tests/parity/fixtures/reference_gradient.json by tests/parity/make_reference_gradient.py) byte for
byte, each step with its own tool call: for the member whose verdict is the paper's gold, the whole
prefill of each carrier up to the verdict's position budget, harv's served rows and query, and sel's
text prompt. kv_refcarrier decodes 10 tokens and takes the first verdict word; matbench's `short`
decodes 12."""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.reference_gradient import CARRIER_AT, DECOY_AT, KINDS, ReferenceDraw, build
from matbench.data_gen.trigger import VERDICTS
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("reference_gradient")
STEP = re.compile(r"<step (\d+)>\naction: (.*)\nobservation: (.*)\n")


def draw_of(item: dict) -> tuple[ReferenceDraw, str]:
    """The paper's draws and gold, read back from its four prefills (the copy carrier names T)."""
    steps = [m.groups()[1:] for m in STEP.finditer("".join(t for t, _ in item["copy"]["prefill"]))]
    assert len(steps) == 24
    decoy = re.fullmatch(r"sensor (\w+) logged a routine idle reading", steps[DECOY_AT][1]).group(1)
    source = next(i for i, (action, _) in enumerate(steps) if action == "read_sensor()")
    sensor, gv, thr = re.fullmatch(
        r"sensor (\w+) measured (\d+); the alert threshold is (\d+)", steps[source][1]
    ).groups()
    gold = re.fullmatch(r"alert check result for sensor \w+: threshold (\w+)", steps[source + 1][1]).group(1)
    target = re.fullmatch(r"register (\w+) recorded the sensor \w+ verdict", steps[CARRIER_AT][1]).group(1)
    gv, thr = int(gv), int(thr)
    other = thr - 30 if gold == "EXCEEDED" else thr + 30  # the pair's other member: not the paper's
    high, low = (gv, other) if gold == "EXCEEDED" else (other, gv)
    fillers = tuple(
        "" if i in (DECOY_AT, source, source + 1, CARRIER_AT) else body for i, (_, body) in enumerate(steps)
    )
    return ReferenceDraw(decoy, sensor, target, thr, high, low, source, fillers), gold


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_draws_identically_up_to_the_verdict_budget(k, kind):
    draw, gold = draw_of(FIXTURE["items"][k])
    paper = FIXTURE["items"][k][kind]
    pair = build(draw, f"parity-{k}", kind)
    member = VERDICTS.index(gold)
    assert trajectory(pair, member) == budget_shifts(pair, member, paper["prefill"])
    ours = served(pair, "harv", member, "short")
    assert ours["rows"] == budget_shifts(pair, member, paper["harv"]["rows"])
    assert ours["query"] == paper["harv"]["query"]
    assert text_prompt(pair, "sel", "short", member) == paper["sel"]["query"]
    assert paper["harv"]["max_tokens"] == 10 and READOUTS.get("short").max_new_tokens == 12


def test_the_fixture_holds_both_golds():
    assert {draw_of(item)[1] for item in FIXTURE["items"]} == set(VERDICTS)


def test_the_check_can_fail():
    draw, gold = draw_of(FIXTURE["items"][0])
    member = VERDICTS.index(gold)
    paper = FIXTURE["items"][0]["state"]
    assert served(build(draw, "x", "outcome"), "harv", member, "short")["rows"] != budget_shifts(
        build(draw, "x", "outcome"), member, paper["harv"]["rows"]
    )
    moved = build(dataclasses.replace(draw, thr=draw.thr + 1), "y", "state")
    assert trajectory(moved, member) != budget_shifts(moved, member, paper["prefill"])
