"""Parity with the paper's programming scripts (kv_mater2.py X9, kv_mater3.py X10).

tests/parity/fixtures/programming.json holds what the paper's own code rendered for fixed seeds
(tests/parity/make_programming.py; never imported here). From those texts this test reads the
draws back (decoy, sensor, target and unrelated names, the unrelated state, threshold, both
operands, the operand's slot, the fillers), builds the matbench pair of each (item, carrier kind)
from the SAME draws with `data_gen.programming.build`, renders it with matbench's Renderer and
layout under the character-level tokenizer, and asserts byte equality of:

- the global prefill of both donor members, positions included (header, 24 events, the operand's
  and the exp carrier's position budgets), where the fixture keeps it (pas and exp);
- every readout call's kept rows, in order, with their original positions: X9's qmain, qunrel
  and qtgt on {decoy, unrelated, carrier, review} (matbench arms both, unrel, tgt_both) and
  X10's three serve sets car / rev / both (arms car, rev, both, tgt_car, tgt_rev, tgt_both);
- the question + readout suffix + chat tail of each: the paper's " Answer EXCEEDED or NORMAL:"
  is matbench's short readout (the probe adds its "Answer:" after the chat tail); qunrel carries
  its own instruction (an open_question arm);
- X9's `sel` text floor: the whole text prompt (header, served events, question, tail), which
  matbench's text encoding lays out at contiguous positions from 0, as the paper's fresh prompt.

Where the designs differ (stated, not asserted equal): X10 generates 48 tokens and X9 12, and
both take the LAST menu word (kv_mater2.pickv); matbench's short readout reads 12 tokens and takes
the first. matbench draws fillers that avoid the two operands (the paper's may repeat one); the
fixture's draws are used as they are. matbench adds car@L, txt and control arms the paper has not.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from matbench.data_gen.programming import ProgrammingDraw, build
from matbench.engine.cache import EventCache, text_layout
from matbench.engine.layout import layout_pair
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, fixture, served, trajectory

FIXTURE = fixture("programming")
SHORT = READOUTS.get("short")
ITEMS = [(script, item) for script, run in FIXTURE["scripts"].items() for item in run["items"]]
ITEM_IDS = [f"{script}-item{item['item']}" for script, item in ITEMS]


def bodies(prefill: list) -> list[str]:
    """The 24 observation bodies of a recorded prefill, by step."""
    text = "".join(t for t, _ in prefill)
    found = EVENT.findall(text[text.index("Trajectory:\n") :])
    assert [int(step) for step, _ in found] == list(range(1, 25))
    return [body for _, body in found]


def cell(item: dict, kind: str, donor: str) -> dict:
    return next(c for c in item["cells"] if c["kind"] == kind and c["donor"] == donor)


def draws(item: dict) -> ProgrammingDraw:
    """The item's draws, read back from the paper's rendered texts."""
    hi, lo = (bodies(cell(item, "pas", d)["prefill"]) for d in ("hi", "lo"))
    decoy = re.fullmatch(r"sensor (\w+) logged a routine idle reading", hi[0]).group(1)
    unrelated, state = re.fullmatch(r"register (\w+) set to state (ONLINE|OFFLINE)", hi[2]).groups()
    operand = r"sensor (\w+) measured (\d+); the alert threshold is (\d+)"
    source = next(i for i, b in enumerate(hi) if re.fullmatch(operand, b))
    sensor, high, threshold = re.fullmatch(operand, hi[source]).groups()
    low = re.fullmatch(operand, lo[source]).group(2)
    qtgt = next(s["query"] for s in cell(item, "bind", "hi")["serves"] if s["question"] == "qtgt")
    target = re.search(r"What verdict is recorded for status register (\w+)\?", qtgt).group(1)
    assert [b for i, b in enumerate(hi) if i != source] == [b for i, b in enumerate(lo) if i != source]
    return ProgrammingDraw(
        decoy, sensor, target, unrelated, state, int(threshold), int(high), int(low), source, tuple(hi)
    )


def arm_name(serve: dict) -> str:
    if serve["question"] == "qunrel":
        return "unrel"
    if serve["set"] == "sel":
        return "sel"
    return ("tgt_" if serve["question"] == "qtgt" else "") + serve["set"]


def sel_prompt(pair, layout, member: int, arm) -> tuple[str, list[int]]:
    """matbench's text-encoded arm as one prompt: the re-prefilled header and served events (at
    the positions `text_layout` gives them) followed by the query."""
    lay = layout.members[member]
    header = lay.input_ids[slice(*lay.header_span)]
    cache = EventCache((), (), torch.tensor(lay.positions), lay.header_span, lay.event_spans, layout.length)
    ids, placed = text_layout(cache, lay, arm.served)
    text = "".join(chr(i) for i in (*header, *ids)) + RENDERER.arm_query(pair, arm, SHORT)
    return text, placed.positions.tolist()


def check_cell(script: str, item: dict, c: dict, pair) -> int:
    """Assert every recorded call of one (kind, donor) against matbench's rendering; the count."""
    member = ("hi", "lo").index(c["donor"])
    if "prefill" in c:
        assert trajectory(pair, member) == c["prefill"]
    for serve in c["serves"]:
        arm = pair.arm(arm_name(serve))
        if serve["call"] == "greedy":  # X9's sel: a fresh text prompt, contiguous positions
            text, positions = sel_prompt(pair, layout_pair(pair, RENDERER), member, arm)
            assert serve["rows"] == [] and text == serve["query"]
            assert positions == list(range(len(positions)))
        else:
            ours = served(pair, arm.name, member, "short")
            assert ours["rows"] == serve["rows"], (arm.name, c["kind"], c["donor"])
            assert ours["query"] == serve["query"], (arm.name, c["kind"])
        # Budgets: X9 generates 12 tokens (matbench's short), X10 48 (see the module docstring).
        assert serve["max_tokens"] == {"kv_mater2": SHORT.max_new_tokens, "kv_mater3": 48}[script]
    return len(c["serves"])


def test_fixture_names_its_source():
    assert next(iter(FIXTURE)) == "notice"
    assert "d80ef7b" in FIXTURE["notice"] and "MIT License" in FIXTURE["notice"]
    assert "kv_mater2.py" in FIXTURE["notice"] and "kv_mater3.py" in FIXTURE["notice"]


@pytest.mark.parametrize(("script", "item"), ITEMS, ids=ITEM_IDS)
def test_matbench_renders_the_papers_item_from_the_same_draws(script, item):
    d = draws(item)
    checked = 0
    for c in item["cells"]:
        pair = build(d, f"programming-parity-{item['item']:05d}", c["kind"], item["template"])
        assert pair.arm("unrel").expected == d.unrelated_state
        checked += check_cell(script, item, c, pair)
    # X9: 5 + 7 + 7 + 5 + 8 calls per item; X10: (3 sets, x2 with qtgt) x 2 donors per kind.
    assert checked == {"kv_mater2": 32, "kv_mater3": 48}[script]


def test_the_papers_probe_free_readout_is_matbench_short_and_the_probe_only_adds_answer_prefix():
    _script, item = ITEMS[0]
    pair = build(draws(item), "x", "nld", item["template"])
    recorded = next(s for s in cell(item, "nld", "hi")["serves"] if s["question"] == "qmain")["query"]
    probe = RENDERER.arm_query(pair, pair.arm("both"), READOUTS.get("probe"))
    assert probe == recorded + "Answer:"  # matbench's forced-position candidate readout


def test_an_altered_rendering_is_caught():
    """The comparison can fail: matbench v1's passive template, its serve set without the decoy
    and the unrelated register, and another readout's suffix all differ from the recording."""
    script, item = next((s, i) for s, i in ITEMS if s == "kv_mater2" and i["template"] == 1)
    d = draws(item)
    pair = build(d, "x", "pas", 1)
    c = cell(item, "pas", "hi")
    check_cell(script, item, c, pair)  # the faithful rendering passes
    both = next(s for s in c["serves"] if s["question"] == "qmain" and s["set"] == "both")
    carrier = d.source + 1
    events = list(pair.events)
    events[carrier] = f"note: sensor {d.sensor} finished its threshold check and the result was filed away"
    v1_text = dataclasses.replace(pair, events=tuple(events))
    assert served(v1_text, "both", 0, "short")["rows"] != both["rows"]
    v1_set = dataclasses.replace(pair, arms=(dataclasses.replace(pair.arm("both"), served=(carrier, 23)),))
    assert served(v1_set, "both", 0, "short")["rows"] != both["rows"]
    assert served(pair, "both", 0, "trace")["query"] != both["query"]
    with pytest.raises(AssertionError):
        check_cell(script, item, c, v1_text)
