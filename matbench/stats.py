"""Statistics of the protocol, on top of scipy.stats.

All p-values are two-sided; all intervals are 95% unless told otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

# The tests and intervals here are pure functions of their inputs, and summaries ask them again
# and again of the same few inputs (every arm of every class, a scorecard over many runs): each
# is computed once per distinct input. The caches hold immutable results only.
_CACHED = 8192


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def as_list(self) -> list[float]:
        return [self.low, self.high]


def sign_test(positive: int, negative: int) -> float:
    """Exact two-sided sign test of positive vs negative counts (ties already dropped); 1.0 if none."""
    n = positive + negative
    if n == 0:
        return 1.0
    return _sign_test(positive, n)


@lru_cache(maxsize=_CACHED)
def _sign_test(positive: int, n: int) -> float:
    return float(stats.binomtest(positive, n, 0.5, alternative="two-sided").pvalue)


@lru_cache(maxsize=16)
def _normal_quantile(q: float) -> float:
    return float(stats.norm.ppf(q))


def wilson(successes: float, n: float, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0. Counts may be
    effective (non-integer) counts, as `clustered_wilson` passes."""
    if n == 0:
        return Interval(0.0, 1.0)
    z = _normal_quantile(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The bounds are exactly 0 and 1 at k = 0 and k = n; the formula leaves rounding dust there.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(float(low), float(high))


def clustered_wilson(successes_per_item, trials_per_item: int, confidence: float = 0.95) -> Interval:
    """Wilson interval of a proportion whose trials come in items of `trials_per_item` correlated
    answers (the two members of a donor pair share the served text): the Wilson score interval at
    Kish's effective sample size n_eff = p(1 - p) / Var(mean of item means), kept within [items,
    answers]. Concordant members give the paper's item-level Wilson (n_eff = items); independent
    members the answer-level one. At p = 0 or 1 the design effect is undefined: items is used."""
    x = np.asarray(successes_per_item, dtype=float) / trials_per_item
    items = x.size
    if items == 0:
        return Interval(0.0, 1.0)
    p = float(x.mean())
    n_eff = float(items)
    if 0 < p < 1 and items > 1:
        var_mean = float(x.var(ddof=1)) / items
        n_eff = (
            items * trials_per_item
            if var_mean == 0
            else min(max(p * (1 - p) / var_mean, items), items * trials_per_item)
        )
    return wilson(p * n_eff, n_eff, confidence)


def recall_share(accuracy: float, chance: float) -> float:
    """Method of moments: accuracy = r + (1 - r) * chance, so r = (accuracy - chance) / (1 - chance)."""
    return (accuracy - chance) / (1 - chance)


def bootstrap_mean_ci(values, n_boot: int = 10_000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Percentile bootstrap interval of the mean, with a fixed seed (reproducible)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Interval(math.nan, math.nan)
    return _bootstrap_mean_ci(x.tobytes(), n_boot, seed, confidence)


@lru_cache(maxsize=_CACHED)
def _bootstrap_mean_ci(data: bytes, n_boot: int, seed: int, confidence: float) -> Interval:
    x = np.frombuffer(data, dtype=float)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(low), float(high))


def wilcoxon_p(values) -> float:
    """Wilcoxon signed-rank p against zero (zeros dropped); 1.0 when every value is zero."""
    x = np.asarray(values, dtype=float)
    if np.count_nonzero(x) == 0:
        return 1.0
    return _wilcoxon_p(x.tobytes())


@lru_cache(maxsize=_CACHED)
def _wilcoxon_p(data: bytes) -> float:
    x = np.frombuffer(data, dtype=float)
    return float(stats.wilcoxon(x, zero_method="wilcox", alternative="two-sided").pvalue)


def cluster_bootstrap_mean_ci(
    values, clusters, n_boot: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of the mean resampling whole clusters (e.g. conversations)
    with replacement: items of one conversation are not independent. Fixed seed."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Interval(math.nan, math.nan)
    labels = sorted(set(clusters))
    index = {c: i for i, c in enumerate(labels)}
    members = np.array([index[c] for c in clusters])
    sums = np.bincount(members, weights=x, minlength=len(labels))
    sizes = np.bincount(members, minlength=len(labels)).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(labels), size=(n_boot, len(labels)))
    means = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    alpha = (1 - confidence) / 2
    return Interval(float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def equivalent_by_ci(interval: Interval, bound: float) -> bool:
    """TOST by the interval: two one-sided tests at level a reject both non-equivalence
    hypotheses exactly when the (1 - 2a) interval lies inside (-bound, +bound)."""
    return -bound < interval.low and interval.high < bound


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Exact two-sided McNemar test on the discordant pairs of a paired binary outcome (e.g. an
    item right under one arm and wrong under the other): a binomial test of b vs c at 1/2."""
    return sign_test(only_first, only_second)


def benjamini_hochberg(pvalues) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order; reject at FDR q when
    adjusted <= q. Monotone step-up: q_(i) = min over j >= i of p_(j) * m / j, capped at 1."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1].clip(max=1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def binomial_greater(successes: int, n: int, chance: float) -> float:
    """One-sided exact binomial p of `successes` in `n` against `chance` (H1: above chance)."""
    if n == 0:
        return 1.0
    return float(stats.binomtest(successes, n, chance, alternative="greater").pvalue)
