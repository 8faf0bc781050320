"""Gathering cache rows on the device: what the batched prefill (a row's past) and serving (the
kept rows of each request) both do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from matbench.engine.runtime import to_device

PAD_ID = 0  # any token id: padded tokens are invalid keys and their outputs are never read


def gather_rows(
    sources: Sequence[Any], slots: torch.Tensor, spare: int = 0
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per layer, keys and values `[B, H, W + spare, D]` whose slot w < W of row b is `sources[b]`'s
    (an `EventCache` or prefill `Rows`: per-layer `keys`/`values` `[1, H, T, D]` and `positions`)
    row `slots[b, w]` (the last `spare` slots are room for `runtime.cache_from_rows(..., length=W)`):
    on a GPU one index_select per layer and tensor over the distinct source caches, whatever the
    number of requests; on the CPU one per request, into the buffer (`_gather_per_row`). A slot of
    -1 (padding) takes an arbitrary row: callers mark it an invalid key, so its content never
    reaches an output."""
    if sources[0].keys[0].device.type == "cpu":
        return _gather_per_row(sources, slots, spare)
    distinct: dict[int, int] = {}
    pool: list[Any] = []
    for cache in sources:
        if id(cache) not in distinct:
            distinct[id(cache)] = len(pool)
            pool.append(cache)
    starts = torch.tensor([0] + [int(c.positions.shape[0]) for c in pool]).cumsum(0)
    base = starts[torch.tensor([distinct[id(c)] for c in sources])]
    flat = (base[:, None] + slots.clamp(min=0)).flatten()
    on_device = device_copies(flat)
    batch, width = slots.shape
    out: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])
    for layer in range(len(pool[0].keys)):
        for name, target in (("keys", out[0]), ("values", out[1])):
            rows = [getattr(c, name)[layer][0] for c in pool]  # [H, T, D] each
            heads, _, dim = rows[0].shape
            # One source (a long dialog's cache shared by every request) is indexed in place.
            rows_pool = rows[0] if len(rows) == 1 else torch.cat(rows, dim=1)
            gathered = rows_pool.index_select(1, on_device(rows_pool.device))
            buffer = gathered.new_empty(batch, heads, width + spare, dim)
            buffer[:, :, :width] = gathered.view(heads, batch, width, dim).transpose(0, 1)
            target.append(buffer)
    return out


def _gather_per_row(
    sources: Sequence[Any], slots: torch.Tensor, spare: int
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """`gather_rows` on the CPU: each request's rows selected straight into its part of the buffer,
    one pass over the memory (the pooled gather writes every row twice, and the CPU's memory
    bandwidth pays for both); on a GPU the per-row calls would each be a kernel launch."""
    batch, width = slots.shape
    index = slots.clamp(min=0)
    out: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])
    for layer in range(len(sources[0].keys)):
        for name, target in (("keys", out[0]), ("values", out[1])):
            first = getattr(sources[0], name)[layer]
            buffer = first.new_empty(batch, first.shape[1], width + spare, first.shape[3])
            for b, cache in enumerate(sources):
                torch.index_select(getattr(cache, name)[layer][0], 1, index[b], out=buffer[b, :, :width])
            target.append(buffer)
    return out


def device_copies(index: torch.Tensor):
    """`index` on a given device, copied there once: the layers of a `--device-map` model live on
    several GPUs, and a host-to-device copy per layer would be a stream sync per layer."""
    copies: dict[torch.device, torch.Tensor] = {}

    def on(device: torch.device) -> torch.Tensor:
        if device not in copies:
            copies[device] = to_device(index, device)
        return copies[device]

    return on
