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
    assert stats.wilson(0, 7).low == 0.0 and stats.wilson(7, 7).high == 1.0  # exact, not 5.6e-17


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


def test_a_repeated_question_is_answered_from_the_cache_with_the_direct_answer():
    from scipy import stats as sp

    x = [0.25, -0.5, 1.0, 0.0, 0.75, -0.25, 0.5]
    means = np.asarray(x)[np.random.default_rng(4).integers(0, len(x), size=(10_000, len(x)))].mean(axis=1)
    direct = [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]
    before = stats._bootstrap_mean_ci.cache_info()
    assert stats.bootstrap_mean_ci(x, seed=4).as_list() == direct
    assert stats.bootstrap_mean_ci(np.asarray(x), seed=4).as_list() == direct
    after = stats._bootstrap_mean_ci.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)
    assert stats.wilcoxon_p(x) == stats.wilcoxon_p(tuple(x)) == float(sp.wilcoxon(x).pvalue)
    assert stats.sign_test(7, 2) == float(sp.binomtest(7, 9, 0.5).pvalue)


def test_wilcoxon_all_zero_is_one():
    assert stats.wilcoxon_p([0.0, 0.0, 0.0]) == 1.0
    assert stats.wilcoxon_p(np.arange(1, 21)) < 1e-3


def test_mcnemar_exact_matches_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    for b, c in [(12, 3), (5, 5), (0, 9), (20, 31)]:
        ref = mcnemar([[40, b], [c, 40]], exact=True).pvalue
        assert stats.mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-12)
    # Two-sided: twice the one-sided tail (a one-sided p would be half of it).
    assert stats.mcnemar_exact(0, 9) == pytest.approx(2 * 0.5**9)


def test_benjamini_hochberg_matches_scipy_and_statsmodels():
    from scipy.stats import false_discovery_control
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 11)])
    ours = stats.benjamini_hochberg(p)
    assert np.allclose(ours, false_discovery_control(p, method="bh"), rtol=1e-12)
    assert np.allclose(ours, multipletests(p, method="fdr_bh")[1], rtol=1e-12)
    # Worked example (Benjamini & Hochberg 1995 style): 4 tests.
    assert stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_bootstrap_intervals_have_the_width_of_a_standard_error_not_se_over_sqrt_b():
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 1.0, 400)
    ci = stats.bootstrap_mean_ci(x, seed=1)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert (ci.high - ci.low) == pytest.approx(2 * 1.96 * se, rel=0.1)
    # Clustered: 20 clusters of 20 identical values carry 20 observations' worth of information.
    clusters = np.repeat(np.arange(20), 20)
    values = np.repeat(rng.normal(0, 1, 20), 20)
    clustered = stats.cluster_bootstrap_mean_ci(values, clusters.tolist(), seed=1)
    se_clusters = values[::20].std(ddof=1) / np.sqrt(20)
    assert (clustered.high - clustered.low) == pytest.approx(2 * 1.96 * se_clusters, rel=0.15)
    naive = stats.bootstrap_mean_ci(values, seed=1)
    assert (naive.high - naive.low) < 0.5 * (clustered.high - clustered.low)


def test_binomial_greater_is_one_sided():
    assert stats.binomial_greater(9, 10, 0.5) == pytest.approx(11 / 1024)
    assert stats.binomial_greater(1, 10, 0.5) > 0.99


def test_clustered_wilson_spans_item_and_answer_level():
    # Concordant members: the paper's item-level Wilson (.934 [.896, .958] is 239/256 items).
    concordant = stats.clustered_wilson([2] * 239 + [0] * 17, 2)
    assert concordant == stats.wilson(239, 256)
    assert (round(concordant.low, 3), round(concordant.high, 3)) == (0.896, 0.958)
    # Members always split (each pair one right, one wrong): no between-item variance, so the
    # answers count as independent trials.
    assert stats.clustered_wilson([1] * 64, 2) == stats.wilson(64, 128)
    # In between: wider than answer-level, narrower than item-level.
    mixed = [2, 1, 0, 1, 2, 2, 0, 1] * 8
    inner, outer = stats.wilson(sum(mixed), 128), stats.wilson(sum(mixed) / 2, 64)
    got = stats.clustered_wilson(mixed, 2)
    assert outer.low < got.low < inner.low and inner.high < got.high < outer.high
    assert stats.clustered_wilson([2] * 10, 2) == stats.wilson(10, 10)
