"""The re-encoded rows of the arms that do not serve the global prefill's own (the isolated,
headless, anchored and text encodings, SPEC 3.4), for a whole batch of pairs in a few forwards.

`cache.isolated_cache` and `cache.text_cache` build one arm's cache at a time with a forward per
event (or run of events) and a copy of the whole joint cache: at a long dialog's 40k rows and a
forward per turn that is most of a harvest pair's serving time. Here every encoding of a batch is
one row of `prefill.prefill_rows` (the encodings that start after the header's rows in one
batch, those with nothing before them in another), and the result is a compact `EventCache`: the
header's rows and the served events' rows only, at their original positions, each event's span
pointing at its rows (unserved events own empty spans). Serving reads nothing else of an arm's
cache (the header and the served events), so the served rows, their positions and L are those of
the cache built one arm at a time; on a GPU the batched forwards can differ from it at the
rounding level, as batching the global prefill does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from matbench.engine.cache import ANCHOR_WINDOW, EventCache, served_runs, text_layout
from matbench.engine.layout import MemberLayout
from matbench.engine.memory import token_groups
from matbench.engine.prefill import Rows, head, prefill_rows
from matbench.engine.runtime import ModelRunner

# Encodings built here, and how each re-encodes a served event: after the header (and how many
# opening tokens of the trajectory, the anchor), or alone, one event at a time or in runs.
_ISOLATED = {
    "isolated": (True, 0, False),
    "headless": (False, 0, False),
    "headless_runs": (False, 0, True),
    "anchored": (True, ANCHOR_WINDOW, False),
}
ENCODINGS = (*_ISOLATED, "text")


@dataclass(frozen=True)
class Encoding:
    """One arm-member cache to build: `encoding` of the `served` events of `cache`."""

    encoding: str
    cache: EventCache
    member: MemberLayout
    served: tuple[int, ...]


@dataclass(frozen=True)
class _Job:
    """One forward row: `ids` at `positions` after `past` (None: nothing before them)."""

    past: Rows | None
    ids: tuple[int, ...]
    positions: tuple[int, ...]


def encode_many(
    runner: ModelRunner, wanted: list[Encoding], batch_tokens: int, chunk_size: int | None = None
) -> list[EventCache]:
    """The cache of each of `wanted`, its forwards batched (at most `batch_tokens` tokens, rows
    times the longest, per forward; `chunk_size` as the engine's prefills take it)."""
    plans = [_plan(w) for w in wanted]
    rows = _run(runner, [job for jobs, _ in plans for job in jobs], batch_tokens, chunk_size)
    out, at = [], 0
    for w, (jobs, placed) in zip(wanted, plans):
        done = rows[at : at + len(jobs)]
        at += len(jobs)
        out.append(_text(placed, done[0]) if placed is not None else _isolated(w, jobs, done))
    return out


def _header(cache: EventCache, end: int | None = None) -> Rows:
    """The joint cache's header rows (or its first `end` slots: the header and an anchor), as views."""
    rows = Rows(list(cache.keys), list(cache.values), cache.positions)
    return head(rows, cache.header_span[1] if end is None else end)


def _plan(w: Encoding) -> tuple[list[_Job], EventCache | None]:
    """The forward rows of one encoding, and for a text encoding where `text_layout` places it."""
    if w.encoding == "text":
        text_ids, placed = text_layout(w.cache, w.member, w.served)
        n = w.cache.header_span[1]
        return [_Job(_header(w.cache), tuple(text_ids), tuple(placed.positions[n:].tolist()))], placed
    after_header, anchor, runs = _ISOLATED[w.encoding]
    jobs = []
    for run in served_runs(w.served, runs):
        spans = [w.member.event_spans[i] for i in run]
        lo = spans[0][0]
        past = _header(w.cache, min(w.cache.header_span[1] + anchor, lo)) if after_header else None
        ids = tuple(t for a, b in spans for t in w.member.input_ids[a:b])
        positions = tuple(p for a, b in spans for p in w.member.positions[a:b])
        jobs.append(_Job(past, ids, positions))
    return jobs, None


def _run(runner: ModelRunner, jobs: list[_Job], batch_tokens: int, chunk_size: int | None) -> list[Rows]:
    """Each job's rows (its past's, then its own), in order: jobs with a past and jobs without
    run in separate forwards, longest first so that a forward pads little."""
    out: dict[int, Rows] = {}
    for with_past in (True, False):
        todo = sorted(
            (k for k, job in enumerate(jobs) if (job.past is not None) == with_past and job.ids),
            key=lambda k: -_size(jobs[k]),
        )
        for group in token_groups(todo, lambda k: _size(jobs[k]), batch_tokens):
            new = [(jobs[k].ids, jobs[k].positions) for k in group]
            pasts = [jobs[k].past for k in group] if with_past else None
            out.update(zip(group, prefill_rows(runner, new, pasts, chunk_size)))  # type: ignore[arg-type]
    for k, job in enumerate(jobs):
        if not job.ids:  # nothing to encode (a served event of no tokens): the past alone
            out[k] = job.past if job.past is not None else Rows([], [], torch.empty(0, dtype=torch.long))
    return [out[k] for k in range(len(jobs))]


def _size(job: _Job) -> int:
    return len(job.ids) + (int(job.past.positions.shape[0]) if job.past is not None else 0)


def _text(placed: EventCache, rows: Rows) -> EventCache:
    """`placed` (`text_layout`'s row-less cache) with the header's and the re-read text's rows."""
    return EventCache(
        tuple(rows.keys), tuple(rows.values), placed.positions, placed.header_span, placed.event_spans, placed.length
    )


def _isolated(w: Encoding, jobs: list[_Job], done: list[Rows]) -> EventCache:
    """The header's joint rows, then each served event's re-encoded rows (the tail of its job's
    rows, after the job's past), with spans over the result."""
    header = _header(w.cache)
    keys = [[k] for k in header.keys]
    values = [[v] for v in header.values]
    positions = [header.positions]
    served_at: dict[int, tuple[int, int]] = {}
    at = int(header.positions.shape[0])
    runs = served_runs(w.served, _ISOLATED[w.encoding][2])
    for run, job, rows in zip(runs, jobs, done):
        if not job.ids:  # a run of no tokens owns no rows
            served_at.update((i, (at, at)) for i in run)
            continue
        skip = int(job.past.positions.shape[0]) if job.past is not None else 0
        for layer in range(len(keys)):
            keys[layer].append(rows.keys[layer][:, :, skip:])
            values[layer].append(rows.values[layer][:, :, skip:])
        positions.append(rows.positions[skip:])
        for i in run:
            a, b = w.member.event_spans[i]
            served_at[i] = (at, at + b - a)
            at += b - a
    spans, end = [], int(header.positions.shape[0])
    for i in range(len(w.member.event_spans)):
        end = served_at[i][1] if i in served_at else end
        spans.append(served_at.get(i, (end, end)))
    return EventCache(
        tuple(torch.cat(k, dim=2) for k in keys),
        tuple(torch.cat(v, dim=2) for v in values),
        torch.cat(positions),
        w.cache.header_span,
        tuple(spans),
        w.cache.length,
    )
