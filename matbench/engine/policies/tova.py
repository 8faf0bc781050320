"""TOVA: rows the last token attends to, averaged over all heads (kvpress's TOVAPress)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("tova")
@dataclass(frozen=True)
class TOVA(ScoredPolicy):
    """Score = the last token's attention, mean over every query head (so every KV head keeps
    the same rows); the last row itself is always kept."""

    observe = 1
    name = "tova"

    def score(self, view):
        import torch.nn.functional as F

        attention = view.window_attention()[:, -1, :-1]  # [H_q, T - 1]
        scores = attention.mean(dim=0, keepdim=True).expand(view.keys.shape[0], -1)
        return F.pad(scores, (0, 1), value=scores.max().item() + 1)
