"""Rendering, position budget, identity and leak checks, and the discovery generator."""

from __future__ import annotations

import dataclasses

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.discovery import MENU
from matbench.engine import render
from matbench.engine.layout import layout_pair, layout_pairs
from matbench.engine.render import Renderer
from matbench.errors import MatbenchError
from matbench.protocol.frames import HDR, event_text


@pytest.fixture(scope="module")
def renderer(tokenizer):
    return Renderer(tokenizer)


def test_chat_frame_and_no_bos_for_smollm2(renderer):
    assert renderer.chat
    assert renderer.head.startswith("<|im_start|>system") and renderer.head.endswith("<|im_start|>user\n")
    assert renderer.tail == "<|im_end|>\n<|im_start|>assistant\n"
    assert renderer.bos_ids == []  # SmolLM2 adds no BOS; the chat head opens the sequence
    assert renderer.header_ids() == renderer.ids(renderer.head + HDR)


def test_position_budget(renderer, pairs):
    for pair in pairs:
        layout = layout_pair(pair, renderer)
        a, b = layout.members
        src_a, src_b = (m.event_spans[pair.source] for m in (a, b))
        lengths = (src_a[1] - src_a[0], src_b[1] - src_b[0])
        assert layout.budget == max(lengths) and lengths[0] != lengths[1]
        # Events after the source start at source_start + budget in both members.
        start = a.positions[src_a[0]]
        assert b.positions[src_b[0]] == start
        for m in (a, b):
            nxt = m.event_spans[pair.source + 1][0]
            assert m.positions[nxt] == start + layout.budget
            assert m.positions[-1] + 1 == layout.length
        # Every non-source event: same ids and positions in both members.
        for i in range(len(pair.events)):
            if i != pair.source:
                ta, tb = a.served_tokens((i,)), b.served_tokens((i,))
                assert ta == tb
        assert layout.prefix_tokens == src_a[0]
        assert a.input_ids[: layout.prefix_tokens] == b.input_ids[: layout.prefix_tokens]


def test_piecewise_check_refuses_a_boundary_merge(renderer):
    with pytest.raises(MatbenchError, match="piecewise tokenization"):
        # SPEC's literal "\n\nQuestion" after an event's "\n" merges into one token in SmolLM2.
        pieces = [event_text(0, "x"), "\n\nQuestion: What?"]
        renderer.check_piecewise(pieces, [renderer.ids(p) for p in pieces])


def test_a_failed_piecewise_check_names_its_sequence(renderer):
    good = [event_text(0, "x"), event_text(1, "y")]
    bad = [event_text(0, "x"), "\n\nQuestion: What?"]
    sequences = [(p, [renderer.ids(t) for t in p]) for p in (good, bad)]
    with pytest.raises(MatbenchError, match=r"^item q, member B: piecewise tokenization differs"):
        renderer.check_piecewise_many(sequences, names=["item q, member A", "item q, member B"])
    renderer.check_piecewise_many(sequences[:1], names=["item q, member A"])


class CountingTokenizer:
    """A tokenizer that counts the texts it is asked to encode (a batch counts each of its texts)."""

    def __init__(self, inner):
        self.inner, self.texts = inner, 0

    def __call__(self, text, **kwargs):
        self.texts += len(text) if isinstance(text, list) else 1
        return self.inner(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_layouts_through_the_memo_and_one_batch_are_the_plain_ones(tokenizer, pairs, monkeypatch):
    """`layout_pairs` over one renderer tokenizes each distinct piece once and checks every
    member in one batch, and gives exactly the layouts of a fresh renderer per pair."""
    pairs = list(pairs)
    counted = CountingTokenizer(tokenizer)
    laid = layout_pairs(pairs, Renderer(counted))
    assert laid == [layout_pair(p, Renderer(tokenizer)) for p in pairs]
    distinct = {t for p in pairs for m in (0, 1) for t in p.member(m).texts()}
    assert not any(p.padded or p.slot_alternatives for p in pairs)  # no further pieces to encode
    # "a" and the chat head (Renderer's BOS probe), the header, "\n" (the pad token), each
    # distinct event once, and each member's one-shot check
    assert counted.texts == 4 + len(distinct) + 2 * len(pairs)
    monkeypatch.setattr(render, "MEMO_ENTRIES", 8)  # the memo is emptied when full, and refilled
    small = Renderer(tokenizer)
    assert layout_pairs(pairs, small) == laid and len(small._memo) < len(distinct)


def test_query_is_its_own_piece_with_the_papers_blank_line(renderer):
    # The paper tokenizes "\n\nQuestion: ..." + tail separately (never merged into the last
    # event's "\n"): the query's ids are exactly that piece's, whatever precedes it.
    text = renderer.query_text("What state is register ALPHA in?", " Answer ONLINE or OFFLINE:", "Answer:")
    assert text.startswith("\n\nQuestion: What state is register ALPHA in? Answer ONLINE or OFFLINE:")
    ids = renderer.ids(text)
    assert renderer.decode(ids).startswith("\n\nQuestion:")
    last = event_text(3, "register BETA refreshed to 120")
    assert renderer.ids(last) + ids != renderer.ids(last + text)  # one-shot would merge "\n" + "\n\n"


def test_discovery_is_deterministic_and_seeded():
    suite = SUITES.get("discovery")
    assert suite.generate(0, 5) == suite.generate(0, 5)
    assert suite.generate(0, 5) != suite.generate(1, 5)
    assert suite.generate(0, 3) == suite.generate(0, 5)[:3]


def test_discovery_structure():
    pairs = SUITES.get("discovery").generate(0, 200)
    sources = {p.source for p in pairs}
    assert sources == {8, 9, 10, 11}
    decoy_values = [p.events[0].split()[-1] for p in pairs]
    # Decoy drawn independently of the gold: both values occur, roughly half each.
    assert set(decoy_values) == set(MENU) and 70 < decoy_values.count("ONLINE") < 130
    for p in pairs:
        assert p.values == MENU and len(p.events) == 24
        assert [a.name for a in p.arms] == ["root", "chain", "txt", "control"]
        assert p.arm("control").served == tuple(range(p.source))
        assert p.source not in p.arm("root").served and p.source in p.arm("txt").served
        own = set(p.registers)
        for i, body in enumerate(p.events):
            if body.startswith("register") and "refreshed" in body:
                assert body.split()[1] not in own


def test_validation_refuses_a_leaking_served_event():
    pair = SUITES.get("discovery").generate(0, 1)[0]
    src_reg = pair.source_bodies[0].split()[1]
    events = list(pair.events)
    events[13] = f"register {src_reg} set to state ONLINE"
    with pytest.raises(MatbenchError, match="leaks the source"):
        dataclasses.replace(pair, events=tuple(events)).validate()


def test_validation_refuses_an_arm_serving_the_source():
    pair = SUITES.get("discovery").generate(0, 1)[0]
    bad = dataclasses.replace(pair.arm("root"), served=(0, pair.source, 13))
    with pytest.raises(MatbenchError, match="serves the source"):
        dataclasses.replace(pair, arms=(bad,)).validate()


def test_base_models_answer_after_an_answer_prefix(renderer):
    import copy

    base = copy.copy(renderer)
    base.chat, base.head, base.tail = False, "", "\n"
    for prefix in ("", "Answer:"):  # short/trace, probe
        assert base.query_text("What?", " Answer A or B:", prefix) == "\n\nQuestion: What? Answer A or B:\nAnswer:"
    assert renderer.query_text("What?", "", "") == "\n\nQuestion: What?" + renderer.tail


def test_pairs_share_a_prefill_key_exactly_when_their_members_render_alike():
    import dataclasses

    from matbench.data_gen import SUITES

    pair = SUITES.get("discovery").generate(0, 1)[0]
    other_question = dataclasses.replace(pair, item_id="other", arms=pair.arms[:1], variant="x")
    assert other_question.prefill_key() == pair.prefill_key()  # same texts, other questions: one prefill
    flipped = dataclasses.replace(pair, source_bodies=pair.source_bodies[::-1])
    assert flipped.prefill_key() != pair.prefill_key()
    harvest_like = [dataclasses.replace(pair, item_id=f"q{i}") for i in range(3)]
    assert len({p.prefill_key() for p in harvest_like}) == 1
    # Unpaired items over one dialog that call different turns their source render alike: one prefill.
    events = pair.member(0).events
    asked = [
        dataclasses.replace(
            pair, paired=False, events=events, source=i, source_bodies=(events[i],) * 2, donor_events=()
        )
        for i in (1, 2)
    ]
    assert asked[0].prefill_key() == asked[1].prefill_key()
    # Paired items that branch at different sources do not: the second member is computed from there.
    assert dataclasses.replace(pair, source=pair.source + 1).prefill_key() != pair.prefill_key()
