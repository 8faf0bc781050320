"""Batched global prefill: every pair's first member in one forward, then the second member's
suffix (the events from the source on) in another, after the first member's prefix rows.

The members of a pair share every token before the source, so the second member only computes
what differs and branches off the first member's prefix rows (the prefix is prefilled once, as
`cache.prefill_pair` does). Whole members are of nearly equal length, so the first forward pads
little; it has no past and is exactly causal, so on models without sliding windows it runs on the
attention kernel's causal path. Rows of different lengths are right-padded. A padded token gets
the coordinate right after the last real token of its row and is marked invalid as a key, so no
real token ever attends to it (causality alone already hides it from the row's real tokens; the
validity mask keeps it hidden from the suffix tokens that come later). Under `sdpa_grouped` a
suffix whose past is contiguous is causal over slots too and runs on the flash kernel's
lower-right causal path; long suffixes after pasts of different lengths run one length at a time
for it (`_causal_groups`). Each row's real slots are
gathered back on the device: the result is the `EventCache` that `cache.prefill_pair` builds one
pair at a time.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from matbench.engine.cache import EventCache
from matbench.engine.layout import MemberLayout, PairLayout
from matbench.engine.prefixes import Prefilled, PrefixStore, token_arrays
from matbench.engine.rows import PAD_ID, device_copies, gather_rows
from matbench.engine.runtime import (
    ModelRunner,
    cache_from_rows,
    cache_rows,
    new_cache,
    to_device,
)


class Rows(NamedTuple):
    """One row's real keys/values per layer `[1, kv_heads, T, head_dim]` and their positions
    `[T]` (the attribute names of `EventCache`, so `serving.gather_rows` reads both)."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    positions: torch.Tensor


# A row whose new tokens attend over at least this many (query, key) pairs runs in a forward of its
# own when the pasts of its batch differ in length (`_causal_groups`): 4k queries over 4k keys.
LONE_ATTENTION = 2**24


def prefill_rows(
    runner: ModelRunner,
    new: list[tuple[tuple[int, ...], tuple[int, ...]]],
    past: list[Rows] | None = None,
    chunk_size: int | None = None,
) -> list[Rows]:
    """Append token rows `new[b] = (ids, positions)` after `past[b]` (or nothing), in as few
    batched forwards as pay; returns each row's real keys/values and positions."""
    groups = _causal_groups(runner, new, past)
    if len(groups) == 1:
        return _prefill_batch(runner, new, past, chunk_size)
    rows: dict[int, Rows] = {}
    for group in groups:
        group_past = [past[b] for b in group] if past else None
        rows.update(zip(group, _prefill_batch(runner, [new[b] for b in group], group_past, chunk_size)))
    return [rows[b] for b in range(len(new))]


def _causal_groups(
    runner: ModelRunner, new: list[tuple[tuple[int, ...], tuple[int, ...]]], past: list[Rows] | None
) -> list[list[int]]:
    """The batches `prefill_rows` runs, as row indices. Right-padding pasts of different lengths
    puts invalid slots before a row's new tokens, so its mask is no longer causal over slots and
    the attention kernel computes every (query, key) block through an explicit mask. Where the
    kernel takes a causal mask after a past (`runner.causal_past`), each length of past whose rows
    attend over at least LONE_ATTENTION pairs runs alone, causal; the other rows stay together."""
    everything = [list(range(len(new)))]
    if not past or not runner.causal_past:
        return everything
    by_length: dict[int, list[int]] = {}
    for b, p in enumerate(past):
        by_length.setdefault(int(p.positions.shape[0]), []).append(b)
    if len(by_length) == 1:
        return everything
    lone, rest = [], []
    for length, group in by_length.items():
        attention = sum(len(new[b][0]) * (length + len(new[b][0])) for b in group)
        if attention >= LONE_ATTENTION:
            lone.append(group)
        else:
            rest.extend(group)
    return sorted([*lone, *([sorted(rest)] if rest else [])])


def _slot_causal(new: list[tuple[tuple[int, ...], tuple[int, ...]]], past: list[Rows] | None) -> bool:
    """Whether every row's explicit mask is the causal one over cache slots for its real tokens
    (`ModelRunner.forward(causal=True)`): each row with new tokens has a past as long as the
    batch's longest (no padded slot before its new tokens) and coordinates that strictly
    increase over its past and its new tokens."""
    width = max(int(p.positions.shape[0]) for p in past) if past else 0
    for b, (_, positions) in enumerate(new):
        if not positions:
            continue
        before = past[b].positions if past else torch.empty(0, dtype=torch.long)
        if before.shape[0] != width:
            return False
        coords = torch.cat([before, torch.tensor(positions, dtype=torch.long)])
        if not bool((coords[1:] > coords[:-1]).all()):
            return False
    return True


def _prefill_batch(
    runner: ModelRunner,
    new: list[tuple[tuple[int, ...], tuple[int, ...]]],
    past: list[Rows] | None,
    chunk_size: int | None,
) -> list[Rows]:
    """`prefill_rows` in one batch (in chunks of queries where it is too long)."""
    ids, pos, valid = _padded(new, past)
    width = ids.shape[1]
    cache, past_coords, past_valid = _past_cache(past, len(new), width)
    device = runner.device
    ids_d, pos_d, valid_d = (to_device(t, device) for t in (ids, pos, valid))
    past_coords, past_valid = to_device(past_coords, device), to_device(past_valid, device)
    # The explicit mask is the causal one over slots: the kernel's, where it takes one after a
    # past (a chunk after the first has the earlier chunks as its past).
    causal = (runner.causal_past or not past) and _slot_causal(new, past)
    # A prefill too long to attend at once runs in chunks of queries (on a GPU, by its memory).
    step = chunk_size or runner.prefill_chunk(len(new), width, int(past_coords.shape[1])) or width
    for start in range(0, width, step):
        end = min(start + step, width)
        runner.forward(
            ids_d[:, start:end],
            pos_d[:, start:end],
            cache,
            query_coords=pos_d[:, start:end],
            key_coords=torch.cat([past_coords, pos_d[:, :end]], dim=1),
            key_valid=torch.cat([past_valid, valid_d[:, :end]], dim=1),
            causal=causal and (start == 0 or runner.causal_past),
        )
    return _real_rows(cache, past, pos, [len(row_ids) for row_ids, _ in new])


def _padded(
    new: list[tuple[tuple[int, ...], tuple[int, ...]]], past: list[Rows] | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Host tensors of the new rows, right-padded: ids, positions and which tokens are real."""
    width = max(len(row_ids) for row_ids, _ in new)
    ids = torch.full((len(new), width), PAD_ID, dtype=torch.long)
    pos = torch.zeros(len(new), width, dtype=torch.long)
    valid = torch.zeros(len(new), width, dtype=torch.bool)
    for b, (row_ids, row_pos) in enumerate(new):
        n = len(row_ids)
        ids[b, :n] = torch.tensor(row_ids)
        pos[b, :n] = torch.tensor(row_pos)
        last = row_pos[-1] if n else (int(past[b].positions.max()) if past else -1)
        # After every real token of the row, all at one coordinate: a padded query then always
        # sees the row's last real token and is never fully masked (a sliding window would
        # hide everything from a pad far beyond the row's end, and SDPA kernels give such rows
        # NaN or zeros, which must not reach a cache even as masked keys).
        pos[b, n:] = last + 1
        valid[b, :n] = True
    return ids, pos, valid


def _past_cache(past: list[Rows] | None, batch: int, width: int) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """A cache holding every row's past (right-padded, with room for `width` new tokens), and the
    past keys' mask coordinates and validity; an empty cache without a past."""
    if not past:
        return new_cache(), torch.zeros(batch, 0, dtype=torch.long), torch.zeros(batch, 0, dtype=torch.bool)
    past_len = [int(p.positions.shape[0]) for p in past]
    p_width = max(past_len)
    slots = torch.stack([torch.nn.functional.pad(torch.arange(n), (0, p_width - n), value=-1) for n in past_len])
    keys, values = gather_rows(past, slots, spare=width)  # room for the new tokens
    coords = torch.stack([torch.nn.functional.pad(p.positions, (0, p_width - len(p.positions))) for p in past])
    return cache_from_rows(keys, values, length=p_width), coords, slots >= 0


def _real_rows(cache: Any, past: list[Rows] | None, pos: torch.Tensor, lengths: list[int]) -> list[Rows]:
    """Every row's real slots (its past, then its new tokens) in one index_select per layer; the
    rows come back as views of one pooled tensor per layer."""
    batch, width = pos.shape
    past_len = [int(p.positions.shape[0]) for p in past] if past else [0] * batch
    p_width = max(past_len)
    total = p_width + width
    index = torch.cat(
        [torch.cat([torch.arange(past_len[b]), p_width + torch.arange(lengths[b])]) + b * total for b in range(batch)]
    )
    on_device = device_copies(index)
    sizes = [past_len[b] + lengths[b] for b in range(batch)]
    pooled: tuple[list[list[torch.Tensor]], list[list[torch.Tensor]]] = ([], [])
    for rows, target in zip(cache_rows(cache), pooled):
        for layer_rows in rows:  # [B, H, total, D]
            heads, dim = layer_rows.shape[1], layer_rows.shape[3]
            flat = layer_rows.transpose(0, 1).reshape(heads, batch * total, dim)
            picked = flat.index_select(1, on_device(flat.device))
            target.append([part[None] for part in picked.split(sizes, dim=1)])
    out = []
    for b in range(batch):
        positions = torch.cat([past[b].positions if past else torch.empty(0, dtype=torch.long), pos[b, : lengths[b]]])
        out.append(Rows([layer[b] for layer in pooled[0]], [layer[b] for layer in pooled[1]], positions))
    return out


def head(rows: Rows, n: int) -> Rows:
    """The first `n` of `rows` (views, no copy)."""
    if n == int(rows.positions.shape[0]):
        return rows
    return Rows([x[:, :, :n] for x in rows.keys], [x[:, :, :n] for x in rows.values], rows.positions[:n])


def prefill_pairs(
    runner: ModelRunner,
    layouts: list[PairLayout],
    chunk_size: int | None = None,
    store: PrefixStore | None = None,
) -> list[tuple[EventCache, EventCache]]:
    """`cache.prefill_pair` for several pairs at once: one batched forward of every first member,
    one of every second member's suffix after the first member's prefix rows (identical members,
    an unpaired item, share one cache). With a `store`, a first member that shares a long prefix
    with a member prefilled before computes only its suffix after that member's rows
    (`matbench.engine.prefixes`), and every member prefilled here joins the store."""
    for lay in layouts:
        a, b = lay.members
        split = lay.prefix_tokens
        if a.input_ids[:split] != b.input_ids[:split] or a.positions[:split] != b.positions[:split]:
            raise AssertionError("donor members differ before the source")  # guarded by layout_pair
    firsts, arrays = _first_members(runner, [lay.members[0] for lay in layouts], chunk_size, store)
    suffix_rows, pasts, owners = [], [], []
    seconds: dict[int, Rows] = {}
    for k, lay in enumerate(layouts):
        a, b = lay.members
        if b == a:
            seconds[k] = firsts[k]
            continue
        split = lay.prefix_tokens
        prefix = head(firsts[k], split)
        if split == len(b.input_ids):
            seconds[k] = prefix
        else:
            suffix_rows.append((b.input_ids[split:], b.positions[split:]))
            pasts.append(prefix)
            owners.append(k)
    if suffix_rows:
        seconds.update(zip(owners, prefill_rows(runner, suffix_rows, pasts, chunk_size)))
    if store is not None:  # pair by pair, so that the last pair's members are the last entries
        for k, lay in enumerate(layouts):
            store.add(Prefilled(*arrays[k], firsts[k]))
            if seconds[k] is not firsts[k]:
                store.add(Prefilled(*token_arrays(lay.members[1].input_ids, lay.members[1].positions), seconds[k]))
    out = []
    for k, lay in enumerate(layouts):
        caches = [
            EventCache(
                tuple(rows.keys), tuple(rows.values), rows.positions, member.header_span, member.event_spans, lay.length
            )
            for rows, member in zip((firsts[k], seconds[k]), lay.members)
        ]
        out.append((caches[0], caches[0] if seconds[k] is firsts[k] else caches[1]))
    return out


def _first_members(
    runner: ModelRunner, members: list[MemberLayout], chunk_size: int | None, store: PrefixStore | None
) -> tuple[list[Rows], list[tuple[np.ndarray, np.ndarray]]]:
    """Every first member's rows: those that share a prefix worth reusing with a stored member
    take its rows and prefill their suffix in one batch, the others prefill whole in another.
    With a store, also each member's token arrays (`prefixes.token_arrays`), for its entry."""
    arrays = [token_arrays(m.input_ids, m.positions) for m in members] if store is not None else []
    bases = [store.best(*a) for a in arrays] if store is not None else [(None, 0)] * len(members)
    rows: dict[int, Rows] = {}
    whole = [k for k, (base, _) in enumerate(bases) if base is None]
    if whole:
        new = [(members[k].input_ids, members[k].positions) for k in whole]
        rows.update(zip(whole, prefill_rows(runner, new, chunk_size=chunk_size)))
    suffixed = []
    for k, (base, shared) in enumerate(bases):
        if base is None:
            continue
        if shared == len(members[k].input_ids):
            rows[k] = head(base.rows, shared)  # the whole member was prefilled before
        else:
            suffixed.append(k)
    if suffixed:
        new = [(members[k].input_ids[bases[k][1] :], members[k].positions[bases[k][1] :]) for k in suffixed]
        pasts = [head(bases[k][0].rows, bases[k][1]) for k in suffixed]  # type: ignore[union-attr]
        rows.update(zip(suffixed, prefill_rows(runner, new, pasts, chunk_size)))
    return [rows[k] for k in range(len(members))], arrays
