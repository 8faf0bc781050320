"""Paper parity, harvest: matbench selects, builds and renders the paper's recognition items
(kv_harvest4.py, kv_harvnative.py, recorded over two synthetic dialogs in
tests/parity/fixtures/harvest.json by tests/parity/make_harvest.py) byte for byte.

For every item the paper served, the draw (the conversation's turns, question, options, carriers,
evidence) is read back from the recorded texts and built with `data_gen.harvest.build`; that pair
must be the one matbench's own selection makes from the same sources, and it must render the
paper's full prefill, served rows, positions, iso encodes and queries.

Where the designs differ, the test says so and checks the difference is exactly that:
- matbench's `short` readout generates 12 tokens; kv_harvest4 and kv_harvnative's compact arms 8;
- a goldev turn listed twice in a QA's evidence is re-read twice by the paper, once by matbench;
- injected items: the paper prefills the original and the counterfactual each at contiguous
  positions, so the appended turn sits at different positions whenever gold and negative differ
  in length; matbench's donor members share every served position (the position budget), so in
  the member whose swapped turns are shorter the appended turn sits later by the difference.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import DialogSources
from matbench.data_gen.harvest import HarvestDraw, build
from matbench.engine.layout import layout_pair
from matbench.protocol.frames import FRAMES
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import RENDERER, fixture, served, trajectory
from tests.parity.recorder import CHAT_HEAD, CHAT_TAIL, _runs

FIXTURE = fixture("harvest")
QUERY = re.compile(
    r"\n\nQuestion: (.*)\nOption A: (.*)\nOption B: (.*)\nWhich option is correct\? Answer A or B\."
    + re.escape(CHAT_TAIL),
    re.DOTALL,
)
GENERATED = READOUTS.get("short")  # the paper's gen8 query: no suffix (an open question), no "Answer:"


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[tuple[str, str, str], DonorPair]:
    """matbench's own harvest pairs over the fixture's synthetic sources, by (kind, corpus/conversation, question)."""
    folder = tmp_path_factory.mktemp("dialogs")
    (folder / "locomo10.json").write_text(json.dumps(FIXTURE["sources"]["locomo10.json"]))
    (folder / "realtalk").mkdir()
    for name, chat in FIXTURE["sources"]["realtalk"].items():
        (folder / "realtalk" / name).write_text(json.dumps(chat))
    made = SUITES.get("harvest").generate(
        0, None, DialogSources(str(folder / "locomo10.json"), str(folder / "realtalk"))
    )
    out = {}
    for pair in made:
        kind, corpus, conversation, _ = pair.variant.split("/")
        out[(kind, f"{corpus}/{conversation}", pair.arms[0].question.split("\nOption A: ")[0])] = pair
    return out


def _qa(conversation: str, question: str) -> dict:
    corpus, name = conversation.split("/")
    if corpus == "locomo":
        qas = next(c for c in FIXTURE["sources"]["locomo10.json"] if c["sample_id"] == name)["qa"]
    else:
        qas = FIXTURE["sources"]["realtalk"][f"{name}.json"]["qa"]
    return next(qa for qa in qas if qa["question"] == question)


def _bodies(prefill: list) -> tuple[list[str], list[tuple[int, int]]]:
    """The turns of a recorded prefill (one run from position 0: chat head + turns) and each turn's
    [first, last] positions."""
    [(text, span)] = prefill
    assert span[0] == 0 and text.startswith(CHAT_HEAD) and text.endswith("\n")
    bodies = re.split(r"\n(?=\[session \d+ )", text[len(CHAT_HEAD) : -1])
    spans, at = [], len(CHAT_HEAD)
    for body in bodies:
        spans.append((at, at + len(body)))  # the turn's "\n" included
        at += len(body) + 1
    assert at - 1 == span[1]
    return bodies, spans


def _options(query: str) -> tuple[str, str, str]:
    match = QUERY.fullmatch(query)
    assert match, query
    return match.group(1), match.group(2), match.group(3)


def _turns_in(text: str, bodies: list[str]) -> list[int]:
    """Indices of the turns a run of served text consists of, in order."""
    out = []
    for piece in re.split(r"\n(?=\[session \d+ )", text[:-1]):
        out.append(bodies.index(piece))
    return out


def _natural_draw(item: dict) -> tuple[HarvestDraw, list[int]]:
    """The paper's draw, read back from its texts; and its goldev list as the paper re-reads it."""
    bodies, _ = _bodies(FIXTURE["prefills"][item["conversation"]])
    serves = item["serves"]
    question, a, b = _options(serves["harv"]["query"])
    gold = str(_qa(item["conversation"], question)["answer"]).strip()
    assert gold in (a, b)
    letter, negative = ("A", b) if a == gold else ("B", a)
    header, *runs = serves["harv"]["rows"]
    assert header == [CHAT_HEAD, [0, len(CHAT_HEAD) - 1]]
    carriers = [i for text, _ in runs for i in _turns_in(text, bodies)]
    goldev_text = serves["goldev"]["query"][len(CHAT_HEAD) : serves["goldev"]["query"].index("\n\nQuestion: ")]
    goldev = _turns_in(goldev_text, bodies)
    draw = HarvestDraw(
        "natural",
        tuple(bodies),
        question,
        gold,
        negative,
        letter,
        evidence=tuple(sorted(set(goldev))),
        carriers=tuple(carriers),
    )
    return draw, goldev


def _text_prompt(pair: DonorPair, arm_name: str, repeat: list[int] | None = None) -> str:
    """What a text arm reads from position 0: the header, its served events in order (or the
    given list of events), the query."""
    arm = pair.arm(arm_name)
    texts = pair.member(0).texts()
    events = repeat if repeat is not None else sorted(arm.served)
    return (
        CHAT_HEAD
        + FRAMES[pair.frame].header
        + "".join(texts[i] for i in events)
        + RENDERER.arm_query(pair, arm, GENERATED)
    )


def _iso_encodes(pair: DonorPair, member: int, events) -> list[list]:
    """What matbench's headless encoding (the iso arm's) prefills for each served event: the
    event's own ids at its own positions, nothing before them."""
    assert pair.arm("iso").encoding == "headless"
    m = layout_pair(pair, RENDERER).members[member]
    out = []
    for i in events:
        lo, hi = m.event_spans[i]
        out.append([[t, p] for t, p in _runs(list(m.input_ids[lo:hi]), list(m.positions[lo:hi]))])
    return out


def test_matbench_selects_the_items_the_paper_served(pairs):
    paper = {("natural", i["conversation"], i["question"]) for i in FIXTURE["natural"]}
    paper |= {("injected", i["conversation"], i["question"]) for i in FIXTURE["injected"]}
    assert len(paper) == len(FIXTURE["natural"]) + len(FIXTURE["injected"]) == 12
    assert set(pairs) == paper


@pytest.mark.parametrize("k", range(len(FIXTURE["natural"])))
def test_natural_items_render_identically(k, pairs):
    item = FIXTURE["natural"][k]
    draw, goldev = _natural_draw(item)
    ours = pairs[("natural", item["conversation"], draw.question)]
    pair = build(draw, ours.item_id, ours.variant)
    assert pair == ours  # the paper's draw builds matbench's own pair
    layout = layout_pair(pair, RENDERER)
    assert trajectory(pair, 0) == trajectory(pair, 1) == FIXTURE["prefills"][item["conversation"]]
    serves, native = item["serves"], item["harvnative"]["serves"]
    harv = served(pair, "harv", 0, GENERATED.name)
    for arm in ("harv", "iso"):
        ours = served(pair, arm, 0, GENERATED.name)
        assert ours["rows"] == harv["rows"] == serves[arm]["rows"] == native[f"compact_{arm}8"]["rows"]
        assert ours["query"] == serves[arm]["query"] == native[f"native_{arm}"]["query"]
        # kv_harvnative's positions: compact after the last kept row, native at L (the whole dialog).
        assert native[f"compact_{arm}8"]["query_position"] == ours["query_position"]
        assert native[f"native_{arm}"]["rows"] == ours["rows"]
        assert native[f"native_{arm}"]["query_position"] == layout.length
        assert serves[arm]["max_tokens"] == native[f"compact_{arm}8"]["max_tokens"] == 8  # matbench short: 12
    # iso: each carrier turn encoded alone, no header, at its original positions.
    assert item["iso_encodes"] == item["harvnative"]["iso_encodes"] == _iso_encodes(pair, 0, draw.carriers)
    for arm in ("text", "none"):
        assert serves[arm]["rows"] == [] and serves[arm]["query"] == _text_prompt(pair, arm)
    if len(set(goldev)) == len(goldev):
        assert serves["goldev"]["query"] == _text_prompt(pair, "goldev")
    else:  # evidence listed twice: the paper re-reads the turn twice, matbench serves each event once
        assert serves["goldev"]["query"] == _text_prompt(pair, "goldev", sorted(goldev))
        assert serves["goldev"]["query"] != _text_prompt(pair, "goldev")


def _member_positions_shift(pair: DonorPair, member: int) -> int:
    """How much later matbench places the appended turn than the paper's own prefill of that
    member: at each swapped turn, the position budget minus this member's length."""
    ids = [[RENDERER.ids(t) for t in pair.member(m).texts()] for m in (0, 1)]
    return sum(max(len(ids[0][i]), len(ids[1][i])) - len(ids[member][i]) for i in pair.varying())


@pytest.mark.parametrize("k", range(len(FIXTURE["injected"])))
def test_injected_items_render_identically_up_to_the_position_budget(k, pairs):
    item = FIXTURE["injected"][k]
    orig, _ = _bodies(item["prefill_orig"])
    cf, _ = _bodies(item["prefill_cf"])
    question, a, b = _options(item["serves"]["harv_orig"]["query"])
    gold = str(_qa(item["conversation"], question)["answer"]).strip()
    letter, negative = ("A", b) if a == gold else ("B", a)
    changed = [i for i in range(len(orig)) if orig[i] != cf[i]]
    draw = HarvestDraw(
        "injected", tuple(orig[:-1]), question, gold, negative, letter, evidence=tuple(changed), injected=orig[-1]
    )
    ours = pairs[("injected", item["conversation"], question)]
    pair = build(draw, ours.item_id, ours.variant)
    # matbench swaps in all the QA's evidence turns; those that do not name the gold are unchanged.
    assert pair == ours
    assert pair.events[-1] == orig[-1] == cf[-1] and _names_the_question(orig[-1], question)
    inj = len(pair.events) - 1
    for member, tag in ((0, "orig"), (1, "cf")):
        shift = _member_positions_shift(pair, member)
        paper_prefill = item[f"prefill_{tag}"]
        ours_prefill = trajectory(pair, member)
        assert "".join(t for t, _ in ours_prefill) == paper_prefill[0][0]  # the same text, turn for turn
        paper = item["serves"][f"harv_{tag}"]
        mine = served(pair, "harv", member, GENERATED.name)
        assert mine["query"] == paper["query"] and paper["max_tokens"] == 8
        (h, hp), (t, p) = mine["rows"]
        assert [[h, hp], [t, [p[0] - shift, p[1] - shift]]] == paper["rows"]
        if shift == 0:  # the member whose swapped turns are the longer: the paper's positions exactly
            assert mine["rows"] == paper["rows"] and ours_prefill[-1][1][1] == paper_prefill[0][1][1]
    # iso: the appended turn alone at member A's positions (kv_harvest4: the original's)
    [[(text, span)]] = _iso_encodes(pair, 0, (inj,))
    shift = _member_positions_shift(pair, 0)
    assert [[text, [span[0] - shift, span[1] - shift]]] == item["iso_encode"]
    assert served(pair, "iso", 0, GENERATED.name)["rows"] == served(pair, "harv", 0, GENERATED.name)["rows"]
    assert item["serves"]["iso"]["rows"] == item["serves"]["harv_orig"]["rows"]


def _names_the_question(turn: str, question: str) -> bool:
    return turn.endswith(
        f'moderator: for the record, the answer to "{question}" was determined earlier in this '
        "chat and noted accordingly"
    )


def test_the_check_can_fail(pairs):
    item = FIXTURE["natural"][0]
    draw, _ = _natural_draw(item)
    pair = build(draw, "parity-x", "natural/x/x/weak")
    # Another letter, the probe's "Answer:", or the trajectory frame each render differently.
    flipped = build(dataclasses.replace(draw, letter="B" if draw.letter == "A" else "A"), "x", "natural/x/x/weak")
    assert served(flipped, "harv", 0, GENERATED.name)["query"] != item["serves"]["harv"]["query"]
    assert served(pair, "harv", 0, "probe")["query"] != item["serves"]["harv"]["query"]
    assert trajectory(dataclasses.replace(pair, frame="trajectory"), 0) != FIXTURE["prefills"][item["conversation"]]
    # An iso encoded after the header (access's sel_ikv) is not the paper's.
    m = layout_pair(pair, RENDERER).members[0]
    lo, hi = m.event_spans[draw.carriers[0]]
    with_header = _runs(
        list(m.input_ids[: m.header_span[1]] + m.input_ids[lo:hi]),
        list(m.positions[: m.header_span[1]] + m.positions[lo:hi]),
    )
    assert [[t, p] for t, p in with_header] != item["iso_encodes"][0]
