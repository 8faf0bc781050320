"""Merge-on-evict: an inner policy's rows, each evicted value folded into its most similar kept
row (kvpress's MergingPress). The positive control of an eviction audit: the kept rows carry the
evicted rows' values by construction, the source's included when it is evicted."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from matbench.engine.policies.adakv import WrapsScorer
from matbench.engine.policies.base import POLICIES


@POLICIES.register("merging")
@dataclass(frozen=True)
class Merging(WrapsScorer):
    """Keeps what `inner` keeps (its own per-head top rows); then, per layer and KV head, folds
    every dropped row's value into the kept row whose key is most cosine-similar, weighted by the
    similarity and the two values' norms: v_k <- (v_k + sum w_e v_e) / (1 + sum w_e), as kvpress's
    MergingPress. Keys are unchanged (RoPE stays valid)."""

    inner: str = "knorm"
    similarity_threshold: float = 0.0
    name = "merging"
    merges = True

    def allocate(self, scores, budgets):
        return self._inner().allocate(scores, budgets)

    def layer_budgets(self, total, layers):
        return self._inner().layer_budgets(total, layers)

    def merge(self, cache, kept: np.ndarray):
        """`cache` with each layer's values merged: `kept` `[L, H_kv, T]` bool says which rows each
        head serves (the rest are folded into them)."""
        import torch

        values = []
        for layer, v in enumerate(cache.values):
            keys, v = cache.keys[layer][0].float(), v[0].clone()  # [H, T, D]
            for head in range(v.shape[0]):
                keep = torch.from_numpy(kept[layer, head]).to(v.device)
                if keep.all() or not keep.any():
                    continue
                k_kept = torch.nn.functional.normalize(keys[head][keep], dim=-1)
                k_gone = torch.nn.functional.normalize(keys[head][~keep], dim=-1)
                similarity, target = (k_gone @ k_kept.T).max(dim=-1)
                v_kept, v_gone = v[head][keep].float(), v[head][~keep].float()
                weight = similarity.clamp(min=0) * (similarity >= self.similarity_threshold)
                gone_norm, target_norm = v_gone.norm(dim=-1), v_kept.norm(dim=-1)[target]
                weight = weight * gone_norm / (gone_norm + target_norm + 1e-6)
                total = torch.zeros(v_kept.shape[0], device=v.device).index_add_(0, target, weight)
                folded = torch.zeros_like(v_kept).index_add_(0, target, weight[:, None] * v_gone)
                merged = (v_kept + folded) / (1 + total)[:, None]
                v[head][keep] = torch.where((total > 0)[:, None], merged, v_kept).to(v.dtype)
            values.append(v[None])
        return replace(cache, values=tuple(values))
