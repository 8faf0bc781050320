"""What one results file found and what should make a reader doubt it: the suite's verdict
(`matbench.protocol.verdicts`), then one line per reason not to trust the numbers.

`matbench eval` ends with both under each arms table, `python -m matbench.results.report` prints
them under each run, and the leaderboard shows them on the model pages. The warnings:

- the control arm is not clean (serving only events before the source moved an answer or a
  margin: a fault of the serving path);
- a comprehension accuracy (every event served) at or below chance: the model does not read the
  question, so a null follow count says nothing about its cache;
- a headline follow:anti with fewer donor-sensitive pairs than the exact sign test needs to reach
  p < .05 at all (6): the test cannot decide, whatever the cache holds;
- the faithfulness gates did not run (`--check`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from matbench.evaluators.base import CONTROL_CLEAN
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.verdicts import Verdict, headline_metrics, min_decided_pairs, verdict

if TYPE_CHECKING:
    from matbench.results.schema import ResultsFile

LEGEND = (
    "legend: arm = which cached rows are served and what is asked (each suite's page in the docs, "
    "docs/suites/); follow = each member answers its own donor's value, anti = the reverse, const = both "
    "answer alike, other = off the menu; p = exact sign test of follow vs anti; accuracy = answers "
    "equal to the gold, 95% CI; donor shift = probe margin of member A minus member B (> 0: the kept "
    "rows lean toward the dropped donor), 95% bootstrap CI; shift p = Wilcoxon signed-rank"
)


def _evaluator(suite: str) -> Any:
    from matbench.evaluators import EVALUATORS

    return EVALUATORS.get(suite) if suite in EVALUATORS.names() else None


def run_verdict(results: ResultsFile) -> Verdict | None:
    """The suite's verdict on this run; None for a suite whose evaluator is not installed."""
    from matbench.data_gen import SUITES

    evaluator = _evaluator(results.config.suite)
    if evaluator is None:
        return None
    suite = results.config.suite
    question = SUITES.get(suite).summary if suite in SUITES.names() else ""
    return verdict(
        suite,
        question,
        evaluator.contract,
        results.metrics,
        results.config.readout,
        results.config.n_items,
        evaluator.decide,
    )


def run_warnings(results: ResultsFile) -> list[str]:
    """Every reason in the module docstring that applies to this run, one line each."""
    evaluator = _evaluator(results.config.suite)
    contract: tuple[Metric, ...] = evaluator.contract if evaluator is not None else ()
    out = []
    if CONTROL_CLEAN in contract and CONTROL_CLEAN.value(results.metrics) is False:
        out.append(
            "control not clean: serving only the events before the source changed an answer or a margin, "
            "which no cache state can explain; do not trust this run (run with --check to find the fault)"
        )
    unread = [w for m in contract if m.comprehension for w in _comprehension(m, m.value(results.metrics))]
    out += unread
    # where the model does not read the question, more pairs will not make it follow
    remedy = "a model that reads the question" if unread else "run more pairs (--limit)"
    needed = min_decided_pairs()
    short = [
        f"{label}: {follow + anti}"
        for metric in headline_metrics(contract, results.config.readout)
        for label, (follow, anti) in _follow_anti(metric, metric.value(results.metrics))
        if follow + anti < needed
    ]
    if short:  # one line for all of them: the remedy is the same
        out.append(
            f"{', '.join(short)} donor-sensitive pairs; the sign test needs at least {needed} "
            f"to reach p < .05, so it cannot decide: {remedy}"
        )
    if not any(g.checked for g in results.gates.values()):
        out.append(
            "faithfulness gates not run: --check (or --check-pairs N) verifies that sparse serving "
            "equals the dense reference on these pairs"
        )
    return out


def _comprehension(metric: Metric, value: Any) -> list[str]:
    chance = metric.chance
    if chance is None:
        return []
    entries = value.items() if isinstance(value, Mapping) else [("", value)]
    low = [(k, v) for k, v in entries if isinstance(v, (int, float)) and v <= chance]
    if not low:
        return []
    where = ", ".join(f"{k} {v:.3f}" if k else f"{v:.3f}" for k, v in low)
    return [
        (
            f"{metric.label} {where} is at or below chance ({chance:g}): the model does not read the "
            "question even with every event served, so its follow counts say little about what the cache holds"
        )
    ]


def _follow_anti(metric: Metric, value: Any) -> list[tuple[str, tuple[int, int]]]:
    """The follow:anti counts a headline metric holds: its own, or its overview entry's."""
    if metric.scale is not Scale.FOLLOW or value is None:
        return []
    if metric.format is Format.MAPPING and isinstance(value, Mapping):
        entry = value.get(metric.overview_key) if metric.overview_key else None
        return [(f"{metric.label} ({metric.overview_key})", tuple(entry))] if isinstance(entry, list) else []
    if metric.format is Format.CLASSES:
        follow, anti = (value["follow"], value["anti"]) if isinstance(value, Mapping) else value
        return [(metric.label, (follow, anti))]
    return []
