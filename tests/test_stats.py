"""Statistics against exact closed forms and published values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matbench import stats


def test_sign_test_is_exact_and_two_sided():
    # The paper's headline: Qwen3-8B 99:0, p = 3.2e-30 = 2 * 0.5**99.
    assert stats.sign_test(99, 0) == pytest.approx(2 * 0.5**99, rel=1e-9)
    assert stats.sign_test(99, 0) == pytest.approx(3.2e-30, rel=0.02)
    # SPEC 2.7: 48:0 gives 7e-15; 47:1 gives 2 * 49 / 2**48.
    assert stats.sign_test(48, 0) == pytest.approx(7.1e-15, rel=0.01)
    assert stats.sign_test(47, 1) == pytest.approx(2 * 49 / 2**48, rel=1e-9)
    assert stats.sign_test(3, 3) == 1.0
    assert stats.sign_test(0, 0) == 1.0
    assert stats.sign_test(5, 1) == pytest.approx(2 * 7 / 64, rel=1e-9)  # not the one-sided 7/64


def test_wilson_matches_textbook_values():
    assert stats.wilson(0, 10).as_list() == pytest.approx([0.0, 0.27753], abs=1e-5)
    assert stats.wilson(5, 10).as_list() == pytest.approx([0.23659, 0.76341], abs=1e-5)
    assert stats.wilson(0, 0).as_list() == [0.0, 1.0]


def test_recall_share_method_of_moments():
    assert stats.recall_share(0.5, 0.5) == 0.0
    assert stats.recall_share(1.0, 0.25) == 1.0
    assert stats.recall_share(0.625, 0.5) == pytest.approx(0.25)


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    x = np.random.default_rng(1).normal(1.0, 1.0, 200)
    ci = stats.bootstrap_mean_ci(x, seed=3)
    assert ci == stats.bootstrap_mean_ci(x, seed=3)
    assert ci.low < x.mean() < ci.high
    se = x.std(ddof=1) / math.sqrt(x.size)
    # A percentile interval of the mean spans about 2 * 1.96 standard errors (not se / sqrt(B)).
    assert (ci.high - ci.low) == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_wilcoxon_all_zero_is_one():
    assert stats.wilcoxon_p([0.0, 0.0, 0.0]) == 1.0
    assert stats.wilcoxon_p(np.arange(1, 21)) < 1e-3
