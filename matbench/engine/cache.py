"""EventCache: the rows of one global prefill, and which event owns each row.

The two donor members of a pair share every token before the source, so `prefill_pair` runs that
prefix once and branches the cache: the rows before the source are the same tensors in both
members (which also makes the before-source control arm bit-identical across members).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from matbench.engine.layout import MemberLayout, PairLayout
from matbench.engine.runtime import ModelRunner, cache_from_rows, cache_rows, new_cache


@dataclass(frozen=True)
class EventCache:
    """One member's prefilled K/V rows.

    keys/values: one tensor per layer, `[1, kv_heads, T, head_dim]`; slot t holds token t of the
    prefill and sits at original position `positions[t]`. `length` is L, the first position after
    the trajectory (positions may have gaps: the source's position budget).
    """

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]
    positions: torch.Tensor  # [T] long
    header_span: tuple[int, int]
    event_spans: tuple[tuple[int, int], ...]
    length: int

    def kept_slots(self, served: tuple[int, ...]) -> torch.Tensor:
        """Slots of the header and the served events, in order."""
        slots = list(range(*self.header_span))
        for i in sorted(served):
            slots.extend(range(*self.event_spans[i]))
        return torch.tensor(slots, dtype=torch.long)

    def with_noise(self, events: tuple[int, ...], seed: int = 0) -> EventCache:
        """A copy whose rows of `events` hold random K/V (the mask gate's probe)."""
        slots = self.kept_slots(tuple(events))[self.header_span[1] - self.header_span[0] :]
        gen = torch.Generator().manual_seed(seed)

        def noisy(t: torch.Tensor) -> torch.Tensor:
            out = t.clone()
            noise = torch.randn(out[:, :, slots].shape, generator=gen) * 10
            out[:, :, slots] = noise.to(out.dtype).to(out.device)
            return out

        return replace(self, keys=tuple(map(noisy, self.keys)), values=tuple(map(noisy, self.values)))


def prefill(
    runner: ModelRunner,
    cache,
    input_ids: list[int],
    positions: list[int],
    past_positions: torch.Tensor,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Append tokens to `cache` in chunks with explicit positions; returns all positions so far.

    Masks follow positions (causal and sliding window measured in original positions), so a gap
    in position ids is just a gap, never a sequence boundary.
    """
    if not input_ids:
        return past_positions
    ids = torch.tensor([input_ids], dtype=torch.long)
    pos = torch.tensor([positions], dtype=torch.long)
    step = chunk_size or runner.prefill_chunk(1, ids.shape[1], int(past_positions.shape[0])) or ids.shape[1]
    all_pos = past_positions
    for start in range(0, ids.shape[1], step):
        chunk_ids, chunk_pos = ids[:, start : start + step], pos[:, start : start + step]
        all_pos = torch.cat([all_pos, chunk_pos[0]])
        runner.forward(
            chunk_ids,
            chunk_pos,
            cache,
            query_coords=chunk_pos,
            key_coords=all_pos[None],
            key_valid=torch.ones(1, all_pos.shape[0], dtype=torch.bool),
        )
    return all_pos


def prefill_pair(
    runner: ModelRunner, layout: PairLayout, chunk_size: int | None = None
) -> tuple[EventCache, EventCache]:
    """Global prefill of both members, sharing the prefix before the source, one pair at a time:
    the plain reference that `engine.prefill.prefill_pairs` (what the engine runs) is tested against."""
    split = layout.prefix_tokens
    a, b = layout.members
    if a.input_ids[:split] != b.input_ids[:split] or a.positions[:split] != b.positions[:split]:
        raise AssertionError("donor members differ before the source")  # guarded by layout_pair
    shared = new_cache()
    prefix_pos = prefill(
        runner,
        shared,
        list(a.input_ids[:split]),
        list(a.positions[:split]),
        torch.empty(0, dtype=torch.long),
        chunk_size,
    )
    prefix_keys, prefix_values = cache_rows(shared)
    if split == len(a.input_ids):  # identical members (an unpaired item): one prefill serves both
        one = EventCache(
            tuple(prefix_keys), tuple(prefix_values), prefix_pos, a.header_span, a.event_spans, layout.length
        )
        return one, one
    members = []
    for member in layout.members:
        cache = cache_from_rows(prefix_keys, prefix_values)
        positions = prefill(
            runner, cache, list(member.input_ids[split:]), list(member.positions[split:]), prefix_pos, chunk_size
        )
        keys, values = cache_rows(cache)
        members.append(
            EventCache(tuple(keys), tuple(values), positions, member.header_span, member.event_spans, layout.length)
        )
    return members[0], members[1]


def _header_cache(cache: EventCache, end: int | None = None):
    """A fresh model cache holding only `cache`'s header rows (or its first `end` slots: the
    header and an opening anchor), and their positions."""
    lo, hi = cache.header_span[0], cache.header_span[1] if end is None else end
    keys = [k[:, :, lo:hi] for k in cache.keys]
    values = [v[:, :, lo:hi] for v in cache.values]
    return cache_from_rows(keys, values), cache.positions[lo:hi]


# kv_vartrack.py's anchor window (--w_anch): an anchored event is re-encoded after the header and
# at most this many opening tokens of the trajectory.
ANCHOR_WINDOW = 1024


def served_runs(served: tuple[int, ...], together: bool) -> list[tuple[int, ...]]:
    """The served events as the units an isolated encoding re-encodes: one event each, or with
    `together` each run of consecutive events (kv_harvest3's iso: `i == cur_run[-1] + 1`)."""
    runs: list[list[int]] = []
    for i in sorted(served):
        if together and runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [tuple(run) for run in runs]


def isolated_cache(
    runner: ModelRunner,
    cache: EventCache,
    member: MemberLayout,
    served: tuple[int, ...],
    chunk_size: int | None = None,
    alone: bool = False,
    anchor: int = 0,
    runs: bool = False,
) -> EventCache:
    """A copy of `cache` whose rows of the `served` events are re-encoded one event at a time, at
    the event's original positions: header + that event (SPEC 3.4 `sel_ikv`), or with `alone` the
    event with nothing before it, not even the header (the paper's harvest `iso`: kv_harvest4.py
    encodes `eids[i]` alone; the `headless` encoding asks for it). With `runs` each run of
    consecutive served events is encoded together (kv_harvest3's iso; `headless_runs`).

    With `anchor` (the `anchored` encoding, kv_vartrack's `anch`), each event is re-encoded after
    the header and the trajectory's opening: its first min(anchor, all before the event) tokens,
    whose rows are the joint cache's own (a causal prefill computes them from nothing later).

    The rows sit at the same slots and positions as the joint ones, so an isolated arm differs
    from its joint arm only in what the rows could have absorbed from the rest of the trajectory.
    """
    keys = [k.clone() for k in cache.keys]
    values = [v.clone() for v in cache.values]
    for run in served_runs(served, runs):
        spans = [member.event_spans[i] for i in run]
        lo = spans[0][0]
        if alone:
            fresh, header_pos = new_cache(), torch.empty(0, dtype=torch.long)
        else:
            fresh, header_pos = _header_cache(cache, min(cache.header_span[1] + anchor, lo))
        # the run's events in order, each at its own positions (a slot's unused budget is skipped)
        ids = [t for a, b in spans for t in member.input_ids[a:b]]
        positions = [p for a, b in spans for p in member.positions[a:b]]
        prefill(runner, fresh, ids, positions, header_pos, chunk_size)
        event_keys, event_values = cache_rows(fresh)
        at = header_pos.shape[0]
        for a, b in spans:
            for layer in range(len(keys)):
                keys[layer][:, :, a:b] = event_keys[layer][:, :, at : at + b - a]
                values[layer][:, :, a:b] = event_values[layer][:, :, at : at + b - a]
            at += b - a
    return replace(cache, keys=tuple(keys), values=tuple(values))


def text_layout(cache: EventCache, member: MemberLayout, served: tuple[int, ...]) -> tuple[list[int], EventCache]:
    """Where `text_cache` puts the header and the `served` events, without computing a row: the
    served events' ids it re-prefills after `cache`'s header, and a row-less `EventCache` with the
    positions (contiguous after the header's last), slot spans (unserved events own empty spans)
    and L (the end of the re-prefilled text) of its result. `matbench show` reads it as is."""
    lo, hi = cache.header_span
    header_pos = cache.positions[lo:hi]
    ids: list[int] = []
    spans = []
    start = header_pos.shape[0]
    for i, (a, b) in enumerate(member.event_spans):
        at = start + len(ids)
        if i in served:
            ids.extend(member.input_ids[a:b])
        spans.append((at, start + len(ids)))
    first = int(header_pos[-1]) + 1 if header_pos.numel() else 0
    positions = torch.cat([header_pos, torch.arange(first, first + len(ids), dtype=torch.long)])
    return ids, EventCache((), (), positions, cache.header_span, tuple(spans), first + len(ids))


def text_cache(
    runner: ModelRunner, cache: EventCache, member: MemberLayout, served: tuple[int, ...], chunk_size: int | None = None
) -> EventCache:
    """The header and the `served` events re-prefilled as plain text, at contiguous positions
    right after the header (SPEC 3.4 `sel_txt`): the cache a system that re-reads the kept text
    would build. Unserved events own empty spans; L is the end of the re-prefilled text
    (`text_layout` places them)."""
    ids, placed = text_layout(cache, member, served)
    fresh, header_pos = _header_cache(cache)
    prefill(runner, fresh, ids, placed.positions[header_pos.shape[0] :].tolist(), header_pos, chunk_size)
    keys, values = cache_rows(fresh)
    return replace(placed, keys=tuple(keys), values=tuple(values))


def spliced_cache(
    cache: EventCache, member: MemberLayout, other: EventCache, other_member: MemberLayout, events: tuple[int, ...]
) -> EventCache:
    """A copy of `cache` whose rows of `events` come from the other donor member's prefill.
    The events' text and positions are the same in both members (only their slots may differ,
    after a source of another length), so the rows drop in place."""
    keys = [k.clone() for k in cache.keys]
    values = [v.clone() for v in cache.values]
    for i in events:
        lo, hi = member.event_spans[i]
        olo, ohi = other_member.event_spans[i]
        if (
            member.input_ids[lo:hi] != other_member.input_ids[olo:ohi]
            or member.positions[lo:hi] != other_member.positions[olo:ohi]
        ):
            raise ValueError(f"event {i} differs between the donor members; it cannot be swapped")
        for layer in range(len(keys)):
            keys[layer][:, :, lo:hi] = other.keys[layer][:, :, olo:ohi]
            values[layer][:, :, lo:hi] = other.values[layer][:, :, olo:ohi]
    return replace(cache, keys=tuple(keys), values=tuple(values))
