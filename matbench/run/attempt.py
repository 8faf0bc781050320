"""This invocation's attempt at a run: what it has spent so far, appended to each log's attempts
file (`matbench.results.attempts`) as items are logged, so that a killed attempt still counts."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from matbench.engine.memory import peak_memory
from matbench.results.attempts import Attempt


@dataclass(frozen=True)
class AttemptClock:
    """When this attempt started, where it measures its peak memory and how it batched."""

    attempt: str
    started: float
    device: str
    batch_pairs: int
    batch_pairs_chosen_from_memory: bool
    processes: int

    @classmethod
    def start(cls, started: float, device: str, batch_pairs: int, chosen: bool, processes: int) -> AttemptClock:
        # time and pid tell apart two attempts, even two started within one second on one machine
        return cls(f"{started:.6f}-{os.getpid()}", started, device, batch_pairs, chosen, processes)

    def so_far(self, config_hash: str, n_scored: int) -> Attempt:
        peak, kind = peak_memory(self.device)
        return Attempt(
            attempt=self.attempt,
            config_hash=config_hash,
            wall_seconds=round(time.time() - self.started, 2),
            peak_memory_gib=round(peak, 3),
            memory_kind=kind,
            batch_pairs=self.batch_pairs,
            batch_pairs_chosen_from_memory=self.batch_pairs_chosen_from_memory,
            processes=self.processes,
            n_scored=n_scored,
        )

    def record(self, runs: Iterable[Any]) -> None:
        """Append this attempt's totals so far to the attempts file of each run (a `PlannedRun`)
        whose log it has added items to."""
        for run in runs:
            scored = len(run.log.records) - run.log.n_loaded
            if scored:
                run.attempts.record(self.so_far(run.key, scored))
