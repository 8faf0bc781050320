"""Donor pairs through the engine a batch at a time: the loop `matbench eval` and the benchmarks
share (prefill, lay out the next batch while the accelerator works, score, back off on OOM)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from matbench.engine.pair_engine import PairEngine
from matbench.errors import is_out_of_memory
from matbench.protocol.pairs import DonorPair
from matbench.protocol.records import PairRecord

# (readout, serving), or (readout, serving, policy, source, kept_from): `PairEngine.setting_of`
Combos = Sequence[tuple[str, ...]] | Callable[[list[DonorPair]], Sequence[tuple[str, ...]]]


@dataclass
class BatchTimes:
    """Seconds spent preparing (layout + global prefill) and scoring (serving, probe, decoding),
    measured after `sync()` so queued accelerator work is counted where it ran."""

    prefill_s: float = 0.0
    score_s: float = 0.0


def score_in_batches(
    engine: PairEngine,
    pairs: Sequence[DonorPair],
    combos: Combos,
    group: int,
    sync: Callable[[], None] = lambda: None,
    times: BatchTimes | None = None,
    on_backoff: Callable[[int, int], None] | None = None,
) -> Iterator[list[tuple[Any, dict[tuple[str, ...], PairRecord]]]]:
    """Yield, batch by batch, [((pair, layout, caches), {(readout, serving): record})].

    `combos` may depend on the batch (a resumed run recomputes only what its logs lack). Out of
    accelerator memory, the batch is halved and redone (records do not depend on the batch size;
    nothing of it was yielded); at one pair the error stands. `on_backoff(old, new)` is told."""
    start = 0
    while start < len(pairs):
        chunk = list(pairs[start : start + group])
        wanted = combos(chunk) if callable(combos) else combos
        try:
            t0 = time.perf_counter()
            items = engine.prepare_many(chunk)
            engine.prefetch_layouts(
                list(pairs[start + len(chunk) : start + len(chunk) + group])
            )  # while the GPU prefills
            sync()
            t1 = time.perf_counter()
            scored = engine.score_many(items, list(wanted))
            sync()
        except Exception as exc:
            if not is_out_of_memory(exc) or len(chunk) == 1:
                raise
            group = max(1, len(chunk) // 2)
            engine.release_memory()
            if on_backoff:
                on_backoff(len(chunk), group)
            continue
        if times is not None:
            times.prefill_s += t1 - t0
            times.score_s += time.perf_counter() - t1
        start += len(chunk)
        yield list(zip(items, scored))
