"""Markdown tables of results files (`python -m matbench.results.report FILE...`): one table per
suite, one row per file, one column per metric the suite's evaluator declares (`report_rows`, the
tables of results/*/README.md); then, per file, every arm's classes, accuracy and donor shift
(`matbench.results.arms`), since the summary row holds the root arm's shift only."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.results.arms import run_summary, wrapped
from matbench.results.schema import GateSummary, is_scorecard, read_results
from matbench.results.verdicts import LEGEND


def _gates(gates: Mapping[str, GateSummary]) -> str:
    return (
        ", ".join(
            f"{g} {v.passed}/{v.checked}" + (f" ({v.skipped} n/a)" if v.skipped else "")
            for g, v in sorted(gates.items())
        )
        or "not run"
    )


def report_rows(paths: list[Path]) -> list[str]:
    runs = [(p, read_results(p)) for p in sorted(paths)]
    lines: list[str] = []
    for suite in suites_in_order():
        mine = [(p, r) for p, r in runs if r.config.suite == suite]
        if not mine:
            continue
        metrics = [m for m in EVALUATORS.get(suite).contract if m.in_scorecard]
        # dtype: a cell may run in float64 where float32 rounding fails gate A (SmolLM2's harvest)
        head = ["model", "readout", "serving", "dtype", "items", *[m.label for m in metrics], "gates passed"]
        lines += [f"### {suite}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for path, r in mine:
            cells = [
                m.text(m.value(r.metrics, f"results file {path}")) if m.valid_for(r.config.readout) else "n/a"
                for m in metrics
            ]
            # a run off the paper's protocol (`--template para`, `--rope-yarn`, `--policy`) says so
            # beside its serving mode (the same columns otherwise)
            serving = ", ".join([r.config.serving, *r.config.variants])
            lines.append(
                "| "
                + " | ".join(
                    [
                        r.config.model.model,
                        r.config.readout,
                        serving,
                        r.config.model.dtype,
                        str(r.config.n_items),
                        *cells,
                        _gates(r.gates),
                    ]
                )
                + " |"
            )
        lines.append("")
    return lines


def runs_among(paths: list[Path]) -> list[Path]:
    """`paths` without the scorecards among them (`DIR/*.json` of a folder that `eval --suite all`
    wrote matches its scorecard.json too), each one skipped with a line on standard error."""
    kept = []
    for path in paths:
        try:
            scorecard = is_scorecard(json.loads(path.read_bytes()))
        except (OSError, ValueError):
            scorecard = False  # read_results names a missing or broken file in one line
        if scorecard:
            print(f"matbench report: skipped {path}: a scorecard, not a results file", file=sys.stderr)
        else:
            kept.append(path)
    return kept


def report(paths: list[Path]) -> list[str]:
    """The suites' summary tables, then every file's arms, verdict and warnings, and the legend."""
    given, paths = paths, runs_among(paths)
    if given and not paths:
        raise MatbenchError(
            "no results files among the paths given (only scorecards): pass <suite>_<readout>_<serving>.json files"
        )
    lines = report_rows(paths)
    for path in sorted(paths):
        lines += [f"#### {path}", "", *run_summary(read_results(path)), ""]
    return [*lines, *wrapped(LEGEND)] if paths else lines


if __name__ == "__main__":
    try:
        print("\n".join(report([Path(p) for p in sys.argv[1:]])))
    except MatbenchError as exc:  # a bad or missing results file: one line, as the CLI prints it
        sys.exit(f"matbench report: error: {exc}")
