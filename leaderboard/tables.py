"""Table rows for the pages: every cell is (text, sort key, evidence link), formatted here so the
templates only lay out and escape.

Columns are loops over the metrics each suite's evaluator declares (`Evaluator.contract`): the
overview shows those declared `overview`, a suite page all of its scorecard metrics, and the
paper's figures sit in the column of the metric they name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench import stats
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.collect import ModelEntry, Run
from matbench.leaderboard.ranks import PairedRank
from matbench.leaderboard.reported import Reported, ReportedFigure
from matbench.protocol.metrics import Metric, plain_text
from matbench.protocol.runspec import split_budget


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str | None = None
    href: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Row:
    kind: str  # "measured" or "reported"
    cells: list[Cell]
    # What the table's filters match (filters.py): facet -> the row's values (a model row has
    # every suite it has a result in).
    facets: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def facets_json(self) -> str:
        """The facets as the page's data-facets attribute carries them (filter.js reads it)."""
        return json.dumps({k: list(v) for k, v in self.facets}, ensure_ascii=False)


RUNS_HEADER = [
    "model",
    "revision",
    "suite",
    "readout",
    "serving",
    "variant",
    "items",
    "device",
    "dtype",
    "gates",
    "matbench",
    "results",
    "items log",
]
EMPTY = Cell("—")


def overview_columns() -> list[tuple[str, Metric]]:
    """(suite, metric) of every metric declared for the overview, suites in table order."""
    return [(s, m) for s in suites_in_order() for m in EVALUATORS.get(s).contract if m.overview]


def overview_header() -> list[str]:
    return [
        "rank",
        "shift rank",
        "model",
        "revision",
        "readout",
        *[f"{suite} {m.label}" for suite, m in overview_columns()],
    ]


def scorecard_metrics(suite: str) -> list[Metric]:
    return [m for m in EVALUATORS.get(suite).contract if m.in_scorecard]


def evidence_link(evidence: dict[str, Any], links: dict[Path, tuple[str, str]], out: Path) -> str | None:
    results = (out / evidence["results"]).resolve()
    return links.get(results, (None, None))[0]


def metric_text(metric: Metric, value: Any, overview: bool = False) -> tuple[str, float | None]:
    """(text, sort key) of a value as its metric reads; in the overview, only the entry
    `overview_key` of a mapping."""
    if overview and metric.overview_key is not None:
        metric.check(value)
        part = value.get(metric.overview_key) if isinstance(value, dict) else None
        return (plain_text(part) if part is not None else "—"), metric.sort_key(part)
    return metric.text(value), metric.sort_key(value)


def metric_cell(
    metric: Metric, entry: ModelEntry, suite: str, href: str | None, overview: bool = False, readout: str | None = None
) -> Cell:
    """A measured value's cell (of the scorecard of `readout`, default the entry's primary); a value
    of the wrong shape is one line naming the model, its results file and the metric (the results
    schema leaves metrics open: only the declaration knows their shape)."""
    card = entry.scorecards[readout or entry.readout]["contract"][suite]
    try:
        text, sort = metric_text(metric, card[metric.key], overview)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise MatbenchError(
            f"results of {entry.name!r} ({card['evidence']['results']}): metric {metric.key!r} has a "
            f"value of another shape ({type(exc).__name__}: {exc}); run matbench rescore on them, "
            "or submit again"
        ) from None
    return Cell(text, sort, href)


def rank_value(entry: ModelEntry) -> tuple[float, float, float] | None:
    """The rank key: the follow rate (follow / pairs) of the metric declared `rank`, with its
    Wilson 95% CI."""
    for suite in suites_in_order():
        for m in EVALUATORS.get(suite).contract:
            if m.rank and suite in entry.contract:
                card = entry.contract[suite]
                n = card["evidence"]["n_items"]
                try:
                    value = card[m.key]
                    follow = value["follow"] if isinstance(value, dict) else value[0]
                    return (follow / n, *stats.wilson(follow, n).as_list())
                except (KeyError, TypeError, IndexError, ZeroDivisionError) as exc:
                    raise MatbenchError(
                        f"results of {entry.name!r} ({card['evidence']['results']}): rank metric "
                        f"{m.key!r} has a value of another shape ({type(exc).__name__}: {exc}); run "
                        "matbench rescore on them, or submit again"
                    ) from None
    return None


def overview_rows(entries: list[ModelEntry], ranks: dict[str, PairedRank], links, out: Path) -> list[Row]:
    rows = [_overview_row(e, ranks, links, out) for e in entries]
    return sorted(
        rows, key=lambda r: (r.cells[0].sort is None, r.cells[0].sort or 0, r.cells[1].sort or 0, r.cells[2].text)
    )


def _overview_row(e: ModelEntry, ranks: dict[str, PairedRank], links, out: Path) -> Row:
    rank, follow = ranks.get(e.slug), rank_value(e)
    cells = [
        Cell(
            f"{rank.follow}" if rank else "—",
            rank.follow if rank else None,
            title=f"discovery root follow rate {follow[0]:.3f} [{follow[1]:.3f}, {follow[2]:.3f}]; paired "
            "McNemar against every other model"
            if follow
            else None,
        ),
        Cell(
            f"{rank.shift}" if rank else "—",
            rank.shift if rank else None,
            title="discovery root donor shift: paired bootstrap against every other model" if rank else None,
        ),
        Cell(e.name, e.name, f"model-{e.slug}.html"),
        Cell(e.revision[:16], e.revision),
        Cell(e.readout, e.readout),
    ]
    for suite, metric in overview_columns():
        entry = e.contract.get(suite)
        if not entry or metric.key not in entry:
            cells.append(EMPTY)
            continue
        cells.append(metric_cell(metric, e, suite, evidence_link(entry["evidence"], links, out), overview=True))
    return Row(
        "measured",
        cells,
        (
            ("model", (e.name,)),
            ("suite", tuple(s for s in suites_in_order() if s in e.contract)),
            ("readout", (e.readout,)),
        ),
    )


def _reported_cell(figure: ReportedFigure | None, metric: Metric) -> Cell:
    if figure is None:
        return EMPTY
    text, sort = metric_text(metric, figure.value, overview=True)
    return Cell(text + (f" ({figure.note})" if figure.note else ""), sort, title=figure.note)


def _figure_for(figures: list[ReportedFigure], suite: str, metric: Metric) -> ReportedFigure | None:
    return next((f for f in figures if f.suite == suite and f.metric is not None and f.metric.key == metric.key), None)


def reported_rows(reported: Reported) -> list[Row]:
    """One overview row per model the paper names and readout it read that model with: its
    figures in the columns of their metrics (a column never mixes readouts within a row)."""
    rows = []
    for model, readout in reported.rows():
        if model is None:
            continue
        figures = reported.of(model, readout=readout)
        cells = [Cell("reported"), Cell("—"), Cell(model, model), Cell("paper"), Cell(readout or "—", readout)]
        cells += [_reported_cell(_figure_for(figures, s, m), m) for s, m in overview_columns()]
        suites = tuple(dict.fromkeys(f.suite for f in figures))
        rows.append(Row("reported", cells, (("model", (model,)), ("suite", suites), ("readout", (readout or "—",)))))
    return rows


def runs_rows(entries: list[ModelEntry], links) -> list[Row]:
    rows = []
    for e in entries:
        for run in e.runs:
            r = run.results
            results_href, log_href = links[run.path.resolve()]
            gates = ", ".join(f"{k} {g.passed}/{g.checked}" for k, g in r.gates.items()) or "not run"
            rows.append(
                Row(
                    "measured",
                    [
                        Cell(e.name, e.name, f"model-{e.slug}.html"),
                        Cell(e.revision[:16], e.revision),
                        Cell(r.config.suite, r.config.suite),
                        Cell(r.config.readout, r.config.readout),
                        Cell(r.config.serving, r.config.serving),
                        # a policy's run or a robustness check (the suite pages show the protocol runs only)
                        Cell(", ".join(r.config.variants) or "—", ", ".join(r.config.variants)),
                        Cell(str(r.config.n_items), r.config.n_items),
                        Cell(r.config.model.device, r.config.model.device),
                        Cell(r.config.model.dtype, r.config.model.dtype),
                        Cell(gates, gates),
                        Cell(r.environment.matbench, r.environment.matbench),
                        Cell("results", None, results_href),
                        Cell("items", None, log_href),
                    ],
                    _run_facets(e, run),
                )
            )
    return rows


NO_POLICY = "none (protocol)"  # the facet value of a run without a serving policy (and of its budget)


def _run_facets(e: ModelEntry, run: Run) -> tuple[tuple[str, tuple[str, ...]], ...]:
    c = run.results.config
    policy, budget = split_budget(c.policy) if c.policy else (NO_POLICY, NO_POLICY)
    return (
        ("model", (e.name,)),
        ("suite", (c.suite,)),
        ("readout", (c.readout,)),
        ("serving", (c.serving,)),
        ("policy", (policy,)),
        ("budget", (budget or "—",)),
    )


def suite_rows(
    suite: str, entries: list[ModelEntry], reported: Reported, links, out: Path
) -> tuple[list[str], list[Row]]:
    """The suite page: one column per scorecard metric the suite declares; the paper's figures in
    their metric's column, the ones on another scale as text in the last column."""
    metrics = scorecard_metrics(suite)
    # A judge column where any run's free answers were graded by a judge model (`--judge`)
    judged = any(
        "judge" in (e.scorecards[r]["contract"].get(suite) or {}).get("evidence", {})
        for e in entries
        for r in e.readouts()
    )
    header = ["model", "revision", "readout", "items", *(["judge"] if judged else []), *[m.label for m in metrics]]
    rows = []
    for e in entries:
        for readout in e.readouts():  # one row per readout: a column never mixes readouts in a row
            entry = e.scorecards[readout]["contract"].get(suite)
            if not entry:
                continue
            href = evidence_link(entry["evidence"], links, out)
            cells = [
                Cell(e.name, e.name, f"model-{e.slug}.html"),
                Cell(e.revision[:16], e.revision),
                Cell(readout, readout),
                Cell(str(entry["evidence"]["n_items"]), entry["evidence"]["n_items"], href),
            ]
            if judged:
                judge = entry["evidence"].get("judge")
                cells.append(Cell(judge, judge) if judge else Cell("none (gold named)", ""))
            cells += [metric_cell(m, e, suite, href, readout=readout) if m.key in entry else EMPTY for m in metrics]
            rows.append(Row("measured", cells))
    for model, readout in sorted(reported.rows(suite), key=lambda r: r[0] is None):
        figures = reported.of(model, suite, readout)
        cells = [
            Cell(model or "paper (model not named)", model or ""),
            Cell("paper"),
            Cell(readout or "—", readout),
            EMPTY,
            *([EMPTY] if judged else []),
        ]
        cells += [
            Cell(f.text(), m.sort_key(f.value), title=f.note) if (f := _figure_for(figures, suite, m)) else EMPTY
            for m in metrics
        ]
        cells.append(
            Cell("; ".join(f"{f.label}: {f.text()}" for f in figures if f.metric is None or f.metric not in metrics))
        )
        rows.append(Row("reported", cells))
    if any(r.kind == "reported" for r in rows):
        header = [*header, "other reported figures"]
        rows = [r if len(r.cells) == len(header) else Row(r.kind, [*r.cells, EMPTY]) for r in rows]
    return header, rows
