"""Paper parity, orthogonal bits: matbench renders kv_orthobit2.py (recorded in
tests/parity/fixtures/orthogonal_bits.json by tests/parity/make_orthogonal_bits.py) byte for
byte: replaying the paper's random stream through `draw`, each item's global prefill (member A
holds the paper's gold), and per question (q4, bit_a, bit_b) the harvest serve's rows and query
under the short readout and the sel_txt text prompt."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from tests.parity.compare import budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("orthogonal_bits")
QUESTIONS = ("q4", "bit_a", "bit_b")


def replayed() -> list:
    """The paper's items at the fixture's seed, from the suite's declared stream (`Suite.paper`,
    what `matbench show --paper-seed` renders)."""
    paper = SUITES.get("orthogonal_bits").paper
    assert paper.script == FIXTURE["script"]
    return paper.items(FIXTURE["seed"], len(FIXTURE["items"]))


PAIRS = replayed()


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_three_readouts_identically(k):
    item, pair = FIXTURE["items"][k], PAIRS[k]
    assert trajectory(pair, 0) == budget_shifts(pair, 0, item["prefill"])
    for q in QUESTIONS:
        ours = served(pair, f"harv_kv/{q}", 0, "short")
        assert ours["rows"] == budget_shifts(pair, 0, item[q]["harv"]["rows"])
        assert ours["query"] == item[q]["harv"]["query"]
        assert text_prompt(pair, f"sel_txt/{q}", "short") == item[q]["sel_txt"]["query"]


def test_the_replay_can_fail():
    item = FIXTURE["items"][0]
    assert trajectory(PAIRS[1], 0) != item["prefill"]
    assert served(PAIRS[0], "harv_kv/bit_b", 0, "short")["query"] != item["bit_a"]["harv"]["query"]
