"""SnapKV: rows the last `window` tokens attend to, pooled (kvpress's SnapKVPress)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.scored import ScoredPolicy


def snapkv_scores(view, window: int, kernel: int) -> torch.Tensor:
    """`[H_kv, T]`: the mean attention of the last `window` queries on each earlier row, average-
    pooled over `kernel` neighbouring rows and averaged over each KV head's query group; the
    window's own rows score above every other (kept first)."""
    import torch.nn.functional as F

    total = view.keys.shape[1]
    window = min(window, total - 1)
    attention = view.window_attention()[:, -window:, : total - window]  # [H_q, w, T - w]
    scores = F.avg_pool1d(attention.mean(dim=1)[None], kernel_size=kernel, padding=kernel // 2, stride=1)[0]
    scores = scores.view(view.keys.shape[0], view.group, -1).mean(dim=1)
    return F.pad(scores, (0, window), value=scores.max().item() + 1)


@POLICIES.register("snapkv")
@dataclass(frozen=True)
class SnapKV(ScoredPolicy):
    """The observation window is the prefill's last `window` tokens (question-agnostic)."""

    window: int = 64
    kernel: int = 5
    name = "snapkv"

    def observed_tokens(self) -> int:
        return self.window

    def score(self, view):
        return snapkv_scores(view, self.window, self.kernel)
