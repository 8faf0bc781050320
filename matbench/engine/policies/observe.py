"""What a scoring policy reads of one layer: its K/V rows and, for policies that watch attention,
the queries of the prefill's last tokens (SnapKV's observation window, TOVA's last token, H2O's
every token).

The prefill does not keep queries. `observe` recomputes them: it runs the member's last `n`
tokens once more at their own positions over a cache of the rows before them (its own prefill's
rows), which is the prefill's own computation for those tokens, and hands each layer's
attention input (hidden states and rotary embeddings) to a callback as the layer runs, so that
no layer's queries outlive its score. The cost is one forward of `n` tokens (`matbench bench
policies` measures it against the prefill).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from matbench.engine.rows import gather_rows
from matbench.engine.runtime import ModelRunner, cache_from_rows, new_cache


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@dataclass
class LayerView:
    """One layer of one member's prefill as a policy scores it.

    `keys`/`values` `[H_kv, T, D]` are the member's cached rows (slot order; `positions` `[T]`).
    Where the policy observes queries, `hidden` `[n, hidden]` is the attention input of the
    prefill's last n tokens in this layer, `rotary` their (cos, sin) `[n, D]`, and `module` the
    layer's attention module (its projections, norms and scaling)."""

    layer: int
    keys: torch.Tensor
    values: torch.Tensor
    positions: torch.Tensor
    module: Any = None
    hidden: torch.Tensor | None = None
    rotary: tuple[torch.Tensor, torch.Tensor] | None = None
    rope: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None = None  # positions -> (cos, sin)

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.module.config.num_attention_heads // self.keys.shape[0]

    def prerope_queries(self) -> torch.Tensor:
        """`[H_q, n, D]`: the observed tokens' queries before RoPE (after the query norm where the
        architecture has one: Qwen3, Gemma 3)."""
        heads, dim = self.module.config.num_attention_heads, self.module.head_dim
        q = self.module.q_proj(self.hidden).view(-1, heads, dim).transpose(0, 1)
        norm = getattr(self.module, "q_norm", None)
        return norm(q) if norm is not None else q

    def queries(self) -> torch.Tensor:
        """`[H_q, n, D]`: the observed tokens' queries as the attention kernel saw them."""
        if self.rotary is None:
            raise RuntimeError(
                f"layer {self.layer}: this view observed no queries (the policy does not watch attention)"
            )
        cos, sin = self.rotary
        q = self.prerope_queries()
        return q * cos[None] + rotate_half(q) * sin[None]

    def rotary_at(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin) `[len(positions), D]` of this layer's rotary embedding at any positions
        (Expected Attention averages the rotation over future positions)."""
        if self.rope is None:
            raise RuntimeError(f"layer {self.layer}: the model has no rotary embedding to evaluate at other positions")
        return self.rope(positions)

    def window_attention(self, scale: float | None = None) -> torch.Tensor:
        """`[H_q, n, T]` (at least float32): the observed tokens' (the last n rows') softmax attention over
        every row, causal among themselves. `scale` defaults to 1/sqrt(D), as kvpress computes it."""
        dtype = torch.promote_types(self.keys.dtype, torch.float32)
        q = self.queries().to(dtype)
        k = self.keys.to(dtype).repeat_interleave(self.group, dim=0)
        n, total = q.shape[1], k.shape[1]
        logits = q @ k.transpose(1, 2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
        future = torch.ones(n, total, dtype=torch.bool, device=q.device).triu(total - n + 1)
        return logits.masked_fill(future, float("-inf")).softmax(-1)


def with_question(runner: ModelRunner, cache: Any, question: tuple[int, ...]) -> Any:
    """A copy of the member's `EventCache` with the question's own rows appended: the question
    prefilled at positions L, L+1, ... over every row of the member (where a serving system asks
    it, and where kvpress's query-aware use puts it: after the context). Only scoring reads it; the
    served cache never holds these rows (the question is asked again at serving)."""
    from dataclasses import replace

    total, extra = int(cache.positions.shape[0]), len(question)
    keys, values = gather_rows([cache], torch.arange(total)[None], spare=extra)
    past = cache_from_rows(keys, values, length=total)
    where = torch.arange(cache.length, cache.length + extra)
    coords = torch.cat([cache.positions.cpu(), where])
    runner.forward(
        torch.tensor([question]),
        where[None],
        past,
        query_coords=where[None],
        key_coords=coords[None],
        key_valid=torch.ones(1, total + extra, dtype=torch.bool),
        logits_to_keep=1,
    )
    return replace(
        cache,
        keys=tuple(layer.keys for layer in past.layers),
        values=tuple(layer.values for layer in past.layers),
        positions=coords.to(cache.positions.device),
        length=cache.length + extra,
    )


def views(cache: Any) -> list[LayerView]:
    """Every layer's rows of an `EventCache`, without observed queries."""
    return [LayerView(layer, k[0], v[0], cache.positions) for layer, (k, v) in enumerate(zip(cache.keys, cache.values))]


def observe(
    runner: ModelRunner, cache: Any, input_ids: tuple[int, ...], n: int, score: Callable[[LayerView], torch.Tensor]
) -> list[torch.Tensor]:
    """`score(view)` for every layer, each view holding the attention input of the prefill's last
    `n` tokens (all of them when `n` >= T): a forward of those tokens at their positions over the
    member's rows before them, with a pre-hook on each attention module."""
    total = len(input_ids)
    n = min(n, total)
    kept = total - n
    positions = cache.positions
    if kept:
        keys, values = gather_rows([cache], torch.arange(kept)[None], spare=n)
        past = cache_from_rows(keys, values, length=kept)
    else:
        past = new_cache()
    layers = views(cache)
    scores: list[torch.Tensor | None] = [None] * len(layers)

    def hook(module, args, kwargs):
        # Bound by name: transformers versions pass the attention input by keyword or position.
        bound = inspect.signature(module.forward).bind_partial(*args, **kwargs).arguments
        hidden = bound["hidden_states"]
        cos, sin = bound["position_embeddings"]
        view = layers[module.layer_idx]
        view.module, view.hidden, view.rotary = module, hidden[0], (cos[0], sin[0])
        view.rope = rope_for(rotary, module.layer_idx, hidden) if rotary is not None else None
        scores[module.layer_idx] = score(view)
        view.hidden = view.rotary = view.rope = None  # the layer's queries do not outlive its score

    decoder = runner.model.get_decoder() if hasattr(runner.model, "get_decoder") else runner.model
    rotary = getattr(decoder, "rotary_emb", None)
    layer_types = getattr(runner.text_config, "layer_types", None)

    def rope_for(embed: Any, layer: int, like: torch.Tensor):
        def at(where: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            ids = where.to(like.device)[None]
            # Gemma 3's rotary embedding takes the layer type (local and global bases differ).
            cos, sin = (
                embed(like, ids, layer_types[layer])
                if layer_types and "layer_type" in _params(embed)
                else embed(like, ids)
            )
            return cos[0], sin[0]

        return at

    handles = [
        m.register_forward_pre_hook(hook, with_kwargs=True) for m in runner.attention_modules("observing queries")
    ]
    try:
        window = positions[kept:][None]
        runner.forward(
            torch.tensor([input_ids[kept:]]),
            window,
            past,
            query_coords=window,
            key_coords=positions[None],
            key_valid=torch.ones(1, total, dtype=torch.bool),
            logits_to_keep=1,
        )
    finally:
        for handle in handles:
            handle.remove()
    if any(s is None for s in scores):
        raise RuntimeError("an attention layer did not run while observing queries")
    return scores  # type: ignore[return-value]


def observed_views(runner: ModelRunner, cache: Any, input_ids: tuple[int, ...], n: int) -> list[LayerView]:
    """Every layer's view of one observation (`observe`) with the observed tokens' attention input
    kept, so that several policies score one forward: `layers x n x hidden` values held while
    they are (the caller drops the list with the pair)."""
    from dataclasses import replace

    kept: list[LayerView] = []

    def keep(view: LayerView) -> torch.Tensor:
        kept.append(replace(view))
        return torch.empty(0)

    observe(runner, cache, input_ids, n, keep)
    return sorted(kept, key=lambda v: v.layer)


def _params(module: Any) -> set[str]:
    return set(inspect.signature(module.forward).parameters)
