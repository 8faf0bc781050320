"""Compact and native serving (SPEC 2.3), batched over requests, and greedy decoding.

Both build a fresh cache per call (decoding appends to it in place) with one row per request:

- compact: the kept rows are gathered into contiguous slots 0..n-1 and keep their original
  positions (RoPE is already in the keys); the query starts at max(kept position) + 1 and at
  slot n. The mask is causal and windowed in *slots*, as a compacting system presents it
  (all ones for full attention).
- native: the cache is laid out with slot == original position (gaps and dropped rows are
  masked-out zeros), the query sits at L; causality and sliding windows are measured in
  positions. This is the geometry an eviction system presents.

Requests of different lengths share a batch: cache rows are right-padded with masked rows and
queries left-padded with masked tokens, so every row's last query token is the last column.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from matbench.cache import EventCache
from matbench.runtime import ModelRunner, cache_from_rows

_PAD_ID = 0  # any id: padded tokens are masked as keys and their outputs are never read


@dataclass(frozen=True)
class ServeRequest:
    """Serve the header and the events `served` of `cache`, then ask `query_ids`.
    `query_position` fixes the query's first position in compact serving (default: after the
    last kept row); native serving always asks at L."""

    cache: EventCache
    served: tuple[int, ...]
    query_ids: tuple[int, ...]
    query_position: int | None = None


@dataclass
class ServedBatch:
    """A served cache of B rows and where each row continues (position for RoPE, coordinate for masks)."""

    cache: object
    key_coords: torch.Tensor  # [B, K]
    key_valid: torch.Tensor  # [B, K] bool
    next_position: torch.Tensor  # [B]
    next_coord: torch.Tensor  # [B]

    def append(self, runner: ModelRunner, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Append `ids` `[B, T]` whose last `lengths[b]` tokens are real (left padding); returns
        the logits of the last token `[B, vocab]`."""
        batch, width = ids.shape
        offset = torch.arange(width)[None, :] - (width - lengths)[:, None]  # 0 at the first real token
        positions = (self.next_position[:, None] + offset).clamp(min=0)
        coords = self.next_coord[:, None] + offset
        valid = offset >= 0
        key_coords = torch.cat([self.key_coords, coords], dim=1)
        key_valid = torch.cat([self.key_valid, valid], dim=1)
        logits = runner.forward(ids, positions, self.cache, query_coords=coords,
                                key_coords=key_coords, key_valid=key_valid)
        self.key_coords, self.key_valid = key_coords, key_valid
        self.next_position = self.next_position + lengths
        self.next_coord = self.next_coord + lengths
        return logits[:, -1]


def _stack_rows(per_request: list[list[torch.Tensor]], slots: list[torch.Tensor], width: int) -> list[torch.Tensor]:
    """Per layer, `[B, H, width, D]` holding request b's rows at `slots[b]` (zeros elsewhere)."""
    stacked = []
    for layer_rows in zip(*per_request):
        first = layer_rows[0]
        out = first.new_zeros((len(layer_rows), first.shape[1], width, first.shape[3]))
        for b, (rows, where) in enumerate(zip(layer_rows, slots)):
            out[b, :, where.to(out.device)] = rows[0]
        stacked.append(out)
    return stacked


def _finish(runner: ModelRunner, requests: list[ServeRequest], keys, values, key_coords, key_valid,
            next_position, next_coord) -> tuple[ServedBatch, torch.Tensor]:
    batch = ServedBatch(cache_from_rows(keys, values), key_coords, key_valid, next_position, next_coord)
    lengths = torch.tensor([len(r.query_ids) for r in requests])
    width = int(lengths.max())
    ids = torch.full((len(requests), width), _PAD_ID, dtype=torch.long)
    for b, r in enumerate(requests):
        ids[b, width - len(r.query_ids):] = torch.tensor(r.query_ids)
    return batch, batch.append(runner, ids, lengths)


def serve_compact(runner: ModelRunner, requests: list[ServeRequest],
                  query_position: int | None = None) -> tuple[ServedBatch, torch.Tensor]:
    """Compact serving; `query_position` overrides every request's query position (Gate B)."""
    kept = [r.cache.kept_slots(r.served) for r in requests]
    counts = torch.tensor([len(k) for k in kept])
    width = int(counts.max())
    keys = _stack_rows([[k[:, :, s.to(k.device)] for k in r.cache.keys] for r, s in zip(requests, kept)],
                       [torch.arange(len(s)) for s in kept], width)
    values = _stack_rows([[v[:, :, s.to(v.device)] for v in r.cache.values] for r, s in zip(requests, kept)],
                         [torch.arange(len(s)) for s in kept], width)
    coords = torch.arange(width)[None, :].repeat(len(requests), 1)
    valid = coords < counts[:, None]
    starts = []
    for r, s in zip(requests, kept):
        fixed = query_position if query_position is not None else r.query_position
        starts.append(int(r.cache.positions[s].max()) + 1 if fixed is None else fixed)
    next_position = torch.tensor(starts)
    return _finish(runner, requests, keys, values, coords, valid, next_position, counts.clone())


def serve_native(runner: ModelRunner, requests: list[ServeRequest]) -> tuple[ServedBatch, torch.Tensor]:
    """Native serving: full cache at original positions, dropped rows hidden by the key mask."""
    lengths = torch.tensor([r.cache.length for r in requests])
    width = int(lengths.max())
    slots = [r.cache.positions for r in requests]
    keys = _stack_rows([list(r.cache.keys) for r in requests], slots, width)
    values = _stack_rows([list(r.cache.values) for r in requests], slots, width)
    valid = torch.zeros(len(requests), width, dtype=torch.bool)
    for b, r in enumerate(requests):
        valid[b, r.cache.positions[r.cache.kept_slots(r.served)]] = True
    coords = torch.arange(width)[None, :].repeat(len(requests), 1)
    return _finish(runner, requests, keys, values, coords, valid, lengths.clone(), lengths.clone())


SERVING = {"compact": serve_compact, "native": serve_native}


def greedy_decode(runner: ModelRunner, batch: ServedBatch, first_logits: torch.Tensor,
                  max_new_tokens: int, stop_ids: set[int]) -> list[list[int]]:
    """Greedy continuation; every step continues each row's position and slot by one."""
    rows = first_logits.shape[0]
    out: list[list[int]] = [[] for _ in range(rows)]
    done = torch.zeros(rows, dtype=torch.bool)
    logits = first_logits
    ones = torch.ones(rows, dtype=torch.long)
    for step in range(max_new_tokens):
        token = logits.argmax(-1).cpu()
        for b in range(rows):
            if not done[b]:
                if int(token[b]) in stop_ids:
                    done[b] = True
                else:
                    out[b].append(int(token[b]))
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        logits = batch.append(runner, token[:, None], ones)
    return out
