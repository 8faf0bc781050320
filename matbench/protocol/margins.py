"""The donor margin shift (SPEC 2.7) on candidate log-probabilities, in numpy.

Inputs are `[..., len(menu)]` arrays of candidate log-probabilities (the probe's, one row per
member); the arithmetic stays in the input's dtype so that records written from float32 probe
scores are reproducible from the log.
"""

from __future__ import annotations

import numpy as np


def _logsumexp(x: np.ndarray) -> np.ndarray:
    """logsumexp over the last axis, computed as torch.logsumexp does (max-shifted, in x's dtype)."""
    top = x.max(axis=-1, keepdims=True)
    top = np.where(np.isinf(top), np.zeros_like(top), top)
    out: np.ndarray = (np.log(np.exp(x - top).sum(axis=-1, keepdims=True)) + top)[..., 0]
    return out


def donor_margin(cand_logp: np.typing.ArrayLike, menu: tuple[str, ...], value: str) -> np.ndarray:
    """log p(value) - logsumexp(log p(others)); for a binary menu, log p(v) - log p(other)."""
    logp = np.asarray(cand_logp)
    i = menu.index(value)
    others = np.concatenate([logp[..., :i], logp[..., i + 1 :]], axis=-1)
    margin: np.ndarray = logp[..., i] - _logsumexp(others)
    return margin


def donor_shift(
    logp_a: np.typing.ArrayLike, logp_b: np.typing.ArrayLike, menu: tuple[str, ...], values: tuple[str, str]
) -> float:
    """SPEC 2.7: how far the kept rows lean toward each member's dropped donor.

    With d_X(v) = donor_margin in member X: shift = ((d_A(vA) - d_B(vA)) + (d_B(vB) - d_A(vB))) / 2,
    which is exactly m_A - m_B (m = log p(vA) - log p(vB)) for a binary menu. > 0 leans toward the donor.
    """
    a, b = np.asarray(logp_a), np.asarray(logp_b)
    va, vb = values
    if len(menu) < 2:  # one candidate (a free answer's gold): no margin to shift, unpaired items only
        return 0.0
    toward_a = donor_margin(a, menu, va) - donor_margin(b, menu, va)
    toward_b = donor_margin(b, menu, vb) - donor_margin(a, menu, vb)
    return float((toward_a + toward_b) / a.dtype.type(2))
