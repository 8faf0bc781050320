"""KeyDiff: keep the rows whose keys differ most from the average key (kvpress's KeyDiffPress)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("keydiff")
@dataclass(frozen=True)
class KeyDiff(ScoredPolicy):
    """Score = -cos(k, mean of the unit keys), per KV head."""

    name = "keydiff"

    def score(self, view):
        import torch.nn.functional as F

        anchor = F.normalize(view.keys, p=2, dim=-1).mean(dim=1, keepdim=True)
        return -F.cosine_similarity(view.keys, anchor, dim=-1)
