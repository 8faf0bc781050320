"""Paper parity, phantom erase: matbench renders kv_phantom.py E2 (recorded in
tests/parity/fixtures/phantom_erase.json by tests/parity/make_phantom_erase.py) byte for byte: per
recorded item, the global prefill (header and steps), the erased serve (every row but step 1's,
with its query) and the oracle's text prompt. A recorded item is member A of a matbench pair
whose member B writes a smaller OLD, so that the conflict update, 2 x the larger OLD, is the
paper's 2 x OLD; positions after step 1 move by the source's position budget."""

from __future__ import annotations

import pytest

from matbench.data_gen.phantom_erase import OLDS, build, first_digit
from tests.parity.compare import budget_shifts, fixture, served, trajectory
from tests.test_parity_access import text_prompt

FIXTURE = fixture("phantom_erase")


def partner(old: int) -> int:
    """A smaller OLD with another first digit (or, for the smallest, any other with one)."""
    smaller = [o for o in OLDS if o < old and first_digit(o) != first_digit(old)]
    return smaller[-1] if smaller else next(o for o in OLDS if first_digit(o) != first_digit(old))


def ours_for_paper(item: dict, text: str) -> str:
    """The paper's text with its update NEW replaced by matbench's (they differ only where the
    smallest OLD has no smaller partner: 2 x 20 for kv_phantom's 2 x 15, of equal length)."""
    if not item["conflict"]:
        return text
    return text.replace(f"{item['new']} seconds", f"{2 * max(item['old'], partner(item['old']))} seconds").replace(
        f"'timeout', {item['new']})", f"'timeout', {2 * max(item['old'], partner(item['old']))})"
    )


def mapped(item: dict, runs: list) -> list:
    return [[ours_for_paper(item, t), p] for t, p in runs]


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_renders_the_papers_erase_identically(k):
    item = FIXTURE["items"][k]
    old = item["old"]
    pair = build(f"parity-{k}", old, partner(old), item["conflict"])
    assert trajectory(pair, 0) == budget_shifts(pair, 0, mapped(item, item["prefill"]))
    ours = served(pair, "erased", 0, "short")
    assert ours["rows"] == budget_shifts(pair, 0, mapped(item, item["erased"]["rows"]))
    assert ours["query"] == item["erased"]["query"]
    assert pair.arm("erased").budget == item["erased"]["max_tokens"] == item["oracle"]["max_tokens"] == 24
    assert text_prompt(pair, "oracle", "short") == ours_for_paper(item, item["oracle"]["query"])
    assert item["new"] == (2 * old if item["conflict"] else None)


def test_only_the_smallest_old_changes_the_update():
    changed = {i["old"] for i in FIXTURE["items"] if ours_for_paper(i, i["oracle"]["query"]) != i["oracle"]["query"]}
    assert changed == {min(OLDS)}


def test_the_fixture_holds_both_variants_and_the_check_can_fail():
    items = FIXTURE["items"]
    assert len(items) == 24 and [i["conflict"] for i in items] == [k % 2 == 1 for k in range(24)]
    assert {i["old"] for i in items} <= set(OLDS)
    item = items[0]
    wrong = build("x", partner(item["old"]), item["old"], item["conflict"])
    assert trajectory(wrong, 0) != budget_shifts(wrong, 0, item["prefill"])
