"""StreamingLLM: the first tokens (attention sinks) and the most recent ones (kvpress's press)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


@POLICIES.register("streaming_llm")
@dataclass(frozen=True)
class StreamingLLM(ScoredPolicy):
    """Keeps the first `n_sink` rows and then the most recent rows within the budget: the score
    is the row's original position (sinks score highest), so both donor members keep the same
    recent window. Position-only, the same in every head."""

    n_sink: int = 4
    name = "streaming_llm"

    def score(self, view):
        import torch

        scores = view.positions.to(view.keys.device, torch.float32).expand(view.keys.shape[0], -1).clone()
        scores[:, : self.n_sink] = float("inf")
        return scores
