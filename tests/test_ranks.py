"""Paired ranks on synthetic models with known differences (leaderboard/ranks.py)."""

from __future__ import annotations

import pytest

from matbench.leaderboard.ranks import ItemOutcome, compare, rank_arm, ranks_of


def model(follows: set[int], shift: float, n: int = 64, offset: float = 0.0) -> dict:
    # per-item shifts vary (a constant difference would make a degenerate bootstrap)
    return {(f"i{k}", "h"): ItemOutcome(k in follows, shift + offset + 0.1 * ((k * 7) % 5 - 2)) for k in range(n)}


def test_the_rank_arm_is_discoverys_root():
    assert rank_arm() == ("discovery", "root")


def test_mcnemar_counts_only_the_discordant_pairs_and_matches_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = model(set(range(20)), 0.0), model({0, 1, 30}, 0.0)
    c = compare(a, b)
    assert (c.shared, c.only_a_follows, c.only_b_follows) == (64, 18, 1)
    table = [[2, 18], [1, 43]]  # both follow, only a; only b, neither
    assert c.follow_p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert c.a_follows_more and not c.b_follows_more


def test_a_known_difference_separates_two_models_and_a_copy_ties():
    strong = model(set(range(20)), 0.5)
    weak = model({0, 1}, 0.0)
    twin = model({0, 1}, 0.0)
    ranks = ranks_of({"strong": strong, "weak": weak, "twin": twin})
    assert {k: (r.follow, r.shift) for k, r in ranks.items()} == {"strong": (1, 1), "weak": (2, 2), "twin": (2, 2)}
    c = compare(strong, weak)
    assert c.shift_difference == pytest.approx(0.5) and c.shift_ci[0] > 0


def test_equal_rates_on_different_items_and_disjoint_items_stay_tied():
    a = model(set(range(10)), 0.0)
    # b: the same shifts on other items (a permutation), so the paired differences centre on zero
    b = {(f"i{k}", "h"): ItemOutcome(10 <= k < 20, a[(f"i{(k + 1) % 64}", "h")].shift) for k in range(64)}
    c = compare(a, b)
    assert c.shift_difference == pytest.approx(0.0, abs=1e-12) and c.shift_ci[0] < 0 < c.shift_ci[1]
    assert (c.only_a_follows, c.only_b_follows, c.follow_p) == (10, 10, 1.0)
    elsewhere = {(f"j{k}", "h"): ItemOutcome(True, 5.0) for k in range(64)}  # no shared item: no test
    assert compare(a, elsewhere) is None
    assert {k: (r.follow, r.shift) for k, r in ranks_of({"a": a, "b": b, "x": elsewhere}).items()} == {
        "a": (1, 1),
        "b": (1, 1),
        "x": (1, 1),
    }


def test_the_same_item_id_with_another_item_hash_is_not_paired():
    a = {("i0", "h1"): ItemOutcome(True, 1.0)}
    b = {("i0", "h2"): ItemOutcome(False, 0.0)}
    assert compare(a, b) is None
