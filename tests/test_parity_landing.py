"""Paper parity, landing: matbench renders the paper's own draws byte for byte.

tests/parity/make_landing.py recorded kv_causal3.py (edge items), kv_causal2.py (the mention item's
2x2 with its j=none bridge), kv_hops.py (depth-3 items) and kv_poscontrol.py (mention / referent
swap items) under the character-level stand-in tokenizer; the draws are read back from the
recorded prefill texts and built through data_gen/landing.py's build_* functions. Compared: each
member's whole prefill with its positions, every cell's served rows (header + served events, in
order, with their positions) and its query (question + readout suffix + chat tail) under the trace
readout and, where the script has one, the menu readout.

Where the designs differ, the test says so and checks the difference exactly:
- kv_hops encodes one trajectory per item with no position budget (its v1 only). matbench's
  depth-3 item is a donor pair, so the source slot gets the budget of the longer value; events
  after the source sit later by (budget - the paper's source length) in the shorter member.
- A crossed cell (root donor i, slot-18 donor j != i) serves the slot's rows from the other
  member's prefill: text and positions are those of the same member (checked here); that the rows
  come from the other prefill is checked in tests/test_landing.py on a model.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
import torch

from matbench.data_gen.landing import (
    C1_AT,
    C2_AT,
    C3_AT,
    EDGE_AT,
    PERTURB_AT,
    ROOT_AT,
    Depth3Draw,
    EdgeDraw,
    PerturbDraw,
    build_depth3,
    build_edge,
    build_perturb,
    draw_depth3,
    draw_edge,
    draw_perturb,
)
from matbench.engine.cache import EventCache, text_layout
from matbench.engine.layout import layout_pair
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, fixture, served, shifted, trajectory

FIXTURE = fixture("landing")
VALUES = ("ONLINE", "OFFLINE")
MEMBER = {"ON": 0, "OF": 1}


def bodies(runs: list) -> list[str]:
    found = EVENT.findall("".join(t for t, _ in runs))
    assert [int(n) for n, _ in found] == list(range(1, 25))
    return [body for _, body in found]


def _names(pattern: str, body: str) -> tuple[str, ...]:
    return re.fullmatch(pattern, body).groups()


def _start(b: list[str]) -> tuple[str, str, int, str]:
    """decoy, its state, the source slot and register, read from the event bodies."""
    decoy, state = _names(r"register (\w+) set to state (\w+)", b[0])
    source = next(i for i in range(1, 24) if " set to state " in b[i])
    return decoy, state, source, _names(r"register (\w+) set to state \w+", b[source])[0]


def edge_draw(item: dict) -> EdgeDraw:
    b = bodies(item["prefill"]["ONLINE"])
    decoy, state, source, source_reg = _start(b)
    (mirror,) = _names(rf"register (\w+) mirrors register {source_reg}", b[ROOT_AT])
    (target,) = _names(rf"register (\w+) mirrors register {mirror}", b[EDGE_AT])
    return EdgeDraw(decoy, source_reg, mirror, target, state, source, tuple(b))


def perturb_draw(item: dict, unrelated_from: str | None) -> PerturbDraw:
    b = bodies(item["prefill"]["ONLINE" if unrelated_from is None else "ONLINE/men"])
    decoy, state, source, source_reg = _start(b)
    (mirror,) = _names(rf"register (\w+) mirrors register {source_reg}", b[ROOT_AT])
    assert b[PERTURB_AT] == f"register {mirror} was listed in the scheduled audit inventory for this cycle"
    if unrelated_from is None:
        # kv_causal2 has no referent swap: its item is a mention item whose slot-18 alternatives
        # are the mention alone (U = M1), so the slot's budget is the mention's own length.
        unrelated = mirror
    else:
        (unrelated,) = _names(
            r"register (\w+) was listed in the scheduled audit inventory for this cycle",
            bodies(item["prefill"][unrelated_from])[PERTURB_AT],
        )
    return PerturbDraw(decoy, source_reg, mirror, unrelated, state, source, tuple(b))


def depth3_draw(item: dict) -> Depth3Draw:
    b = bodies(item["prefill"]["v1"])
    decoy, state, source, source_reg = _start(b)
    value = b[source].rsplit(" ", 1)[1]
    (mirror,) = _names(rf"register (\w+) mirrors register {source_reg}", b[C1_AT])
    (mirror2,) = _names(rf"register (\w+) mirrors register {mirror}", b[C2_AT])
    (target,) = _names(rf"register (\w+) mirrors register {mirror2}", b[C3_AT])
    fillers = tuple("" if i in (0, source, C1_AT, C2_AT, C3_AT) else body for i, body in enumerate(b))
    return Depth3Draw(decoy, source_reg, mirror, mirror2, target, value, state, source, fillers)


def check_serve(pair, arm: str, member: int, paper: dict, menu_query: str | None = None) -> None:
    ours = served(pair, arm, member, "trace")
    assert ours["rows"] == paper["rows"], (pair.variant, arm, member)
    assert ours["query"] == paper["query"], (pair.variant, arm, member)
    assert paper["call"] == "greedy_pos" and paper["max_tokens"] == READOUTS.get("trace").max_new_tokens == 160
    if menu_query is not None:
        assert served(pair, arm, member, "menu")["query"] == menu_query
        assert READOUTS.get("menu").max_new_tokens == 160


def _own_slots_masked(draw, slots) -> object:
    return dataclasses.replace(draw, fillers=tuple("" if i in slots else f for i, f in enumerate(draw.fillers)))


# --- kv_causal3: the true reference edge ---------------------------------------------------------

CAUSAL3 = {
    "t_ON_ON": ("root_edge", 0),
    "t_ON_OF": ("root_edge_cross", 0),
    "t_OF_ON": ("root_edge_cross", 1),
    "t_OF_OF": ("root_edge", 1),
    "m_ON": ("root_only", 0),
    "m_OF": ("root_only", 1),
    "e_ON": ("edge_only", 0),
    "e_OF": ("edge_only", 1),
}


@pytest.mark.parametrize("k", range(len(FIXTURE["kv_causal3"]["items"])))
def test_edge_items_render_kv_causal3_identically(k):
    item = FIXTURE["kv_causal3"]["items"][k]
    pair = build_edge(edge_draw(item), f"parity-edge-{k}")
    for member, value in enumerate(VALUES):
        assert pair.values[member] == value and trajectory(pair, member) == item["prefill"][value]
    assert set(item["serves"]) == set(CAUSAL3)
    for key, (arm, member) in CAUSAL3.items():
        check_serve(pair, arm, member, item["serves"][key], item["menu_queries"][key])


# --- kv_causal2: the mention 2x2 and its j=none bridge ---------------------------------------------

CAUSAL2 = {
    "a_ON_ON": ("mention", 0),
    "a_ON_OF": ("mention_cross", 0),
    "a_ON_NO": ("absent", 0),
    "a_OF_ON": ("mention_cross", 1),
    "a_OF_OF": ("mention", 1),
    "a_OF_NO": ("absent", 1),
}


@pytest.mark.parametrize("k", range(len(FIXTURE["kv_causal2"]["items"])))
def test_mention_items_render_kv_causal2_identically(k):
    item = FIXTURE["kv_causal2"]["items"][k]
    pair = build_perturb(perturb_draw(item, None), f"parity-cz2-{k}", "mention")
    for member, value in enumerate(VALUES):
        assert trajectory(pair, member) == item["prefill"][value]
    for key, (arm, member) in CAUSAL2.items():
        check_serve(pair, arm, member, item["serves"][key], item["menu_queries"][key])


# --- kv_poscontrol: mention vs referent swap vs absent -------------------------------------------


def _poscontrol_cells() -> dict[str, tuple[str, str, int]]:
    cells = {}
    for v, member in MEMBER.items():
        cells[f"a_{v}_abs"] = ("mention", "absent", member)
        for cont, kind in (("men", "mention"), ("fil", "refswap")):
            for j in MEMBER:
                cells[f"a_{v}_{j}_{cont}"] = (kind, kind if j == v else f"{kind}_cross", member)
    return cells


@pytest.mark.parametrize("k", range(len(FIXTURE["kv_poscontrol"]["items"])))
def test_perturbation_items_render_kv_poscontrol_identically(k):
    item = FIXTURE["kv_poscontrol"]["items"][k]
    draw = perturb_draw(item, "ONLINE/fil")
    pairs = {kind: build_perturb(draw, f"parity-pc-{k}-{kind}", kind) for kind in ("mention", "refswap")}
    for kind, cont in (("mention", "men"), ("refswap", "fil")):
        for member, value in enumerate(VALUES):
            assert trajectory(pairs[kind], member) == item["prefill"][f"{value}/{cont}"]
    cells = _poscontrol_cells()
    assert set(item["serves"]) == set(cells)
    for key, (kind, arm, member) in cells.items():
        check_serve(pairs[kind], arm, member, item["serves"][key], item["menu_queries"][key])
    # kv_poscontrol's audit: men and fil ask at the same position exactly when U's sentence has the
    # mention's length (len_match); the slot's budget keeps L, the native query position, equal anyway.
    lengths = {kind: layout_pair(p, RENDERER) for kind, p in pairs.items()}
    same = len(draw.unrelated) == len(draw.mirror)
    for member, v in enumerate(MEMBER):
        men, fil = (served(pairs[kind], kind, member, "trace")["query_position"] for kind in ("mention", "refswap"))
        paper_men, paper_fil = (item["serves"][f"a_{v}_{v}_{c}"]["rows"][-1][1][1] + 1 for c in ("men", "fil"))
        assert (men, fil) == (paper_men, paper_fil) and (men == fil) == same
    assert lengths["mention"].length == lengths["refswap"].length


def test_the_fixture_holds_length_matched_and_unmatched_referent_swaps():
    matched = [
        len(d.unrelated) == len(d.mirror)
        for d in (perturb_draw(it, "ONLINE/fil") for it in FIXTURE["kv_poscontrol"]["items"])
    ]
    assert True in matched and False in matched


# --- kv_hops: the depth-3 chain and its text floor -----------------------------------------------

HOPS = {
    "A1_c1_M1": "depth3_c1",
    "A2_c2_M2": "depth3_c2",
    "A3_c3_T": "depth3_c3",
    "A4_c23_T": "depth3_noroot",
    "A5_all_T": "depth3_root",
}


@pytest.mark.parametrize("k", range(len(FIXTURE["kv_hops"]["items"])))
def test_depth3_items_render_kv_hops_identically_up_to_the_source_budget(k):
    item = FIXTURE["kv_hops"]["items"][k]
    draw = depth3_draw(item)
    pair = build_depth3(draw, f"parity-hops-{k}")
    member = VALUES.index(draw.paper_value)
    layout = layout_pair(pair, RENDERER)
    m = layout.members[member]
    source_lo, source_hi = m.event_spans[pair.source]
    end = m.positions[source_hi - 1] + 1  # the paper's next event starts here
    gap = layout.budget - (source_hi - source_lo)  # matbench skips these positions; the paper has no budget
    assert gap == (1 if draw.paper_value == "ONLINE" else 0)  # len("OFFLINE") - len("ONLINE") characters
    assert trajectory(pair, member) == shifted(item["prefill"]["v1"], end, gap)
    for key, arm in HOPS.items():
        paper = dict(item["serves"][key], rows=shifted(item["serves"][key]["rows"], end, gap))
        check_serve(pair, arm, member, paper)
        assert pair.arm_trace(pair.arm(arm)).startswith(" Trace the mirror chain briefly")
    # The floor: header + A5's events re-read as plain text at contiguous positions, then the query.
    floor = item["serves"]["floor_txt_T"]
    assert floor["call"] == "greedy" and floor["rows"] == [] and floor["max_tokens"] == 160
    arm = pair.arm("depth3_floor")
    ours = served(pair, "depth3_floor", member, "trace")
    assert "".join(t for t, _ in ours["rows"]) + ours["query"] == floor["query"]
    cache = EventCache((), (), torch.tensor(m.positions), m.header_span, m.event_spans, layout.length)
    ids, placed = text_layout(cache, m, arm.served)
    n = m.header_span[1] + len(ids)
    assert placed.positions.tolist() == list(range(n)) and placed.length == n  # the query follows at n, as in the paper


def test_matbench_draws_consume_the_rng_as_the_papers_scripts_do():
    """Given the script's seed, draw_* reproduces its draws (fillers at the item's own slots are
    overwritten in both, so not compared)."""
    for script, draw_fn, read, slots in (
        ("kv_causal3", draw_edge, edge_draw, lambda d: (0, d.source, ROOT_AT, EDGE_AT)),
        ("kv_hops", draw_depth3, depth3_draw, lambda d: (0, d.source, C1_AT, C2_AT, C3_AT)),
        (
            "kv_poscontrol",
            draw_perturb,
            lambda it: perturb_draw(it, "ONLINE/fil"),
            lambda d: (0, d.source, ROOT_AT, PERTURB_AT),
        ),
    ):
        rng = random.Random(FIXTURE[script]["seed"])
        for item in FIXTURE[script]["items"]:
            ours, paper = draw_fn(rng), read(item)
            assert _own_slots_masked(ours, slots(ours)) == _own_slots_masked(paper, slots(paper)), script


def test_the_check_can_fail():
    item = FIXTURE["kv_poscontrol"]["items"][0]
    draw = perturb_draw(item, "ONLINE/fil")
    # matbench v2's perturbation ("register M was inspected by the operator" at 16) is not the paper's.
    old = build_perturb(draw, "x", "mention")
    events = list(old.events)
    events[PERTURB_AT] = f"register {draw.mirror} was inspected by the operator"
    old = dataclasses.replace(old, events=tuple(events), slot_alternatives=())
    assert served(old, "mention", 0, "trace")["rows"] != item["serves"]["a_ON_ON_men"]["rows"]
    # The discovery trace wording is not kv_poscontrol's.
    from matbench.protocol.readouts import MIRROR_TRACE

    mirror_worded = dataclasses.replace(build_perturb(draw, "x", "mention"), trace=MIRROR_TRACE)
    assert served(mirror_worded, "mention", 0, "trace")["query"] != item["serves"]["a_ON_ON_men"]["query"]
    # The referent swap read as a mention (U and M1 exchanged) is refused too.
    swapped = build_perturb(dataclasses.replace(draw, mirror=draw.unrelated, unrelated=draw.mirror), "x", "refswap")
    assert trajectory(swapped, 0) != item["prefill"]["ONLINE/fil"]
