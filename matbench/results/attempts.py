"""What every attempt at a run spent, kept beside its per-item log, so that a resumed run's results
count all of them.

A run may be stopped (killed, out of memory, Ctrl-C) and resumed any number of times, and its
results file is written only by the attempt that finishes. So each attempt appends its totals so
far (wall seconds since it started, peak memory, batch, processes, items it logged) to
`<stem>.attempts.jsonl` beside `<stem>.items.jsonl`, after every batch that logged items and
when it ends, flushed and fsynced like the log itself: an attempt killed outright still counts
up to its last finished batch. An attempt's last line holds its totals; the results file sums
the wall seconds, takes the largest peak, and counts the attempts.

An attempt counts once it has logged an item. An invocation that finds every item logged (a
re-run that only rewrites the results file) or stops before its first item adds nothing to the
records, so it adds nothing to the totals either: re-running a finished command leaves its
results file as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.results.files import complete_json_lines


def attempts_path(log_path: Path) -> Path:
    """The attempts file of a per-item log: `<stem>.items.jsonl` -> `<stem>.attempts.jsonl`, and a
    shard log `<stem>.items.rank<r>.jsonl` -> `<stem>.attempts.rank<r>.jsonl`."""
    return log_path.with_name(log_path.name.replace(".items.", ".attempts.", 1))


@dataclass(frozen=True)
class Attempt:
    """One attempt's totals so far, as one line of the attempts file."""

    attempt: str  # unique per invocation: its start time and process id
    config_hash: str
    wall_seconds: float
    peak_memory_gib: float
    memory_kind: str
    batch_pairs: int
    batch_pairs_chosen_from_memory: bool
    processes: int
    n_scored: int  # items this attempt logged (0 only for the stand-in of a log older than attempts files)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Attempt:
        names = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or set(data) != names:
            raise MatbenchError(f"{where} is not an attempt line (keys {', '.join(sorted(names))}); move the file away")
        return cls(**data)


@dataclass(frozen=True)
class Totals:
    """What every attempt (of one process, or of every shard of a merge) spent together."""

    attempts: int
    wall_seconds: float
    peak_memory_gib: float
    memory_kind: str
    batch_pairs: int
    batch_pairs_chosen_from_memory: bool
    processes: int

    def resources(self) -> dict[str, Any]:
        """The results file's `resources` block."""
        return {
            "peak_memory_gib": self.peak_memory_gib,
            "memory_kind": self.memory_kind,
            "batch_pairs": self.batch_pairs,
            "batch_pairs_chosen_from_memory": self.batch_pairs_chosen_from_memory,
            "processes": self.processes,
            "attempts": self.attempts,
        }


def _fold(parts: Sequence[Attempt | Totals], attempts: int, processes: int) -> Totals:
    """Time summed; peak and batch the largest (one config fixes the device, so every part
    measured the same kind of memory)."""
    if not parts:
        raise ValueError("totals of nothing")
    peak = max(parts, key=lambda p: p.peak_memory_gib)
    return Totals(
        attempts=attempts,
        wall_seconds=round(sum(p.wall_seconds for p in parts), 2),
        peak_memory_gib=peak.peak_memory_gib,
        memory_kind=peak.memory_kind,
        batch_pairs=max(p.batch_pairs for p in parts),
        batch_pairs_chosen_from_memory=any(p.batch_pairs_chosen_from_memory for p in parts),
        processes=processes,
    )


def totals(attempts: Sequence[Attempt]) -> Totals:
    """One process's attempts, one after another: the processes the most any attempt used."""
    return _fold(attempts, len(attempts), max((a.processes for a in attempts), default=0))


def combined(parts: Sequence[Totals]) -> Totals:
    """Several shards that ran side by side on their own machines: attempts and processes summed
    (and time: machine time, not the elapsed time of the job)."""
    return _fold(parts, sum(t.attempts for t in parts), sum(t.processes for t in parts))


class AttemptLog:
    """The append-only attempts file of one per-item log (one config)."""

    def __init__(self, path: Path, config_key: str):
        self.path = path
        self.config_key = config_key

    def read(self) -> list[Attempt]:
        """Each attempt's last line, in the order the attempts started. A line cut short (killed
        mid-write) is skipped; lines of another config describe no record of this log."""
        if not self.path.exists():
            return []
        last: dict[str, Attempt] = {}
        for number, data in complete_json_lines(self.path):
            attempt = Attempt.from_json(data, f"{self.path} line {number}")
            if attempt.config_hash == self.config_key:
                last[attempt.attempt] = attempt  # dicts keep first-insertion order: start order
        return list(last.values())

    def pace(self) -> tuple[float, float] | None:
        """The last attempt's (setup seconds, seconds per item): its first batch's time less
        the steady per-item time of the batches after it (loading the model, converting it,
        the first batch's warm-up); None when it logged fewer than two batches."""
        if not self.path.exists():
            return None
        lines = [
            Attempt.from_json(data, f"{self.path} line {number}") for number, data in complete_json_lines(self.path)
        ]
        mine = [a for a in lines if a.config_hash == self.config_key]
        # each batch's line (the attempt's closing line repeats its last count a little later)
        last = list({a.n_scored: a for a in reversed(mine) if a.attempt == mine[-1].attempt}.values())[::-1]
        if len(last) < 2:
            return None
        per_item = (last[-1].wall_seconds - last[0].wall_seconds) / (last[-1].n_scored - last[0].n_scored)
        return max(last[0].wall_seconds - per_item * last[0].n_scored, 0.0), per_item

    def record(self, attempt: Attempt) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(asdict(attempt), sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def discard(self) -> None:
        """Forget earlier attempts (the log starts afresh)."""
        self.path.unlink(missing_ok=True)
