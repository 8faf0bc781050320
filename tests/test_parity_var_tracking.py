"""Paper parity, variable tracking: matbench renders kv_vartrack.py and kv_vardecomp.py (recorded
in tests/parity/fixtures/var_tracking.json by tests/parity/make_var_tracking.py) byte for byte.
Replaying each script's random stream through `draw`, one item per cell: the global prefill, the
isolated encodes (header + step), the anchored encodes (header + opening window + step), every
served readout's rows and query, and the text prompts (everything; the chain only)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.var_tracking import CELLS, N_EVENTS, build, draw, paper_partner
from matbench.engine.cache import ANCHOR_WINDOW
from matbench.engine.layout import layout_pair
from tests.parity.compare import RENDERER, budget_shifts, fixture, served, trajectory
from tests.parity.recorder import _runs
from tests.test_parity_access import isolated, text_prompt

FIXTURE = fixture("var_tracking")


def replay(script: str) -> list:
    rng = random.Random(FIXTURE[script]["seed"])
    draws = [draw(rng, hops, far) for hops, far in CELLS]
    return [build(f"parity-{k}", d, paper_partner(d)) for k, d in enumerate(draws)]


VARTRACK, VARDECOMP = replay("vartrack"), replay("vardecomp")


def anchored(pair, event: int) -> list:
    """What matbench's anchored encoding prefills for `event`: the header and at most
    ANCHOR_WINDOW opening slots of the trajectory, then the event at its own positions."""
    m = layout_pair(pair, RENDERER).members[0]
    lo, hi = m.event_spans[event]
    opening = min(m.header_span[1] + ANCHOR_WINDOW, lo)
    ids = list(m.input_ids[:opening]) + list(m.input_ids[lo:hi])
    positions = list(m.positions[:opening]) + list(m.positions[lo:hi])
    return [[t, p] for t, p in _runs(ids, positions)]


@pytest.mark.parametrize("k", range(len(CELLS)))
def test_matbench_renders_kv_vartrack_identically(k):
    item, pair = FIXTURE["vartrack"]["items"][k], VARTRACK[k]
    assert trajectory(pair, 0) == budget_shifts(pair, 0, item["prefill"])
    assert [isolated(pair, i) for i in range(N_EVENTS)] == item["iso"]
    assert {str(i): anchored(pair, i) for i in map(int, item["anch"])} == item["anch"]
    for arm, paper in (("harv_kv", "harvest"), ("iso", "iso"), ("anch", "anch")):
        ours = served(pair, arm, 0, "short")
        assert ours["rows"] == item["serves"][paper]["rows"] and ours["query"] == item["serves"][paper]["query"]
        assert item["serves"][paper]["max_tokens"] == pair.arm(arm).budget == 12
    assert text_prompt(pair, "full_txt", "short") == item["serves"]["full"]["query"]


@pytest.mark.parametrize("k", range(len(CELLS)))
def test_matbench_renders_kv_vardecomp_identically(k):
    item, pair = FIXTURE["vardecomp"]["items"][k], VARDECOMP[k]
    assert trajectory(pair, 0) == budget_shifts(pair, 0, item["prefill"])
    chain = sorted(pair.arm("harv_kv").served)
    assert [isolated(pair, i) for i in chain] == item["sel_ikv"]
    for arm in ("harv_kv", "sel_ikv"):
        ours = served(pair, arm, 0, "short")
        assert ours["rows"] == item["serves"][arm]["rows"] and ours["query"] == item["serves"][arm]["query"]
    for arm in ("full_txt", "sel_txt"):
        assert text_prompt(pair, arm, "short") == item["serves"][arm]["query"]


def test_the_window_stops_short_of_late_steps_and_the_replay_can_fail():
    item = FIXTURE["vartrack"]["items"][0]
    assert len(item["anch"]["0"]) == 1 and len(item["anch"]["23"]) == 2  # a gap: the window ends before step 24
    assert trajectory(VARTRACK[1], 0) != item["prefill"]
    rng = random.Random(FIXTURE["vartrack"]["seed"] + 1)
    assert trajectory(build("x", draw(rng, *CELLS[0]), 200), 0) != item["prefill"]


@pytest.mark.parametrize("script", ["vartrack", "vardecomp"])
def test_the_declared_stream_gives_the_replayed_items(script):
    """`Suite.paper` (what `matbench show --paper-seed` renders) at the fixture's --items 1: pair k
    is cell k's item, each script's replay (kv_vardecomp draws kv_vartrack's stream)."""
    paper = SUITES.get("var_tracking").paper
    assert paper.script == "kv_vartrack" and paper.seed == FIXTURE["vartrack"]["seed"]
    seed, replayed = FIXTURE[script]["seed"], {"vartrack": VARTRACK, "vardecomp": VARDECOMP}[script]
    pairs = paper.items(seed, len(CELLS), items=1)
    assert [p.item_id for p in pairs] == [f"paper-kv_vartrack-s{seed}-c{c}-00000" for c in range(len(CELLS))]
    assert [dataclasses.replace(p, item_id=r.item_id) for p, r in zip(pairs, replayed, strict=True)] == replayed
    # The default run (--items 16) draws the cells after the first from later in the stream.
    default = paper.items(seed, len(CELLS))
    assert default[0] == dataclasses.replace(pairs[0], item_id=default[0].item_id) and default[1] != pairs[1]
