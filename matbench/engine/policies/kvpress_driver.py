"""A kvpress press run through its own `forward_hook` on one layer of a member, and the rows it kept.

kvpress compresses inside a forward hook on each attention module: it reads the layer's keys and
values from the cache, calls its `compress` (or, for hook-only presses such as `ComposedPress`,
`PerLayerCompressionPress` and `DMSPress`, its own logic), then writes the pruned keys back, or
leaves them whole and records the rows to mask in `module.masked_key_indices`. matbench calls
that hook from its observation forward with the arguments kvpress reads, spelt as kvpress 0.5
expects them (`past_key_values`, `cache_position`: transformers 5 renamed or dropped both), over
a one-layer cache holding the member's rows, then reads which rows survived:

- a pruned cache: each kept row is found among the member's rows (bit-identical key and value);
  a row found nowhere means the press changed what it keeps, which matbench refuses to serve;
- masked rows: `masked_key_indices` = (batch, kv head, slot) index tensors, slots of the cache
  as the press left it.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from matbench.errors import MatbenchError


@dataclass
class _LayerRows:
    keys: torch.Tensor
    values: torch.Tensor


@dataclass
class OneLayerCache:
    """What a kvpress hook reads of a transformers cache: `layers[layer_idx].keys/.values`."""

    layers: dict[int, _LayerRows] = field(default_factory=dict)


def run_hook(press: Any, view: Any, name: str) -> torch.Tensor:
    """`[H_kv, T]` bool: the rows of `view`'s layer (`keys`/`values` `[H_kv, T, D]`, the attention
    input of every row in `view.hidden`) that `press` keeps, run through its own forward hook."""
    module, keys, values = view.module, view.keys, view.values
    total = keys.shape[1]
    if view.hidden is None or view.hidden.shape[0] != total:
        raise RuntimeError(f"kvpress {name} is driven over every row's attention input (got none or a window)")
    cache = OneLayerCache({module.layer_idx: _LayerRows(keys[None], values[None])})
    cos, sin = view.rotary
    kwargs = {
        "hidden_states": view.hidden[None],
        "position_embeddings": (cos[None], sin[None]),
        "cache_position": torch.arange(total, device=keys.device),
        "position_ids": view.positions[None].to(keys.device),
        "past_key_values": cache,
        "attention_mask": None,
    }
    with _masking(module):
        try:
            press.forward_hook(module, (), kwargs, (None, None))
        except AssertionError as err:
            raise MatbenchError(f"kvpress {name} refused this layer: {err or 'an assertion failed'}") from None
        masked = getattr(module, "masked_key_indices", None)
    layer = cache.layers[module.layer_idx]
    kept = torch.zeros(keys.shape[:2], dtype=torch.bool, device=keys.device)
    where = find_rows(keys, values, layer.keys[0], layer.values[0], name)  # [H_kv, n] slots
    kept.scatter_(1, where, True)
    if masked is not None:
        batch, heads, slots = (torch.as_tensor(m, device=keys.device) for m in masked)
        if batch.numel() and int(batch.max()) != 0:
            raise RuntimeError(f"kvpress {name} masked rows of a batch element other than the member's")
        kept[heads, where[heads, slots]] = False
    return kept


@contextmanager
def _masking(module: Any):
    """`module.masked_key_indices` as kvpress's attention patch leaves it at a prefill (None),
    removed afterwards so that no press state stays on the model."""
    object.__setattr__(module, "masked_key_indices", None)
    try:
        yield
    finally:
        object.__delattr__(module, "masked_key_indices")


def find_rows(
    keys: torch.Tensor, values: torch.Tensor, kept_keys: torch.Tensor, kept_values: torch.Tensor, name: str
) -> torch.Tensor:
    """`[H_kv, n]` int64: for each KV head, the slot of each row of `kept_keys`/`kept_values`
    (`[H_kv, n, D]`) among `keys`/`values` (`[H_kv, T, D]`), where it is bit-identical."""
    heads, total, _ = keys.shape
    if kept_keys.shape[1] == total and torch.equal(kept_keys, keys) and torch.equal(kept_values, values):
        return torch.arange(total, device=keys.device).expand(heads, total)
    # Each row's bits hashed in integers (exact, whatever the summation order) order both sets;
    # the match is then checked bit for bit.
    ours, theirs = _row_hash(keys), _row_hash(kept_keys)  # [H, T], [H, n]
    order = ours.argsort(dim=-1)
    sorted_ours = ours.gather(-1, order)
    at = torch.searchsorted(sorted_ours, theirs.contiguous()).clamp(max=total - 1)
    slots = order.gather(-1, at)
    found = slots[..., None].expand(-1, -1, keys.shape[-1])
    same = (keys.gather(1, found) == kept_keys).all(-1) & (values.gather(1, found) == kept_values).all(-1)
    if not bool(same.all()):
        raise MatbenchError(
            f"kvpress {name} serves rows that are not the prefill's (it changes the rows it keeps): "
            "matbench audits presses that choose rows"
        )
    if (slots.sort(dim=-1).values.diff(dim=-1) == 0).any():
        raise MatbenchError(f"kvpress {name} kept one row twice, or two identical rows: its choice is ambiguous")
    return slots


def _row_hash(rows: torch.Tensor) -> torch.Tensor:
    """`[..., n]` int64: a hash of each row's bits (`[..., n, D]`), wrapping integer arithmetic."""
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[rows.element_size()]
    bits = rows.contiguous().view(ints).to(torch.int64)
    weights = torch.randint(1, 2**62, (rows.shape[-1],), generator=torch.Generator().manual_seed(0)) | 1
    return (bits * weights.to(rows.device)).sum(-1)
