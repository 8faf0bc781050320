"""A seeded random score: the baseline every other policy should beat (kvpress's RandomPress)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("random")
@dataclass(frozen=True)
class RandomRows(ScoredPolicy):
    """Each KV head keeps a random budget of rows. The draw is indexed by original position, so
    both donor members keep the same rows outside the source (a draw per slot would differ after
    a source of another length: a selection leak made by the baseline itself). On positions
    0..T-1 it is kvpress's draw with the same seed."""

    seed: int = 0
    name = "random"

    def score(self, view):
        import torch

        generator = torch.Generator(device=view.keys.device).manual_seed(self.seed)
        span = int(view.positions.max()) + 1
        draw = torch.rand(view.keys.shape[0], span, generator=generator, device=view.keys.device, dtype=view.keys.dtype)
        return draw[:, view.positions.to(view.keys.device)]
