"""Paper parity, binding capacity: matbench renders kv_bicap.py (recorded in
tests/parity/fixtures/binding_capacity.json by tests/parity/make_binding_capacity.py) byte for
byte: replaying the paper's random stream through `draw`, per item and carrier layout the global
prefill (member A holds the paper's v1 and v2), and per question the harv serve's rows and query
under the short readout and the sel text prompt."""

from __future__ import annotations

import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.binding_capacity import LAYOUTS, build, draw
from tests.parity.compare import budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("binding_capacity")


def replayed() -> list:
    rng = random.Random(FIXTURE["seed"])
    return [draw(rng) for _ in FIXTURE["items"]]


DRAWS = replayed()


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_matbench_renders_each_layout_identically(k, layout):
    item, pair = FIXTURE["items"][k][layout], build(DRAWS[k], f"parity-{k}", layout)
    assert trajectory(pair, 0) == budget_shifts(pair, 0, item["prefill"])
    questions = [q for q in ("q1", "q2") if q in item]
    assert questions == (["q1"] if layout == "one" else ["q1", "q2"])
    for q in questions:
        ours = served(pair, f"harv/{q}", 0, "short")
        assert ours["rows"] == budget_shifts(pair, 0, item[q]["harv"]["rows"])
        assert ours["query"] == item[q]["harv"]["query"]
        assert text_prompt(pair, f"sel/{q}", "short") == item[q]["sel"]["query"]


def test_the_declared_stream_gives_the_replayed_items():
    """`Suite.paper` (what `matbench show --paper-seed` renders): per paper item its three layouts,
    the same pairs as the replay above."""
    paper = SUITES.get("binding_capacity").paper
    assert paper.script == FIXTURE["script"]
    pairs = paper.items(FIXTURE["seed"], len(LAYOUTS) * len(DRAWS))
    for k, d in enumerate(DRAWS):
        for j, layout in enumerate(LAYOUTS):
            ours = pairs[len(LAYOUTS) * k + j]
            assert ours.item_id.endswith(f"-{k:05d}-{layout}")
            assert trajectory(ours, 0) == trajectory(build(d, "replay", layout), 0)


def test_the_replay_can_fail():
    item = FIXTURE["items"][0]
    assert trajectory(build(DRAWS[0], "x", "two_sep"), 0) != item["two_in_one"]["prefill"]
    assert trajectory(build(DRAWS[1], "y", "one"), 0) != item["one"]["prefill"]
