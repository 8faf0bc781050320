"""Paper parity, harvest_freeform: matbench selects and renders the paper's free-answer items
(kv_harvest3.py at --win 0, 1 and 2, judged by cross_judge.judge; recorded over the synthetic
dialogs of tests/parity/make_harvest.py in tests/parity/fixtures/harvest_freeform.json by
tests/parity/make_harvest_freeform.py) byte for byte.

For every QA and window the paper served, matbench's own `harvest_freeform` rows over the same
sources must name the same QA, carriers and window units, and its pair must render the paper's
full prefill, the harv rows and positions, the iso arm's encodes (each run of consecutive units
encoded together, nothing before it, at its original positions: the engine's own `headless_runs`
encoding, run through `PairEngine.derived_caches`), the text/none/goldev prompts, the query (the
question, then "Answer with as few words as possible (a name, a date, a short phrase).", 24
tokens) and the judge's prompt (`matbench.run.judge.judge_request` inside the judge model's chat
head and tail, 6 tokens, as `Judge.grade` feeds it).

Where the designs differ, the test says so and checks the difference is exactly that:
- a goldev turn listed twice in a QA's evidence is re-read twice by the paper, once by matbench
  (as in tests/test_parity_harvest.py).
- the text arms (none, text, goldev): the paper tokenizes `head + body + question` in one shot,
  matbench re-prefills the header and turns, then the query as its own piece (README, design
  notes: "text arms (none, text, goldev) are tokenized piecewise"). The texts are the same, which
  is what is checked here; the character-level stand-in cannot show the token merge at the
  boundary (a BPE tokenizer such as Qwen's reads the last turn's "\n" and the question's "\n\n"
  as one token in the paper's prompt, as two in matbench's).

The judge's candidate answer is the decoded text stripped, as the paper's `HFBackend._greedy` /
`_greedy_pos` return it (`decode(...).strip()`): an answer decoded with surrounding whitespace is
judged inside the paper's very prompt.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import ClassVar

import pytest
import torch

from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import DialogSources, load_sources
from matbench.data_gen.harvest_freeform import ANSWER_TOKENS, INSTRUCTION, WINDOWS
from matbench.engine import pair_engine
from matbench.engine.cache import EventCache, text_layout
from matbench.engine.layout import layout_pair
from matbench.engine.pair_engine import PairEngine
from matbench.protocol.frames import FRAMES
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import READOUTS
from matbench.protocol.records import ArmRecord, PairRecord
from matbench.run.judge import JUDGE_TOKENS, Judge, judge_request
from tests.parity.compare import RENDERER, fixture, served, trajectory
from tests.parity.recorder import CHAT_HEAD, CHAT_TAIL, _runs

FIXTURE = fixture("harvest_freeform")
SUITE = SUITES.get("harvest_freeform")
GENERATED = READOUTS.get("short")  # the suite's readout; every arm is an open question with its own budget
ITEMS = FIXTURE["items"]
PAPER_INSTRUCTION = "Answer with as few words as possible (a name, a date, a short phrase)."  # kv_harvest3 INSTR
JUDGED = ("none", "text", "iso", "harv", "goldev")  # the order kv_harvest3 judges its arms in
TURN_BREAK = re.compile(r"\n(?=\[session \d+ )")


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> DialogSources:
    """The fixture's synthetic sources, written as a user's copies."""
    folder = tmp_path_factory.mktemp("dialogs")
    (folder / "locomo10.json").write_text(json.dumps(FIXTURE["sources"]["locomo10.json"]))
    (folder / "realtalk").mkdir()
    for name, chat in FIXTURE["sources"]["realtalk"].items():
        (folder / "realtalk" / name).write_text(json.dumps(chat))
    return DialogSources(str(folder / "locomo10.json"), str(folder / "realtalk"))


@pytest.fixture(scope="module")
def made(sources) -> dict[tuple[str, str, int], tuple[dict, DonorPair]]:
    """matbench's own harvest_freeform rows and pairs over the synthetic sources, by
    (corpus/conversation, question, window)."""
    rows = SUITE.dataset_rows(0, None, sources)
    pairs = SUITE.pairs_from_rows(rows, sources)
    out = {}
    for row, pair in zip(rows, pairs):
        question, _ = SUITE.judge_prompt(pair)
        out[(f"{row['corpus']}/{row['conversation']}", question, row["window"])] = (row, pair)
    return out


@pytest.fixture(scope="module")
def turn_ids(sources) -> dict[str, list[str]]:
    """corpus/conversation -> the dia_id of each turn, as matbench loads them (the paper's turn order)."""
    return {
        f"{c.corpus}/{c.conversation}": [t.dia_id for t in c.turns]
        for c in load_sources(sources.locomo, sources.realtalk)
    }


def _bodies(prefill: list) -> list[str]:
    """The turns of a recorded prefill (one run from position 0: chat head + turns)."""
    [(text, span)] = prefill
    assert span == [0, len(text) - 1] and text.startswith(CHAT_HEAD) and text.endswith("\n")
    return TURN_BREAK.split(text[len(CHAT_HEAD) : -1])


def _turns_in(text: str, bodies: list[str]) -> list[int]:
    """Indices of the turns a run of served text consists of, in order."""
    return [bodies.index(piece) for piece in TURN_BREAK.split(text[:-1])]


def _paper_units(item: dict) -> list[int]:
    """The turns the paper served at the item's window: its harv rows after the header."""
    bodies = _bodies(FIXTURE["prefills"][str(item["window"])][item["conversation"]])
    header, *runs = item["serves"]["harv"]["rows"]
    assert header == [CHAT_HEAD, [0, len(CHAT_HEAD) - 1]]
    return [i for text, _ in runs for i in _turns_in(text, bodies)]


def _paper_goldev(item: dict) -> list[int]:
    bodies = _bodies(FIXTURE["prefills"][str(item["window"])][item["conversation"]])
    query = item["serves"]["goldev"]["query"]
    return _turns_in(query[len(CHAT_HEAD) : query.index("\n\nQuestion: ")], bodies)


def _text_prompt(pair: DonorPair, arm_name: str, events: list[int] | None = None) -> str:
    """What a text arm reads from position 0: the header, its served events in order (or the
    given list of events), the query."""
    arm = pair.arm(arm_name)
    texts = pair.member(0).texts()
    return (
        CHAT_HEAD
        + FRAMES[pair.frame].header
        + "".join(texts[i] for i in (events if events is not None else sorted(arm.served)))
        + RENDERER.arm_query(pair, arm, GENERATED)
    )


class EncodeRecorder:
    """A stand-in `ModelRunner` for the cache builders: every forward call is one encode, recorded
    with how many keys it attends to; the K rows it writes are the token ids, the V rows the positions."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], list[int], int]] = []

    def forward(self, ids, positions, cache, query_coords=None, key_coords=None, key_valid=None):
        self.calls.append(([int(t) for t in ids[0]], [int(p) for p in positions[0]], int(key_coords.shape[1])))
        cache.update(ids.to(torch.float64).view(1, 1, -1, 1), positions.to(torch.float64).view(1, 1, -1, 1), 0)

    def prefill_chunk(self, rows, width, past):
        return None  # the CPU's rule: one forward per encode, as the paper's


def _event_cache(pair: DonorPair, member: int) -> EventCache:
    """A member's global prefill with its token ids as K rows and its positions as V rows."""
    layout = layout_pair(pair, RENDERER)
    m = layout.members[member]
    ids = torch.tensor(m.input_ids, dtype=torch.float64).view(1, 1, -1, 1)
    positions = torch.tensor(m.positions, dtype=torch.long)
    return EventCache(
        (ids,), (positions.to(torch.float64).view(1, 1, -1, 1),), positions, m.header_span, m.event_spans, layout.length
    )


def _iso_encodes(pair: DonorPair, monkeypatch) -> tuple[list, EventCache]:
    """What the engine encodes for the iso arm (`PairEngine.derived_caches`, its `headless_runs`
    encoding; the text arms' re-prefills left out), as the recorder's runs, and the cache it serves."""
    assert pair.arm("iso").encoding == "headless_runs"
    monkeypatch.setattr(pair_engine, "text_cache", lambda runner, cache, *_: cache)
    engine = object.__new__(PairEngine)
    engine.runner, engine.chunk_size = EncodeRecorder(), None
    cache = _event_cache(pair, 0)
    derived = engine.derived_caches(pair, layout_pair(pair, RENDERER), (cache, cache))
    encodes = []
    for ids, positions, attended in engine.runner.calls:
        assert attended == len(ids)  # nothing before the run: no header, no earlier turn
        encodes.append([[t, p] for t, p in _runs(ids, positions)])
    return encodes, derived["iso"][0]


def test_matbench_selects_the_qas_carriers_and_units_the_paper_served(made, turn_ids):
    paper = {(i["conversation"], i["question"], i["window"]) for i in ITEMS}
    assert len(paper) == len(ITEMS) == 7 * len(WINDOWS) and {i["window"] for i in ITEMS} == set(WINDOWS)
    assert set(made) == paper
    carriers = {(i["conversation"], i["question"]): _paper_units(i) for i in ITEMS if i["window"] == 0}
    for item in ITEMS:
        row, pair = made[(item["conversation"], item["question"], item["window"])]
        ids = turn_ids[item["conversation"]]
        units = _paper_units(item)
        assert row["units"] == [ids[i] for i in units] and list(pair.arm("harv").served) == units
        assert row["carriers"] == [ids[i] for i in carriers[(item["conversation"], item["question"])]]
        assert set(carriers[(item["conversation"], item["question"])]) <= set(units)


def test_the_fixture_exercises_the_window_rules(made):
    """Windows that join neighbouring units into one iso run, neighbours dropped by the session
    and gold screens, a window past the last turn, and evidence listed twice."""
    runs = [
        e
        for i in ITEMS
        for e in i["iso_encodes"]
        if len(_turns_in(e[0][0], _bodies(FIXTURE["prefills"][str(i["window"])][i["conversation"]]))) > 1
    ]
    assert runs
    dropped = {"session": 0, "gold": 0}
    for item in ITEMS:
        _, pair = made[(item["conversation"], item["question"], item["window"])]
        w0 = made[(item["conversation"], item["question"], 0)][1].arm("harv").served
        near = {j for i in w0 for j in range(i - item["window"], i + item["window"] + 1) if 0 <= j < len(pair.events)}
        last = max(int(pair.events[i].split()[1]) for i in pair.arm("goldev").served)
        for j in near - set(_paper_units(item)):
            dropped["session"] += int(pair.events[j].split()[1]) <= last
            dropped["gold"] += pair.values[0].lower() in pair.events[j].lower()
    assert dropped["session"] and dropped["gold"]
    assert any(len(goldev) > len(set(goldev)) for goldev in map(_paper_goldev, ITEMS))
    assert any(
        max(_paper_units(i)) == len(made[(i["conversation"], i["question"], 0)][1].events) - 1 and i["window"]
        for i in ITEMS
    )


@pytest.mark.parametrize("k", range(len(ITEMS)))
def test_items_render_identically(k, made, monkeypatch):
    item = ITEMS[k]
    _, pair = made[(item["conversation"], item["question"], item["window"])]
    serves = item["serves"]
    question, gold = SUITE.judge_prompt(pair)
    assert question == item["question"] and INSTRUCTION == PAPER_INSTRUCTION
    # the full prefill: the chat head, then every turn at contiguous positions from 0
    assert trajectory(pair, 0) == trajectory(pair, 1) == FIXTURE["prefills"][str(item["window"])][item["conversation"]]
    # the query: the question, the instruction, the chat tail; 24 greedy tokens on every arm
    query = f"\n\nQuestion: {question}\n{PAPER_INSTRUCTION}{CHAT_TAIL}"
    assert {a.budget for a in pair.arms} == {ANSWER_TOKENS} == {s["max_tokens"] for s in serves.values()} == {24}
    # harv and iso: the header and the units' rows at their original positions, the query after them
    for arm in ("harv", "iso"):
        ours = served(pair, arm, 0, GENERATED.name)
        assert not pair.arm(arm).query_at_end and serves[arm]["call"] == "greedy_pos"
        assert ours["rows"] == serves[arm]["rows"] and ours["query"] == serves[arm]["query"] == query
    # iso: each run of consecutive units encoded together, nothing before it, at its positions
    encodes, iso = _iso_encodes(pair, monkeypatch)
    assert encodes == item["iso_encodes"]
    m = layout_pair(pair, RENDERER).members[0]
    assert iso.keys[0].flatten().tolist() == [float(t) for t in m.input_ids]  # each re-encoded row in its own slot
    # none, text, goldev: plain prompts read from position 0
    cache = _event_cache(pair, 0)
    for arm in ("none", "text", "goldev"):
        assert serves[arm]["call"] == "greedy" and serves[arm]["rows"] == []
        assert serves[arm]["query"].endswith(query)
        ids, placed = text_layout(cache, m, pair.arm(arm).served)
        header = list(m.input_ids[slice(*m.header_span)])
        assert placed.positions.tolist() == list(range(len(header) + len(ids)))
        assert "".join(map(chr, header + ids)) + RENDERER.arm_query(pair, pair.arm(arm), GENERATED) == _text_prompt(
            pair, arm
        )
    for arm in ("none", "text"):
        assert serves[arm]["query"] == _text_prompt(pair, arm)
    goldev = _paper_goldev(item)
    if len(set(goldev)) == len(goldev):
        assert serves["goldev"]["query"] == _text_prompt(pair, "goldev")
    else:  # evidence listed twice: the paper re-reads the turn twice, matbench serves each event once
        assert sorted(set(goldev)) == list(pair.arm("goldev").served)
        assert serves["goldev"]["query"] == _text_prompt(pair, "goldev", sorted(goldev))
        assert serves["goldev"]["query"] != _text_prompt(pair, "goldev")
    # the judge: cross_judge.judge's request in the judge's chat turn, 6 tokens, for every arm's answer
    for arm in JUDGED:
        paper = item["judge"][arm]
        assert paper["call"] == "greedy" and paper["rows"] == [] and paper["max_tokens"] == JUDGE_TOKENS == 6
        assert paper["query"] == RENDERER.head + judge_request(question, gold, FIXTURE["answer"]) + RENDERER.tail
        assert RENDERER.bos_ids == [] and RENDERER.head == CHAT_HEAD and RENDERER.tail == CHAT_TAIL


class _JudgeRunner:
    """The judge's model: records the ids `Judge.grade` feeds it and answers "yes"."""

    fed: ClassVar[list[tuple[list[int], int]]] = []

    def __init__(self, model, text_config) -> None:
        pass

    def plain_greedy(self, ids, max_tokens, stop_ids):
        self.fed.append((list(ids), max_tokens))
        return [ord(c) for c in "yes"]


def _judged_prompts(pair: DonorPair, texts: dict[str, str], monkeypatch) -> list[tuple[str, int]]:
    """The prompts matbench's `Judge` (`--judge`) feeds its model for one record of `pair`, whose
    arms generated `texts` (the engine's decoded answers), in JUDGED order."""
    from matbench.engine import runtime

    monkeypatch.setattr(runtime, "ModelRunner", _JudgeRunner)
    _JudgeRunner.fed = []
    tok = RENDERER.tokenizer
    judge = Judge(
        SimpleNamespace(
            model=SimpleNamespace(), text_config=None, tokenizer=tok, source=SimpleNamespace(name="stand-in")
        )
    )
    arms = {
        a: ArmRecord(
            answers=(None, None),
            outcome="same",
            probe_answers=("", ""),
            probe_logp=((), ()),
            shift=0.0,
            texts=(texts[a], texts[a]),
        )
        for a in JUDGED
    }
    record = PairRecord(
        item_id=pair.item_id,
        variant=pair.variant,
        values=pair.values,
        menu=pair.menu,
        budget=1,
        length=1,
        n_tokens=(1, 1),
        arms=arms,
    )
    judged = judge.judge_record(pair, record, SUITE)
    assert all(judged.arms[a].judged == (True, True) for a in JUDGED)
    prompts = {}
    for (ids, n), key in zip(_JudgeRunner.fed, judge.verdicts):  # one model call per distinct (q, ref, answer)
        prompts[key[2]] = ("".join(map(chr, ids)), n)
    return [prompts[texts[a].strip()] for a in JUDGED]  # the judge grades the stripped answer


@pytest.mark.parametrize("k", [0, len(ITEMS) - 1])
def test_the_judge_grades_inside_the_papers_prompt(k, made, monkeypatch):
    item = ITEMS[k]
    _, pair = made[(item["conversation"], item["question"], item["window"])]
    answer = FIXTURE["answer"]  # what the paper's _greedy returns: already stripped
    prompts = _judged_prompts(pair, dict.fromkeys(JUDGED, answer), monkeypatch)
    assert prompts == [(item["judge"][a]["query"], item["judge"][a]["max_tokens"]) for a in JUDGED]


def test_the_judge_grades_the_answer_stripped_as_the_paper_does(made, monkeypatch):
    item = ITEMS[0]
    _, pair = made[(item["conversation"], item["question"], item["window"])]
    raw = f" {FIXTURE['answer']}\n"  # the same tokens decoded, before kv_harvest3's .strip()
    prompts = _judged_prompts(pair, dict.fromkeys(JUDGED, raw), monkeypatch)
    assert prompts == [(item["judge"][a]["query"], item["judge"][a]["max_tokens"]) for a in JUDGED]


def test_the_check_can_fail(made, monkeypatch):
    multi = next(
        i
        for i in ITEMS
        if any(
            len(_turns_in(e[0][0], _bodies(FIXTURE["prefills"][str(i["window"])][i["conversation"]]))) > 1
            for e in i["iso_encodes"]
        )
    )
    _, pair = made[(multi["conversation"], multi["question"], multi["window"])]
    # iso encoded one turn at a time (harvest's `headless`, kv_harvest4) is not kv_harvest3's iso
    layout = layout_pair(pair, RENDERER)
    m = layout.members[0]
    one_each = [
        [[t, p] for t, p in _runs(list(m.input_ids[a:b]), list(m.positions[a:b]))]
        for a, b in (m.event_spans[i] for i in pair.arm("iso").served)
    ]
    assert one_each != multi["iso_encodes"] == _iso_encodes(pair, monkeypatch)[0]
    # another window's units, the recognition readout's probe suffix or a judge prompt with another
    # answer each render differently
    other = made[(multi["conversation"], multi["question"], 0)][1]
    assert served(other, "harv", 0, GENERATED.name)["rows"] != multi["serves"]["harv"]["rows"]
    assert RENDERER.query_text(pair.arm("harv").question, " Answer A or B:") != multi["serves"]["harv"]["query"]
    question, gold = SUITE.judge_prompt(pair)
    assert RENDERER.head + judge_request(question, gold, "Lisbon") + RENDERER.tail != multi["judge"]["harv"]["query"]
