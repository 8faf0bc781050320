"""Paper parity, phantom swap: matbench renders kv_phantom.py E1 (recorded in
tests/parity/fixtures/phantom_swap.json by tests/parity/make_phantom_swap.py) byte for byte: for
each recorded (object, flip), each donor's prefill (header, the two-step prefix, the event), the
swap serve of the event's rows with its query, and the isolated event. Objects and flips map onto
matbench's items: an object is one pair, kv_phantom's flip 0 renders member A first, flip 1 member
B; the values of every recorded object have equal length, so no position budget intervenes."""

from __future__ import annotations

import re

import pytest

from matbench.data_gen.phantom_swap import EVENT, PAIRS, build
from tests.parity.compare import fixture, served, trajectory
from tests.test_parity_access import isolated

FIXTURE = fixture("phantom_swap")
OBJECT = re.compile(r"action: check_(\w+)\(\)\nobservation: \w+ \w+ = (\w+)\n")


def cell(row: dict) -> tuple[int, int]:
    """(matbench item index, member rendering the paper's donor A) of a recorded row."""
    text = "".join(t for t, _ in row["prefill"]["A"])
    obj, value = OBJECT.search(text).groups()
    index = next(i for i, p in enumerate(PAIRS) if p[0] == obj)
    return index, PAIRS[index][2:].index(value)


@pytest.mark.parametrize("k", range(len(FIXTURE["rows"])))
def test_matbench_renders_the_papers_swap_identically(k):
    row = FIXTURE["rows"][k]
    index, member_a = cell(row)
    pair = build(index, f"parity-{k}")
    for donor, member in (("A", member_a), ("B", 1 - member_a)):
        assert trajectory(pair, member) == row["prefill"][donor]
        ours, paper = served(pair, "swap", member, "short"), row["serves"][donor]
        assert ours["rows"] == paper["rows"] and paper["max_tokens"] == 16 == pair.arm("swap").budget
        assert ours["query"] == paper["query"]
    assert isolated(pair, EVENT, member_a) == row["prefill"]["iso"]
    iso = served(pair, "iso", member_a, "short")
    assert iso["query"] == row["serves"]["iso"]["query"]


def test_the_fixture_holds_both_flips_of_each_recorded_object():
    cells = [cell(row) for row in FIXTURE["rows"]]
    objects = {i for i, _ in cells}
    assert len(FIXTURE["rows"]) == 2 * len(objects) == 24
    assert all(len(PAIRS[i][2]) == len(PAIRS[i][3]) for i in objects)  # kv_phantom skips the others
    assert sorted(cells) == sorted((i, m) for i in objects for m in (0, 1))


def test_the_check_can_fail():
    row = FIXTURE["rows"][0]
    index, member_a = cell(row)
    assert trajectory(build(index, "x"), 1 - member_a) != row["prefill"]["A"]
    assert trajectory(build(index + 1, "y"), member_a) != row["prefill"]["A"]
