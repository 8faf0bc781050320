"""Paper parity, discovery: matbench renders the paper's own draws (kv_causal.py Part A, recorded
in tests/parity/fixtures/discovery.json by tests/parity/make_discovery.py) byte for byte: each
member's whole prefill with its positions (the source's position budget included), and the root
and full (matbench: chain) arms' served rows and query under the trace readout."""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.discovery import CHAIN_AT, ROOT_AT, TARGET_AT, DiscoveryDraw, build
from tests.parity.compare import EVENT, fixture, served, trajectory

FIXTURE = fixture("discovery")
ARMS = {"root": "root", "full": "chain"}  # the paper's arm -> matbench's


def draw_of(item: dict) -> DiscoveryDraw:
    """The paper's draws, read back from its ONLINE member's prefill text."""
    text = "".join(t for t, _ in item["prefill"]["ONLINE"])
    bodies = [body for _, body in EVENT.findall(text)]
    assert len(bodies) == 24
    decoy, decoy_state = re.fullmatch(r"register (\w+) set to state (\w+)", bodies[0]).groups()
    source = next(i for i in range(1, 24) if " set to state " in bodies[i])
    mirror, source_reg = re.fullmatch(r"register (\w+) mirrors register (\w+)", bodies[ROOT_AT]).groups()
    mirror2 = re.fullmatch(r"register (\w+) mirrors register \w+", bodies[CHAIN_AT]).group(1)
    target = re.fullmatch(r"register (\w+) mirrors register \w+", bodies[TARGET_AT]).group(1)
    return DiscoveryDraw(source_reg, mirror, mirror2, target, decoy, decoy_state, source, tuple(bodies))


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_draws_identically(k):
    item = FIXTURE["items"][k]
    pair = build(draw_of(item), f"parity-{k}")
    for member, value in enumerate(("ONLINE", "OFFLINE")):
        assert pair.values[member] == value
        assert trajectory(pair, member) == item["prefill"][value]
        for paper_arm, arm in ARMS.items():
            ours = served(pair, arm, member, "trace")
            paper = item["serves"][f"{paper_arm}/{value}"]
            assert ours["rows"] == paper["rows"]
            assert ours["query"] == paper["query"]
            assert paper["max_tokens"] == 160


def test_the_check_can_fail():
    item = FIXTURE["items"][0]
    d = draw_of(item)
    swapped = build(dataclasses.replace(d, source=d.source + 1), "parity-x")
    assert trajectory(swapped, 0) != item["prefill"]["ONLINE"]
    pair = build(d, "parity-0")
    assert served(pair, "root", 0, "short")["query"] != item["serves"]["root/ONLINE"]["query"]


def test_the_papers_own_draws_for_its_seed_are_the_recorded_items():
    """`matbench show --paper-seed`: kv_causal's random stream reproduced, its items rendered as
    the fixture pins them (member A: ONLINE, B: OFFLINE), not read back from the fixture."""
    from matbench.data_gen import SUITES

    paper = SUITES.get("discovery").paper
    assert (paper.script, paper.seed) == (FIXTURE["script"], FIXTURE["seed"])
    pairs = paper.items(FIXTURE["seed"], len(FIXTURE["items"]))
    for pair, item in zip(pairs, FIXTURE["items"], strict=True):
        for member, value in enumerate(("ONLINE", "OFFLINE")):
            assert trajectory(pair, member) == item["prefill"][value]
            assert served(pair, "chain", member, "trace")["rows"] == item["serves"][f"full/{value}"]["rows"]
    other = SUITES.get("discovery").paper.items(FIXTURE["seed"] + 1, 1)[0]
    assert trajectory(other, 0) != FIXTURE["items"][0]["prefill"]["ONLINE"]
