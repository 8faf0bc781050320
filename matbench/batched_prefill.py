"""Batched global prefill: the prefixes of many donor pairs in one forward, then every member's
suffix (the events from the source on) in another, each after its own pair's prefix.

Rows of different lengths are right-padded. A padded token gets coordinates after every real
token of its row and is marked invalid as a key, so no real token ever attends to it (causality
alone would already hide it from the row's real tokens; the validity mask keeps it hidden from
the suffix tokens that come later). Each row's real slots are gathered back on the device: the
result is the `EventCache` that `cache.prefill_pair` builds one pair at a time.
"""

from __future__ import annotations

import torch

from matbench.cache import EventCache
from matbench.pairs import PairLayout
from matbench.runtime import ModelRunner, cache_from_rows, cache_rows, new_cache

_PAD_ID = 0  # any id: padded tokens are invalid keys and their outputs are never read

Rows = tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]  # keys, values per layer; positions


def prefill_rows(runner: ModelRunner, new: list[tuple[tuple[int, ...], tuple[int, ...]]],
                 past: list[Rows] | None = None, chunk_size: int | None = None) -> list[Rows]:
    """Append token rows `new[b] = (ids, positions)` after `past[b]` (or nothing), all in one
    batch; returns each row's real keys/values `[1, kv_heads, T_b, head_dim]` and positions."""
    batch = len(new)
    lengths = [len(ids) for ids, _ in new]
    width = max(lengths)
    ids = torch.full((batch, width), _PAD_ID, dtype=torch.long)
    pos = torch.zeros(batch, width, dtype=torch.long)
    valid = torch.zeros(batch, width, dtype=torch.bool)
    for b, (row_ids, row_pos) in enumerate(new):
        n = len(row_ids)
        ids[b, :n] = torch.tensor(row_ids)
        pos[b, :n] = torch.tensor(row_pos)
        last = row_pos[-1] if n else (int(past[b][2].max()) if past else -1)
        pos[b, n:] = last + 1 + torch.arange(width - n)  # after every real token of the row
        valid[b, :n] = True

    if past:
        past_len = [int(p[2].shape[0]) for p in past]
        p_width = max(past_len)
        keys = [_stack([p[0][layer] for p in past], p_width) for layer in range(len(past[0][0]))]
        values = [_stack([p[1][layer] for p in past], p_width) for layer in range(len(past[0][1]))]
        cache = cache_from_rows(keys, values)
        past_coords = torch.stack([torch.nn.functional.pad(p[2], (0, p_width - len(p[2])), value=0) for p in past])
        past_valid = torch.arange(p_width)[None, :] < torch.tensor(past_len)[:, None]
    else:
        past_len, p_width = [0] * batch, 0
        cache = new_cache()
        past_coords = torch.zeros(batch, 0, dtype=torch.long)
        past_valid = torch.zeros(batch, 0, dtype=torch.bool)

    step = chunk_size or width
    for start in range(0, width, step):
        end = min(start + step, width)
        runner.forward(ids[:, start:end], pos[:, start:end], cache, query_coords=pos[:, start:end],
                       key_coords=torch.cat([past_coords, pos[:, :end]], dim=1),
                       key_valid=torch.cat([past_valid, valid[:, :end]], dim=1))
    all_keys, all_values = cache_rows(cache)
    out = []
    for b in range(batch):
        slots = torch.cat([torch.arange(past_len[b]), p_width + torch.arange(lengths[b])])
        on_device = slots.to(all_keys[0].device)
        positions = torch.cat([past[b][2][:past_len[b]] if past else torch.empty(0, dtype=torch.long), pos[b, :lengths[b]]])
        out.append(([k[b:b + 1, :, on_device] for k in all_keys], [v[b:b + 1, :, on_device] for v in all_values], positions))
    return out


def _stack(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """`[1, H, T_b, D]` rows right-padded with zeros to `[B, H, width, D]`."""
    return torch.cat([torch.nn.functional.pad(r, (0, 0, 0, width - r.shape[2])) for r in rows])


def prefill_pairs(runner: ModelRunner, layouts: list[PairLayout],
                  chunk_size: int | None = None) -> list[tuple[EventCache, EventCache]]:
    """`cache.prefill_pair` for several pairs at once: one batched forward for the shared
    prefixes, one for every member's suffix (identical members, an unpaired item, share theirs)."""
    for lay in layouts:
        a, b = lay.members
        split = lay.prefix_tokens
        if a.input_ids[:split] != b.input_ids[:split] or a.positions[:split] != b.positions[:split]:
            raise AssertionError("donor members differ before the source")  # guarded by layout_pair
    prefixes = prefill_rows(runner, [(lay.members[0].input_ids[:lay.prefix_tokens],
                                      lay.members[0].positions[:lay.prefix_tokens]) for lay in layouts],
                            chunk_size=chunk_size)
    suffix_rows, owners = [], []
    for k, lay in enumerate(layouts):
        if lay.prefix_tokens < len(lay.members[0].input_ids):
            for m in (0, 1):
                member = lay.members[m]
                suffix_rows.append((member.input_ids[lay.prefix_tokens:], member.positions[lay.prefix_tokens:]))
                owners.append((k, m))
    done = prefill_rows(runner, suffix_rows, [prefixes[k] for k, _ in owners], chunk_size) if suffix_rows else []
    by_member = dict(zip(owners, done))
    out = []
    for k, lay in enumerate(layouts):
        caches = []
        for m in (0, 1):
            keys, values, positions = by_member.get((k, m), prefixes[k])
            member = lay.members[m]
            caches.append(EventCache(tuple(keys), tuple(values), positions, member.header_span,
                                     member.event_spans, lay.length))
        out.append((caches[0], caches[1]))
    return out
