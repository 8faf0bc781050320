"""PyramidKV: SnapKV's scores with more rows for lower layers (kvpress's PyramidKVPress)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.snapkv import SnapKV


@POLICIES.register("pyramidkv")
@dataclass(frozen=True)
class PyramidKV(SnapKV):
    """Layer l keeps `max - l * (max - min) / (layers - 1)` rows per KV head, the pyramid of
    KVCache-Factory's formula as kvpress applies it (the total is the ratio's; SnapKV's flat
    budget where the pyramid does not fit). A token budget counts as the ratio it removes."""

    beta: int = 20
    name = "pyramidkv"

    def layer_budgets(self, total: int, layers: int) -> list[int]:
        flat = super().layer_budgets(total, layers)  # refuses a policy without a budget
        given = self.budget.ratio if self.budget is not None else None
        ratio = given if given is not None else 1 - flat[0] / total
        capacity = self.window + total * (1 - ratio)
        low = (capacity - self.window) / self.beta
        high = (capacity - self.window) * 2 - low
        if high >= total - self.window:
            high = total - self.window
            low = (capacity - self.window) * 2 - high
        if not total >= high >= low >= self.window:
            return [max(1, round(total * (1 - ratio)))] * layers
        steps = (high - low) / (layers - 1) if layers > 1 else 0.0
        return [round(high - layer * steps) for layer in range(layers)]
