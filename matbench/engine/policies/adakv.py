"""AdaKV: an inner policy's scores, the budget shared by a layer's KV heads (kvpress's AdaKVPress)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy
from matbench.errors import MatbenchError


@dataclass(frozen=True)
class WrapsScorer(ScoredPolicy):
    """A policy that scores rows with the scoring policy named `inner` (its default arguments)
    and changes only what is done with the scores."""

    inner: str = "snapkv"

    def _inner(self) -> ScoredPolicy:
        policy = POLICIES.get(self.inner)
        if not issubclass(policy, ScoredPolicy) or issubclass(policy, WrapsScorer):
            raise MatbenchError(
                f"{self.name}'s inner policy must be a scoring policy other than adakv or merging (got {self.inner!r})"
            )
        return policy(budget=self.budget)

    def observed_tokens(self) -> int:
        return self._inner().observed_tokens()

    def score(self, view):
        return self._inner().score(view)


@POLICIES.register("adakv")
@dataclass(frozen=True)
class AdaKV(WrapsScorer):
    """Each layer keeps `H_kv x n` rows over all its KV heads together, each head at least
    `alpha x n` of its own best (the safeguard), scored by the policy named `inner` (with its
    default arguments)."""

    alpha: float = 0.2
    name = "adakv"

    def allocate(self, scores: torch.Tensor, budgets: list[int]) -> torch.Tensor:
        import torch

        chosen = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device)
        for layer, n in enumerate(budgets):
            layer_scores = scores[layer].clone()
            heads = layer_scores.shape[0]
            safe = max(1, int(n * self.alpha)) if self.alpha > 0 and n > 0 else 0
            top = layer_scores.topk(safe, dim=-1).indices
            layer_scores.scatter_(-1, top, torch.finfo(layer_scores.dtype).max)
            flat = layer_scores.flatten().topk(heads * n).indices
            chosen[layer].view(-1)[flat] = True
        return chosen
