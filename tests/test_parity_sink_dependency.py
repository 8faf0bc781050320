"""Paper parity, sink vs dependency: matbench renders kv_phantom.py E3 (recorded in
tests/parity/fixtures/sink_dependency.json by tests/parity/make_sink_dependency.py) byte for byte:
replaying the paper's random stream (seed 2) through `draw`, each item's twelve independent
prefills after the header (head) and alone (nohead), the four served readouts (rows and query) and
the full-prefill text prompts (member A holds the paper's values; every member value has three
digits, so no position budget intervenes)."""

from __future__ import annotations

import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.sink_dependency import N_EVENTS, build, draw
from matbench.engine.layout import layout_pair
from tests.parity.compare import RENDERER, fixture, served, trajectory
from tests.parity.recorder import _runs
from tests.test_parity_access import isolated, text_prompt

FIXTURE = fixture("sink_dependency")


def replayed() -> list:
    rng = random.Random(FIXTURE["seed"])
    return [build(f"parity-{k}", d, (100, 200)) for k, d in enumerate(draw(rng) for _ in FIXTURE["items"])]


PAIRS = replayed()


def headless(pair, event: int) -> list:
    m = layout_pair(pair, RENDERER).members[0]
    lo, hi = m.event_spans[event]
    return [[t, p] for t, p in _runs(list(m.input_ids[lo:hi]), list(m.positions[lo:hi]))]


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_two_by_two_identically(k):
    item, pair = FIXTURE["items"][k], PAIRS[k]
    assert [isolated(pair, i) for i in range(N_EVENTS)] == item["head"]
    assert [headless(pair, i) for i in range(N_EVENTS)] == item["nohead"]
    for mode in ("head", "nohead"):
        for task in ("retr", "hop"):
            ours, paper = served(pair, f"{mode}_{task}", 0, "short"), item["serves"][f"{mode}_{task}"]
            assert ours["rows"] == paper["rows"] == trajectory(pair, 0)
            assert ours["query"] == paper["query"] and paper["max_tokens"] == 12 == pair.arm(f"{mode}_{task}").budget
            assert pair.arm(f"{mode}_{task}").encoding == {"head": "isolated", "nohead": "headless"}[mode]
    for task in ("retr", "hop"):
        assert text_prompt(pair, f"full_{task}", "short") == item["serves"][f"full_{task}"]["query"]


def test_the_replay_can_fail():
    item = FIXTURE["items"][0]
    assert [isolated(PAIRS[1], i) for i in range(N_EVENTS)] != item["head"]
    rng = random.Random(FIXTURE["seed"] + 1)
    assert [isolated(build("x", draw(rng), (100, 200)), i) for i in range(N_EVENTS)] != item["head"]


def test_the_declared_stream_gives_the_replayed_items():
    """`Suite.paper` (what `matbench show --paper-seed` renders): member A of each pair is the
    replayed item's (the paper's values); member B differs from the replay's fixed (100, 200)."""
    paper = SUITES.get("sink_dependency").paper
    assert paper.script == FIXTURE["script"] and paper.seed == FIXTURE["seed"]
    pairs = paper.items(FIXTURE["seed"], len(PAIRS))
    assert len(pairs) == len(PAIRS)
    for k, (ours, replayed) in enumerate(zip(pairs, PAIRS, strict=True)):
        assert ours.item_id == f"paper-kv_phantom-sink-s{FIXTURE['seed']}-{k:05d}"
        assert trajectory(ours, 0) == trajectory(replayed, 0) == FIXTURE["items"][k]["serves"]["head_retr"]["rows"]
        assert [isolated(ours, i) for i in range(N_EVENTS)] == FIXTURE["items"][k]["head"]
        assert [served(ours, a.name, 0, "short")["query"] for a in ours.arms] == [
            served(replayed, a.name, 0, "short")["query"] for a in replayed.arms
        ]
        assert ours.source_bodies[0] == replayed.source_bodies[0] and ours.source_bodies[1] != replayed.source_bodies[1]
