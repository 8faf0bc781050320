"""Which decoder layers attend within a sliding window, from a text config."""

from __future__ import annotations

from typing import Any


def layer_windows(text_config: Any) -> list[int | None]:
    """Sliding window of every decoder layer (None = full attention)."""
    n = text_config.num_hidden_layers
    window = getattr(text_config, "sliding_window", None)
    layer_types = getattr(text_config, "layer_types", None)
    if layer_types:
        return [window if t == "sliding_attention" else None for t in layer_types[:n]]
    if window and getattr(text_config, "use_sliding_window", True):
        return [window] * n
    return [None] * n
