"""Paper parity, sliding-window oracle: matbench renders kv_swgate.py (recorded in
tests/parity/fixtures/sliding_window.json by tests/parity/make_sliding_window.py) byte for byte:
replaying the paper's random stream through `draw`, each donor value's global prefill (the far row
padded with newlines to the longer value, as kv_swgate pads it), the served far and near rows, the
query, and where each serving mode asks it (compact: after the far and near rows; native: at L).
kv_swgate serves no header; matbench always does, so its served rows are the header's run and then
the paper's."""

from __future__ import annotations

import dataclasses
import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.sliding_window import GAPS, build, draw
from matbench.engine.layout import layout_pair
from tests.parity.compare import RENDERER, fixture, served, trajectory

FIXTURE = fixture("sliding_window")


def replayed() -> list:
    rng = random.Random(FIXTURE["seed"])
    return [build(f"parity-{k}", draw(rng, FIXTURE["gap"])) for k in range(len(FIXTURE["items"]))]


PAIRS = replayed()


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
@pytest.mark.parametrize("member", [0, 1])
def test_matbench_renders_the_papers_oracle_identically(k, member):
    pair = PAIRS[k]
    paper = FIXTURE["items"][k][pair.values[member]]
    assert trajectory(pair, member) == paper["prefill"]
    ours = served(pair, "far_near", member, "short")
    header = layout_pair(pair, RENDERER).members[member].header_span
    assert ours["rows"][0][1] == [0, header[1] - 1] and ours["rows"][1:] == paper["native"]["rows"]
    assert paper["compact"]["rows"] == paper["native"]["rows"]
    assert ours["query"] == paper["native"]["query"] == paper["compact"]["query"]
    assert ours["query_position"] == paper["compact"]["query_position"]
    assert layout_pair(pair, RENDERER).length == paper["native"]["query_position"]


def test_the_replay_can_fail():
    item = FIXTURE["items"][0]["ONLINE"]
    assert trajectory(PAIRS[1], 0) != item["prefill"]
    assert trajectory(PAIRS[0], 1) != item["prefill"]  # the other donor value


def test_the_declared_stream_gives_the_replayed_items():
    """`Suite.paper` (what `matbench show --paper-seed` renders): item k is kv_swgate's item k // 4
    at --gap GAPS[k mod 4], so the fixture's run (--gap 240) is every fourth pair."""
    paper = SUITES.get("sliding_window").paper
    assert paper.script == "kv_swgate" and FIXTURE["gap"] in GAPS
    n = len(GAPS) * len(PAIRS)
    pairs = paper.items(FIXTURE["seed"], n)
    assert len(pairs) == n
    at = GAPS.index(FIXTURE["gap"])
    for j, replayed in enumerate(PAIRS):
        ours = pairs[len(GAPS) * j + at]
        assert ours.item_id == f"paper-kv_swgate-s{FIXTURE['seed']}-gap{FIXTURE['gap']}-{j:05d}"
        assert dataclasses.replace(ours, item_id=replayed.item_id) == replayed
    assert pairs[at + 1].variant != PAIRS[0].variant  # the next gap's run
