"""What a run found, as one line: the answer its headline metrics give to the suite's question,
with the statistic behind each.

A metric *decides* a value against its reference (`decide`): +1 above it, -1 below it, 0 not
decided, None where the metric draws no decision. The reference is chance for an accuracy, 0 for
a difference or a margin shift. A value with an interval is decided by the interval (above when
its lower end is above the reference, below when its upper end is under it); follow:anti counts
by the exact sign test at .05; a check (control clean, ...) is its own decision. `matbench
replicate` compares seeds by the same rule. For a verdict, a donor shift must also pass its
Wilcoxon signed-rank test at .05 (`decide_headline`).

A suite's *verdict* reads its headline metrics (the contract's rank and overview metrics and those
marked `verdict`, valid for the readout): **yes** when one of them is decided in the direction of
the suite's question (above for a metric where higher means more materialization, below for one
where lower does), **no, the opposite** when every decided one goes the other way, **not shown**
when none is decided, and **no verdict** when no headline metric draws decisions (the table says
what there is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from matbench import stats
from matbench.protocol.metrics import Direction, Format, Metric, Scale, plain_text

ALPHA = 0.05

Decide = Callable[[Metric, Any], "int | bool | None"]


def decide(metric: Metric, value: Any) -> int | bool | None:
    """The metric's decision on `value` (see the module docstring); None: none is drawn."""
    if value is None:
        return None
    if metric.format is Format.BOOL:
        return bool(value)
    if metric.format in (Format.SIGNED_CI, Format.RATE_CI):
        low, high = value[metric.fields[1]]
        reference = reference_of(metric)
        return 1 if low > reference else -1 if high < reference else 0
    if metric.format is Format.CLASSES:
        return _classes(value)
    return None


def decide_headline(metric: Metric, value: Any) -> int | bool | None:
    """`decide`, and for a mapping the leaderboard's overview reads one entry of
    (`overview_key`), that entry's follow:anti by the sign test."""
    if metric.format is Format.MAPPING and metric.overview_key and isinstance(value, Mapping):
        entry = value.get(metric.overview_key)
        if metric.scale is Scale.FOLLOW and isinstance(entry, list) and len(entry) == 2:
            return _classes(entry)
        return None
    decision = decide(metric, value)
    # A donor shift carries its signed-rank test: a bootstrap interval alone is too narrow over a
    # handful of pairs (4 pairs all positive exclude 0, while the test's smallest p is .125).
    if decision and isinstance(value, Mapping) and value.get("wilcoxon_p", 0.0) >= ALPHA:
        return 0
    return decision


def _classes(value: Any) -> int:
    follow, anti = (value["follow"], value["anti"]) if isinstance(value, Mapping) else value
    if stats.sign_test(follow, anti) >= ALPHA:
        return 0
    return 1 if follow > anti else -1


def reference_of(metric: Metric) -> float:
    """What a decision compares against: chance for an accuracy that declares one, else 0."""
    return metric.chance if metric.scale is Scale.ACCURACY and metric.chance is not None else 0.0


def min_decided_pairs() -> int:
    """The fewest donor-sensitive pairs (follow + anti) at which the exact sign test can reach
    p < .05 at all (6, all on one side)."""
    n = 1
    while stats.sign_test(n, 0) >= ALPHA:
        n += 1
    return n


class Finding(str, Enum):
    YES = "yes"
    OPPOSITE = "no, the opposite"
    NOT_SHOWN = "not shown"
    NONE = "no verdict"


@dataclass(frozen=True)
class Evidence:
    """One headline metric's value as read, and its decision signed by the question's direction
    (+1 toward a yes, -1 against, 0 undecided, None: no decision drawn)."""

    metric: Metric
    value: Any
    toward: int | None

    def text(self) -> str:
        metric, value = self.metric, self.value
        if metric.format is Format.MAPPING and metric.overview_key and isinstance(value, Mapping):
            value = value.get(metric.overview_key)  # the entry the overview reads
            return f"{metric.label} ({metric.overview_key}) {plain_text(value)}" + _statistic(metric, value)
        return f"{metric.label} {metric.text(value)}" + _statistic(metric, value)


def _statistic(metric: Metric, value: Any) -> str:
    """The statistic behind a decision (", sign test p = ..."); empty where none is drawn."""
    if value is None:
        return ""
    if metric.scale is Scale.FOLLOW and (metric.format is Format.CLASSES or isinstance(value, list)):
        follow, anti = (value["follow"], value["anti"]) if isinstance(value, Mapping) else value
        return f", sign test p = {stats.sign_test(follow, anti):.2g}"
    if metric.format in (Format.SIGNED_CI, Format.RATE_CI) and isinstance(value, Mapping):
        low, high = value[metric.fields[1]]
        reference = reference_of(metric)
        where = "chance" if metric.scale is Scale.ACCURACY and metric.chance is not None else ""
        ref = f"{where} {reference:g}".strip()
        side = "above" if low > reference else "below" if high < reference else "includes"
        test = f", Wilcoxon p = {value['wilcoxon_p']:.2g}" if "wilcoxon_p" in value else ""
        return f", 95% CI {side} {ref}{test}"
    return ""


@dataclass(frozen=True)
class Verdict:
    """The answer a run's headline metrics give to its suite's question."""

    suite: str
    question: str  # the suite's one-line summary, a question for most suites
    finding: Finding
    evidence: tuple[Evidence, ...]
    n_items: int

    def line(self) -> str:
        """`verdict: not shown at 32 pairs: root f:a 0:0 (sign test p = 1); root donor shift ...`"""
        at = f" at {self.n_items} pairs" if self.finding is Finding.NOT_SHOWN else ""
        facts = "; ".join(e.text() for e in self.evidence)
        return f"verdict: {self.finding.value}{at}: {facts}" if facts else f"verdict: {self.finding.value}{at}"

    def as_json(self) -> dict[str, Any]:
        return {
            "finding": self.finding.value,
            "evidence": [e.text() for e in self.evidence],
            "n_items": self.n_items,
            "line": self.line(),
        }


def headline_metrics(contract: Sequence[Metric], readout: str) -> list[Metric]:
    """The contract's rank metric first, then its other overview and verdict metrics, valid for
    `readout`."""
    chosen = [m for m in contract if (m.rank or m.overview or m.verdict) and m.valid_for(readout)]
    return sorted(chosen, key=lambda m: not m.rank)


def verdict(
    suite: str,
    question: str,
    contract: Sequence[Metric],
    metrics: dict[str, Any],
    readout: str,
    n_items: int,
    decide_with: Decide = decide_headline,
) -> Verdict:
    """The verdict of one results file's metrics (see the module docstring). `decide_with`: the
    evaluator's own decision rule where its headline metrics need one (trigger's counts)."""
    evidence = []
    for metric in headline_metrics(contract, readout):
        value = metric.value(metrics)
        if value is None:
            continue
        decision = decide_with(metric, value)
        toward = None if decision is None or isinstance(decision, bool) else int(decision)
        if toward is not None and metric.direction is Direction.LOWER:
            toward = -toward
        evidence.append(Evidence(metric, value, toward))
    decided = [e.toward for e in evidence if e.toward is not None]
    if not decided:
        finding = Finding.NONE
    elif any(t > 0 for t in decided):
        finding = Finding.YES
    elif any(t < 0 for t in decided):
        finding = Finding.OPPOSITE
    else:
        finding = Finding.NOT_SHOWN
    return Verdict(suite, question, finding, tuple(evidence), n_items)
