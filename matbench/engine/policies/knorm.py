"""Knorm: keep the rows whose keys have the smallest L2 norm (kvpress's KnormPress)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("knorm")
@dataclass(frozen=True)
class KeyNorm(ScoredPolicy):
    """Score = -||k||, in at least float32 (a bfloat16 norm ties distinct rows)."""

    name = "knorm"

    def score(self, view):
        import torch

        return -torch.linalg.vector_norm(view.keys, dim=-1, dtype=torch.promote_types(view.keys.dtype, torch.float32))
