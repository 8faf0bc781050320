"""The performance targets of matbench and the record that measures each now.

Each `Target` names what is timed, its goal and how to read the figure from one record of
`benchmarks/` (or no record: not measured yet). The current table of the benchmarks README and
the README's performance section are generated from `TARGETS` (`current_table`) and tests hold
them equal, so a figure quoted there is always its record's. A record that no target cites is
history: the dated table after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.bench.records import BenchRecord, read_bench_records

CURRENT_HEADER = (
    "| target | goal | measured | met | record | date | commit | hardware | command |",
    "|---|---|---|---|---|---|---|---|---|",
)


@dataclass(frozen=True)
class Target:
    """`what` reaches `goal` (in `unit`; `at_most`: the figure must not exceed it) as `record`
    measures it (`read(record's JSON)`), or has no record yet (`record=None`)."""

    what: str
    goal: float
    unit: str
    at_most: bool
    record: str | None
    read: Callable[[dict[str, Any]], float] | None = None

    def measured(self, folder: Path) -> float | None:
        if self.record is None or self.read is None:
            return None
        return float(self.read(json.loads((folder / self.record).read_text())))

    def met(self, value: float) -> bool:
        return value <= self.goal if self.at_most else value >= self.goal

    def row(self, folder: Path, made: dict[str, BenchRecord]) -> str:
        goal = f"{'≤' if self.at_most else '≥'} {_figure(self.goal, self.unit, goal=True)}"
        value = self.measured(folder)
        if value is None:
            return f"| {self.what} | {goal} | not measured yet | | | | | | |"
        r = made[self.record]  # type: ignore[index]
        return (
            f"| {self.what} | {goal} | {_figure(value, self.unit)} | {'yes' if self.met(value) else 'no'} "
            f"| `{r.file}` | {r.date} | {r.commit} | {r.hardware} | `{r.command}` |"
        )


def _figure(value: float, unit: str, goal: bool = False) -> str:
    """A measured figure to two decimals (a goal as written: 30, 1.2), a thousands separator from 100."""
    if unit == "%":
        return f"{value * 100:.0f}%"
    number = f"{value:,.0f}" if value >= 100 else (f"{value:g}" if goal else f"{value:.2f}")
    return f"{number}x" if unit == "x" else f"{number} {unit}"


def _decode_over_eager(r: dict[str, Any]) -> float:
    modes = r["decode_by_mode"]
    return modes["graphs"]["tokens_per_s"] / modes["eager"]["tokens_per_s"]


def _worst_policy_serving(r: dict[str, Any]) -> float:
    return max(p["serve_over_oracle"] for p in r["policies"].values())


DISCOVERY = "discovery-qwen3-8b-decode-graphs-b32.json"
LONG_CONTEXT = "long-context-gemma3-12b-decode-graphs.json"

TARGETS: tuple[Target, ...] = (
    Target(
        "discovery end to end, Qwen3-8B shape, 32 pairs per batch",
        30,
        "pairs/s",
        False,
        DISCOVERY,
        lambda r: r["engine"]["pairs_per_s"],
    ),
    Target(
        "discovery: serving, probe and decoding, share of engine time",
        0.25,
        "%",
        True,
        DISCOVERY,
        lambda r: r["engine"]["serve_probe_decode_share"],
    ),
    Target(
        "discovery prefill, MFU of the card's bf16 peak",
        0.65,
        "%",
        False,
        DISCOVERY,
        lambda r: r["engine"]["prefill_mfu"],
    ),
    Target("the whole contract (`bench contract`, defaults), Qwen3-8B shape", 10, "min", True, None),
    Target(
        "32k-token prefill, Gemma-3-12B shape, sliding windows",
        12_000,
        "tok/s",
        False,
        LONG_CONTEXT,
        lambda r: r["prefill"]["tokens_per_s"],
    ),
    Target("32k-token context: graph decoding over eager", 3, "x", False, LONG_CONTEXT, _decode_over_eager),
    Target(
        "policies: the slowest built-in policy's serving over the oracle's, per pair",
        1.2,
        "x",
        True,
        "policies-qwen3-8b.json",
        _worst_policy_serving,
    ),
)


def current_table(folder: Path, targets: tuple[Target, ...] = TARGETS) -> str:
    """The Markdown table of `targets`, each with its record's figure, date, commit and command."""
    made = {r.file: r for r in read_bench_records(folder)}
    return "\n".join([*CURRENT_HEADER, *(t.row(folder, made) for t in targets)])


def readme_table(folder: Path, targets: tuple[Target, ...] = TARGETS) -> str:
    """The README's short form of `current_table`: each target, its goal and its figure now with
    the card it was measured on (records and commands in the benchmarks README)."""
    made = {r.file: r for r in read_bench_records(folder)}
    rows = ["| target | goal | now |", "|---|---|---|"]
    for t in targets:
        value = t.measured(folder)
        now = "not measured yet" if value is None else f"{_figure(value, t.unit)} ({made[t.record].hardware})"  # type: ignore[index]
        rows.append(f"| {t.what} | {'≤' if t.at_most else '≥'} {_figure(t.goal, t.unit, goal=True)} | {now} |")
    return "\n".join(rows)


def cited(targets: tuple[Target, ...] = TARGETS) -> set[str]:
    """The records some target reads: the current ones (the others are history)."""
    return {t.record for t in targets if t.record is not None}
