"""Paper parity, access: matbench renders the paper's own draws (kv_sweepmenu.py and kv_digit.py,
recorded in tests/parity/fixtures/access.json by tests/parity/make_access.py) byte for byte.

For each recorded item, matbench builds the pair from the same draws (register names, source slot,
values, decoy, fillers, read back from the recorded texts) with `data_gen.access.build`, taking the
paper's value as member A's donor, and compares member A with the paper's single trajectory:
the whole global prefill, the isolated re-encodings (sel_ikv), the served rows of every arm, the
text prompts of the text arms, and each question with its readout suffix and chat tail.

Where the designs differ, the test says so and checks the difference is exactly that:
- the position budget: a donor pair reserves the longer member's source length, so when the
  paper's value is the shorter one (ONLINE vs OFFLINE, EAST vs NORTH) every position after the
  source sits `budget - len(source)` later in matbench; positions before it are identical;
- kv_sweepmenu's two-word menu reads " Answer ONLINE, or OFFLINE:" (its `menu()` joins with a
  serial comma even for two words); matbench's menu phrase has no comma for two words;
- kv_sweepmenu generates 10 tokens, matbench's short readout 12 (both take the first menu word);
- kv_digit's `txt` arm serves every row of the joint prefill; matbench's `full_txt` re-prefills
  the same text at the same contiguous positions (a causal prefill of the same ids: the same rows).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from matbench.data_gen.access import CARRIER_AT, DECOY_AT, POOLS, AccessDraw, build
from matbench.engine.cache import EventCache, text_layout
from matbench.engine.layout import layout_pair
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, fixture, served, shifted, trajectory
from tests.parity.recorder import _runs

FIXTURE = fixture("access")
SWEEP = FIXTURE["scripts"]["kv_sweepmenu"]["items"]
DIGIT = FIXTURE["scripts"]["kv_digit"]["items"]
DIGIT_ARMS = {"exact": "short", "above500": "probe", "first_digit": "probe"}  # kv_digit's read of each question


def _text(runs) -> str:
    return "".join(t for t, _ in runs)


def _bodies(runs) -> list[str]:
    bodies = [body for _, body in EVENT.findall(_text(runs))]
    assert len(bodies) == 24
    return bodies


def sweep_draw(item: dict) -> AccessDraw:
    """kv_sweepmenu's draws, read back from its prefill; member B's donor is the next pool word
    (so the fixture holds both budget cases: the paper's value the longer, and the shorter)."""
    bodies = _bodies(item["prefill"])
    decoy_reg, decoy_value = re.fullmatch(r"register (\w+) set to state (\w+)", bodies[DECOY_AT]).groups()
    target, source_reg = re.fullmatch(r"register (\w+) copied from register (\w+)", bodies[CARRIER_AT]).groups()
    source = next(i for i in range(1, CARRIER_AT) if bodies[i].startswith(f"register {source_reg} set to state "))
    gold = bodies[source].rsplit(" ", 1)[1]
    pool = POOLS[item["setting"]]
    other = pool[(pool.index(gold) + 1) % len(pool)]
    return AccessDraw(item["setting"], decoy_reg, source_reg, target, (gold, other), decoy_value, source, tuple(bodies))


def digit_draw(item: dict) -> AccessDraw:
    """kv_digit's draws, read back from its prefill; member B's number is on the other side of 500."""
    bodies = _bodies(item["prefill"])
    decoy_reg = re.fullmatch(r"register (\w+) completed a routine self-test", bodies[DECOY_AT]).group(1)
    target, source_reg = re.fullmatch(r"register (\w+) mirrors register (\w+)", bodies[CARRIER_AT]).groups()
    source = next(i for i in range(1, CARRIER_AT) if bodies[i].startswith(f"register {source_reg} refreshed to "))
    value = bodies[source].rsplit(" ", 1)[1]
    return AccessDraw(
        "digit3",
        decoy_reg,
        source_reg,
        target,
        (value, "250" if int(value) > 500 else "750"),
        "",
        source,
        tuple(bodies),
    )


def _gap(pair: DonorPair, item: dict) -> tuple[int, int]:
    """(first paper position after the source event, positions matbench skips there)."""
    text = _text(item["prefill"])
    after = text.index(f"<step {pair.source + 2}>\n")  # character tokens at contiguous positions from 0
    layout = layout_pair(pair, RENDERER)
    lo, hi = layout.members[0].event_spans[pair.source]
    return after, layout.budget - (hi - lo)


def isolated(pair: DonorPair, event: int, member: int = 0):
    """What matbench's isolated encoding prefills for `event` (engine.cache.isolated_cache): the
    header, then the event's ids at its original positions."""
    m = layout_pair(pair, RENDERER).members[member]
    (h0, h1), (lo, hi) = m.header_span, m.event_spans[event]
    ids = list(m.input_ids[h0:h1]) + list(m.input_ids[lo:hi])
    positions = list(m.positions[h0:h1]) + list(m.positions[lo:hi])
    return [[t, p] for t, p in _runs(ids, positions)]


def text_prompt(pair: DonorPair, arm_name: str, readout: str, member: int = 0) -> str:
    """A text arm's whole prompt: the header and served events re-prefilled at contiguous
    positions (engine.cache.text_layout, asserted contiguous), then the query."""
    arm = next(a for a in pair.arms if a.name == arm_name)
    m = layout_pair(pair, RENDERER).members[member]
    joint = EventCache((), (), torch.tensor(m.positions, dtype=torch.long), m.header_span, m.event_spans, 0)
    ids, placed = text_layout(joint, m, arm.served)
    header = list(m.input_ids[slice(*m.header_span)])
    assert placed.positions.tolist() == list(range(len(header) + len(ids)))
    return RENDERER.tokenizer.decode(header + ids) + RENDERER.arm_query(pair, arm, READOUTS.get(readout))


def paper_menu(query: str) -> str:
    """kv_sweepmenu's menu phrase as matbench words it (no comma between two words)."""
    return query.replace(" Answer ONLINE, or OFFLINE:", " Answer ONLINE or OFFLINE:")


@pytest.mark.parametrize("k", range(len(SWEEP)), ids=[f"{it['setting']}-{k}" for k, it in enumerate(SWEEP)])
def test_sweepmenu_items_render_identically(k):
    item = SWEEP[k]
    pair = build(sweep_draw(item), f"parity-sweep-{k}")
    pair.validate()
    after, gap = _gap(pair, item)
    # The whole prefill: the same text; positions equal before the source, `gap` later after it.
    assert trajectory(pair, 0) == shifted(item["prefill"], after, gap)
    assert _text(trajectory(pair, 0)) == _text(item["prefill"])
    # sel_ikv: header + one served event at its original positions, one encoding per event.
    assert [isolated(pair, i) for i in (DECOY_AT, CARRIER_AT)] == [shifted(e, after, gap) for e in item["isolated"]]
    for arm in ("harv_kv", "sel_ikv"):
        ours, paper = served(pair, arm, 0, "short"), item["serves"][arm]
        assert ours["rows"] == shifted(paper["rows"], after, gap)
        assert ours["query"] == paper_menu(paper["query"])
        assert paper["max_tokens"] == 10 and READOUTS.get("short").max_new_tokens == 12
    for arm in ("sel_txt", "full_txt"):
        assert item["serves"][arm]["rows"] == []  # a plain text prompt, contiguous from 0
        assert text_prompt(pair, arm, "short") == paper_menu(item["serves"][arm]["query"])
    if item["setting"] == "bin2":
        assert item["serves"]["harv_kv"]["query"] != served(pair, "harv_kv", 0, "short")["query"]
    else:
        assert item["serves"]["harv_kv"]["query"] == served(pair, "harv_kv", 0, "short")["query"]


def test_the_fixture_holds_both_budget_cases_and_the_papers_register_names():
    gaps = [_gap(build(sweep_draw(it), "x"), it)[1] for it in SWEEP]
    assert 0 in gaps and any(g > 0 for g in gaps)
    # kv_sweepmenu draws name8 items whose registers are menu words; matbench's draw does not, but
    # its build renders them alike.
    draws = [sweep_draw(it) for it in SWEEP if it["setting"] == "name8"]
    assert any({d.decoy_reg, d.source_reg, d.target} & set(POOLS["name8"]) for d in draws)


@pytest.mark.parametrize("k", range(len(DIGIT)))
def test_digit_items_render_identically(k):
    item = DIGIT[k]
    pair = build(digit_draw(item), f"parity-digit-{k}")
    pair.validate()
    assert (int(pair.values[0]) > 500) == (k % 2 == 0)  # kv_digit: even items above 500
    assert trajectory(pair, 0) == item["prefill"]  # three digits in both members: no gap
    for question, readout in DIGIT_ARMS.items():
        paper = item["serves"][f"kv/{question}"]
        ours = served(pair, f"harv_kv/{question}", 0, readout)
        assert ours["rows"] == paper["rows"] and ours["query"] == paper["query"]
        if readout == "probe":
            assert paper["call"] == "probe" and tuple(paper["candidates"]) == pair.arm_menu(
                pair.arm(f"harv_kv/{question}")
            )
        else:
            assert paper["call"] == "greedy_pos" and paper["max_tokens"] == READOUTS.get(readout).max_new_tokens == 12
        # txt: every row of the joint prefill, contiguous; matbench's full_txt re-reads the same text.
        paper = item["serves"][f"txt/{question}"]
        assert [p for _, p in paper["rows"]] == [[0, len(_text(paper["rows"])) - 1]]
        assert text_prompt(pair, f"full_txt/{question}", readout) == _text(paper["rows"]) + paper["query"]


def test_the_check_can_fail():
    # matbench v1's digit3 carrier ("copied from") is not what kv_digit serves.
    item = DIGIT[0]
    pair = build(digit_draw(item), "parity-x")
    events = list(pair.events)
    events[CARRIER_AT] = events[CARRIER_AT].replace(" mirrors ", " copied from ")
    old = dataclasses.replace(pair, events=tuple(events))
    assert served(old, "harv_kv/exact", 0, "short")["rows"] != item["serves"]["kv/exact"]["rows"]
    # A menu appended to kv_digit's open question (v1 asked "> 500?" through the readout's menu).
    arm = dataclasses.replace(
        pair.arm("harv_kv/above500"),
        open_question=False,
        question=pair.arm("harv_kv/above500").question.rsplit("?", 1)[0] + "?",
    )
    menu_pair = dataclasses.replace(pair, arms=(arm,))
    assert served(menu_pair, arm.name, 0, "probe")["query"] != item["serves"]["kv/above500"]["query"]
    # A source one slot later moves every later position and event.
    sweep = SWEEP[0]
    d = sweep_draw(sweep)
    moved = build(dataclasses.replace(d, source=d.source + 1), "parity-y")
    after, gap = _gap(moved, sweep)
    assert trajectory(moved, 0) != shifted(sweep["prefill"], after, gap)
