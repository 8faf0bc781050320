"""Compact and native serving (SPEC 2.3), batched over requests, and greedy decoding.

Both build a fresh cache per call (decoding appends to it in place) with one row per request,
holding the header's and the served events' rows gathered on the device:

- compact: the kept rows sit in contiguous slots 0..n-1 and keep their original positions (RoPE
  is already in the keys); the query starts at max(kept position) + 1 and at slot n. The mask is
  causal and windowed in *slots*, as a compacting system presents it (all ones for full attention).
- native: the geometry an eviction system presents: every mask coordinate is the row's original
  position and the query sits at position L, so causality and sliding windows are measured in
  positions. A dropped row would be a masked-out key that gets exactly zero attention weight, so
  by default only the kept rows are gathered (their coordinates carry the geometry) and the cache
  is as small as the compact one; `full_layout=True` lays out all L positions with dropped rows
  masked (under a per-head policy, each head's dropped rows masked for that head), the literal
  picture, which the mask and head-layout gates use to prove the two agree.

Requests of different lengths share a batch: cache rows are right-padded with masked rows and
queries left-padded with masked tokens, so every row's last query token is the last column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from matbench.engine.cache import EventCache
from matbench.engine.rows import PAD_ID, gather_rows
from matbench.engine.runtime import ModelRunner, cache_from_rows, to_device
from matbench.protocol.pairs import SERVING_MODES


@dataclass(frozen=True)
class ServeRequest:
    """Serve the header and the events `served` of `cache` (or, when a serving policy chose them,
    the token `slots`), then ask `query_ids`. `query_position` fixes the query's first position in
    compact serving (default: after the last kept row); native serving always asks at L."""

    cache: EventCache
    served: tuple[int, ...]
    query_ids: tuple[int, ...]
    query_position: int | None = None
    slots: tuple[int, ...] | None = None
    # Per layer and KV head, which of `slots` that head keeps ([L, H_kv, len(slots)] bool): a
    # per-head serving policy; None = every head keeps every served row.
    head_valid: torch.Tensor | None = None

    def kept_slots(self) -> torch.Tensor:
        if self.slots is not None:
            return torch.tensor(self.slots, dtype=torch.long)
        return self.cache.kept_slots(self.served)


@dataclass
class ServedBatch:
    """A served cache of B rows and where each row continues (position for RoPE, coordinate for
    masks); every tensor lives on the model's device."""

    cache: object
    key_coords: torch.Tensor  # [B, K]
    key_valid: torch.Tensor  # [B, K] bool
    next_position: torch.Tensor  # [B]
    next_coord: torch.Tensor  # [B]
    head_valid: torch.Tensor | None = None  # [L, B, H_kv, K] bool: keys each layer's KV head keeps

    def append(self, runner: ModelRunner, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Append `ids` `[B, T]` whose last `lengths[b]` tokens are real (left padding); returns
        the logits of the last token `[B, vocab]`."""
        device = self.key_coords.device
        ids, lengths = to_device(ids, device), to_device(lengths, device)
        width = ids.shape[1]
        offset = torch.arange(width, device=device)[None, :] - (width - lengths)[:, None]  # 0 at the first real token
        # Left padding sits at the first real token's position and coordinate: a padded query
        # then sees that (valid) token and is never fully masked; its own key is invalid.
        positions = self.next_position[:, None] + offset.clamp(min=0)
        coords = self.next_coord[:, None] + offset.clamp(min=0)
        key_coords = torch.cat([self.key_coords, coords], dim=1)
        key_valid = torch.cat([self.key_valid, offset >= 0], dim=1)
        head_valid = None
        if self.head_valid is not None:  # appended tokens are kept by every head
            layers, rows, kv_heads, _ = self.head_valid.shape
            head_valid = torch.cat([self.head_valid, self.head_valid.new_ones(layers, rows, kv_heads, width)], dim=3)
        logits = runner.forward(
            ids,
            positions,
            self.cache,
            query_coords=coords,
            key_coords=key_coords,
            key_valid=key_valid,
            head_valid=head_valid,
        )
        self.key_coords, self.key_valid, self.head_valid = key_coords, key_valid, head_valid
        self.next_position = self.next_position + lengths
        self.next_coord = self.next_coord + lengths
        return logits[:, -1]


def _pad(rows: list[torch.Tensor], fill: int) -> torch.Tensor:
    width = max(int(r.shape[0]) for r in rows)
    return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[0]), value=fill) for r in rows])


def _serve(
    runner: ModelRunner,
    requests: list[ServeRequest],
    slots: list[torch.Tensor],
    coords: list[torch.Tensor],
    next_position: torch.Tensor,
    next_coord: torch.Tensor,
    valid: list[torch.Tensor] | None = None,
    reserve: int = 0,
    heads: list[torch.Tensor | None] | None = None,
) -> tuple[ServedBatch, torch.Tensor]:
    """Serve `slots[b]` of each request's cache at mask coordinates `coords[b]`; every real slot
    is a valid key unless `valid` says otherwise (the literal native layout), and every head sees
    it unless `heads[b]` (`[L, H_kv, len(slots[b])]`, default the request's `head_valid`) says
    otherwise. The cache keeps room for the query and `reserve` more tokens (greedy decoding)
    after the rows."""
    device = runner.device
    slot_index = _pad(slots, -1)
    width = max(len(r.query_ids) for r in requests)
    keys, values = gather_rows([r.cache for r in requests], slot_index, spare=width + reserve)
    key_valid = slot_index >= 0 if valid is None else _pad([v.long() for v in valid], 0).bool()
    # Padding slots are invalid keys; their coordinates (0) never matter.
    key_coords, key_valid, next_position, next_coord = (
        to_device(t, device) for t in (_pad(coords, 0), key_valid, next_position, next_coord)
    )
    batch = ServedBatch(
        cache_from_rows(keys, values, length=slot_index.shape[1]),
        key_coords,
        key_valid,
        next_position,
        next_coord,
        head_valid=_head_valid(runner, [r.head_valid for r in requests] if heads is None else heads, slots, slot_index),
    )
    lengths = torch.tensor([len(r.query_ids) for r in requests])
    ids = torch.full((len(requests), width), PAD_ID, dtype=torch.long)
    for b, r in enumerate(requests):
        ids[b, width - len(r.query_ids) :] = torch.tensor(r.query_ids)
    return batch, batch.append(runner, ids, lengths)


def _head_valid(
    runner: ModelRunner, heads: list[torch.Tensor | None], slots: list[torch.Tensor], slot_index: torch.Tensor
) -> torch.Tensor | None:
    """`[L, B, H_kv, W]`: each request's per-head selection over its padded slots (every head keeps
    every row of a request without one; one per slot of `slots[b]`), or None when no request has one."""
    if all(h is None for h in heads):
        return None
    shape = runner.head_shape
    out = torch.ones(*shape, len(heads), slot_index.shape[1], dtype=torch.bool)
    for b, h in enumerate(heads):
        if h is not None:
            if tuple(h.shape) != (*shape, len(slots[b])):
                raise ValueError(f"head_valid {tuple(h.shape)} must be {(*shape, len(slots[b]))}")
            out[:, :, b, : h.shape[2]] = h
    return to_device(out.transpose(1, 2).contiguous(), runner.device)  # [L, B, H_kv, W]


def query_start(
    request: ServeRequest, serving: str, kept: torch.Tensor | None = None, query_position: int | None = None
) -> tuple[int, int]:
    """Where `request`'s query begins under `serving` ("compact" or "native"): its first position
    (RoPE) and mask coordinate. Compact: after the last kept row (`kept`, default the request's
    kept slots), or at `query_position` / the request's own fixed position, and at slot n, the
    number of kept rows. Native: at L, coordinate L. `matbench show` prints it."""
    if serving == "native":
        return request.cache.length, request.cache.length
    kept = request.kept_slots() if kept is None else kept
    fixed = query_position if query_position is not None else request.query_position
    return (int(request.cache.positions[kept].max()) + 1 if fixed is None else fixed), len(kept)


def serve_compact(
    runner: ModelRunner, requests: list[ServeRequest], query_position: int | None = None, reserve: int = 0
) -> tuple[ServedBatch, torch.Tensor]:
    """Compact serving; `query_position` overrides every request's query position (Gate B);
    `reserve`: tokens to be decoded after the query (room kept in the cache)."""
    kept = [r.kept_slots() for r in requests]
    starts = [query_start(r, "compact", s, query_position) for r, s in zip(requests, kept)]
    position, coord = map(torch.tensor, zip(*starts))
    return _serve(runner, requests, kept, [torch.arange(len(s)) for s in kept], position, coord, reserve=reserve)


def serve_native(
    runner: ModelRunner, requests: list[ServeRequest], full_layout: bool = False, reserve: int = 0
) -> tuple[ServedBatch, torch.Tensor]:
    """Native serving: mask coordinates are original positions, the query sits at L."""
    position, coord = map(torch.tensor, zip(*(query_start(r, "native") for r in requests)))
    if not full_layout:
        kept = [r.kept_slots() for r in requests]
        return _serve(
            runner,
            requests,
            kept,
            [r.cache.positions[s] for r, s in zip(requests, kept)],
            position,
            coord,
            reserve=reserve,
        )
    slots, valid, heads = [], [], []
    for r in requests:
        at_position = torch.full((r.cache.length,), -1, dtype=torch.long)
        at_position[r.cache.positions] = torch.arange(r.cache.positions.shape[0])
        shown = torch.zeros(r.cache.length, dtype=torch.bool)
        kept_at = r.cache.positions[r.kept_slots()]
        shown[kept_at] = True
        slots.append(at_position)
        valid.append(shown)
        full = None
        if r.head_valid is not None:  # each head's choice at its rows' positions; the rest hidden
            full = torch.zeros(*r.head_valid.shape[:2], r.cache.length, dtype=torch.bool)
            full[:, :, kept_at] = r.head_valid.cpu()
        heads.append(full)
    return _serve(
        runner,
        requests,
        slots,
        [torch.arange(r.cache.length) for r in requests],
        position,
        coord,
        valid,
        reserve=reserve,
        heads=heads,
    )


# protocol.pairs.SERVING_MODES names them; the two take different optional arguments after `requests`
SERVING: dict[str, Callable[..., tuple[ServedBatch, torch.Tensor]]] = dict(
    zip(SERVING_MODES, (serve_compact, serve_native))
)
