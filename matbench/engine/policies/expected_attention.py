"""Expected Attention: the attention future queries are expected to pay each row, from the
statistics of the prefill's queries (kvpress's ExpectedAttentionPress)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("expected_attention")
@dataclass(frozen=True)
class ExpectedAttention(ScoredPolicy):
    """The queries' mean and covariance (before RoPE, sinks left out) are rotated by the RoPE
    rotation averaged over the next `n_future` positions; a row's score is
    softmax(k.mu / sqrt(d) + k.Sigma.k / 2d), averaged over the query group, times ||v||."""

    n_future: int = 512
    n_sink: int = 4
    use_covariance: bool = True
    use_vnorm: bool = True
    epsilon: float = 0.0
    observe = 1 << 30  # every token
    name = "expected_attention"

    def score(self, view):
        import torch
        import torch.nn.functional as F

        q = view.prerope_queries()[:, self.n_sink :]  # [H_q, T - sinks, D]
        mu = q.mean(dim=1)
        cov = None
        if self.use_covariance:
            centred = q - mu[:, None]
            cov = torch.einsum("nsi,nsj->nij", centred, centred) / q.shape[1]
        start = int(view.positions.max()) + 1
        cos, sin = view.rotary_at(torch.arange(start, start + self.n_future))
        dim = q.shape[-1]
        swap = torch.zeros(dim, dim, device=cos.device, dtype=cos.dtype)
        swap[dim // 2 :, : dim // 2], swap[: dim // 2, dim // 2 :] = torch.eye(dim // 2), -torch.eye(dim // 2)
        rotation = (
            (cos[:, :, None] * torch.eye(dim, device=cos.device, dtype=cos.dtype) + sin[:, :, None] * swap)
            .mean(dim=0)
            .to(mu.dtype)
        )
        mu = mu @ rotation.T
        keys = view.keys[:, self.n_sink :].repeat_interleave(view.group, dim=0)  # [H_q, T', D]
        scores = keys @ mu[:, :, None] / math.sqrt(dim)
        scores = scores[..., 0]
        if cov is not None:
            cov = rotation @ cov @ rotation.T
            scores = scores + torch.einsum("hni,hij,hnj->hn", keys, cov, keys) / dim / 2
        scores = F.softmax(scores, dim=-1).view(view.keys.shape[0], view.group, -1).mean(dim=1)
        if self.use_vnorm:
            scores = (scores + self.epsilon) * view.values[:, self.n_sink :].norm(dim=-1)
        return F.pad(scores, (self.n_sink, 0), value=scores.max().item() + 1)
