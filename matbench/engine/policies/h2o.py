"""H2O / observed attention: rows by the mean attention every prefill token paid them
(kvpress's ObservedAttentionPress)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy

QUERY_BLOCK = 512  # queries per block: a [H_q, block, T] slice instead of the whole [H_q, T, T]


@POLICIES.register("h2o")
@dataclass(frozen=True)
class HeavyHitters(ScoredPolicy):
    """Score = the attention a row received, summed over every later query and divided by how
    many queries could attend to it, averaged over each KV head's query group. The prefill's
    queries are recomputed and attend as they did in the prefill (the layer's own scaling, causal,
    a sliding layer's window), a block of queries at a time."""

    observe = 1 << 30  # every token
    name = "h2o"

    def score(self, view):
        import torch

        dtype = torch.promote_types(view.keys.dtype, torch.float32)
        q = view.queries().to(dtype)
        k = view.keys.to(dtype).repeat_interleave(view.group, dim=0)
        total = k.shape[1]
        scale = getattr(view.module, "scaling", None) or 1 / math.sqrt(q.shape[-1])
        window = getattr(view.module, "sliding_window", None)
        where = view.positions.to(q.device)
        received = torch.zeros(q.shape[0], total, dtype=dtype, device=q.device)
        for start in range(0, total, QUERY_BLOCK):
            block = q[:, start : start + QUERY_BLOCK]
            rows = where[start : start + block.shape[1]]
            future = where[None, :] > rows[:, None]
            if window:
                future |= rows[:, None] - where[None, :] >= window
            weights = (block @ k.transpose(1, 2) * scale).masked_fill(future, float("-inf")).softmax(-1)
            received += weights.sum(dim=1)
        received /= torch.arange(total, 0, -1, device=q.device, dtype=dtype)
        return received.view(view.keys.shape[0], view.group, total).mean(dim=1)
