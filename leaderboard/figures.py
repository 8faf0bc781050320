"""The leaderboard's figures: one builder per figure, registered under the suite it draws.

A builder reads values only through the metrics its suite's evaluator declares (`Metric.value`
on a run, or the scorecard entry under the metric's key), and the paper's figures that name
those metrics; a suite without a builder simply has no figure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard import plots
from matbench.leaderboard.collect import ModelEntry
from matbench.leaderboard.reported import Reported
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.registry import Registry
from matbench.results.scorecard import largest_runs


@dataclass(frozen=True)
class Figure:
    suite: str
    caption: str
    svgs: tuple[Markup, ...]


@dataclass(frozen=True)
class FigureBuilder:
    caption: str
    draw: Callable[[list[ModelEntry], Reported], list[Markup]]


FIGURES: Registry[FigureBuilder] = Registry("figure")


def build_figures(entries: list[ModelEntry], reported: Reported) -> list[Figure]:
    """Every registered figure that has something to draw, suites in table order."""
    out = []
    for suite in suites_in_order():
        if suite in FIGURES:
            builder = FIGURES.get(suite)
            svgs = builder.draw(entries, reported)
            if svgs:
                out.append(Figure(suite, builder.caption, tuple(svgs)))
    return out


@contextmanager
def _reading(who: str, suite: str) -> Iterator[None]:
    """A value of another shape than its declared metric's (the results schema leaves metrics
    open) is one line naming whose results the figure could not read, not a traceback."""
    try:
        yield
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        raise MatbenchError(
            f"results of {who!r}: the {suite} figure cannot read them ({type(exc).__name__}: {exc}); "
            "run matbench rescore on them, or submit again"
        ) from None


def _number(value: Any, who: str, metric: Metric) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MatbenchError(
            f"{who}: metric {metric.key!r} draws {value!r}, which is not a number; run matbench "
            "rescore on its results, or submit again"
        )
    return float(value)


def _point(metric: Metric, value: Any, who: str) -> tuple[float, float | None, float | None]:
    """(value, low, high) of a RATE_CI / SIGNED_CI value."""
    key, ci_key = metric.fields
    ci = value.get(ci_key) or [None, None]
    return _number(value[key], who, metric), ci[0], ci[1]


def _run_metric(entry: ModelEntry, suite: str, key: str) -> Any | None:
    """A declared metric read from the model's largest run of `suite` (figures that need a run's
    detail, not the scorecard)."""
    runs = largest_runs([(r.path, r.results) for r in entry.runs], entry.scorecard["readout"])
    if suite not in runs:
        return None
    path, parsed = runs[suite]
    return EVALUATORS.get(suite).metric(key).value(parsed.metrics, f"results file {path}")


def _access(entries: list[ModelEntry], reported: Reported) -> list[Markup]:
    pools = [m for m in EVALUATORS.get("access").contract if m.overview and m.scale is Scale.ACCURACY]
    series = []
    for e in entries:
        card = e.contract.get("access")
        if card:
            with _reading(e.name, "access"):
                series.append(
                    plots.Series(e.label, {m.key: _point(m, card[m.key], e.name) for m in pools if card.get(m.key)})
                )
    paper = {f.metric.key: f for f in reported.of(None, "access") if f.metric in pools}
    if paper:
        series.append(
            plots.Series(
                "paper (model not named)",
                {k: _point(f.metric, f.value, "reported figures") for k, f in paper.items()},
                reported=True,
            )
        )
    if not series:
        return []
    return [
        plots.line_chart(
            [m.key for m in pools],
            series,
            "Access envelope: harv_kv recovery by cardinality",
            reference={m.key: m.chance for m in pools if m.chance is not None},
        )
    ]


def _trigger(entries: list[ModelEntry], reported: Reported) -> list[Markup]:
    write: dict[tuple[str, str], tuple[float, str]] = {}
    shift: dict[tuple[str, str], tuple[float, str]] = {}
    columns = []
    metric = EVALUATORS.get("trigger").metric("by_construction")
    for e in entries:
        rows = _run_metric(e, "trigger", metric.key)
        if rows is None:
            continue
        columns.append(e.label)
        with _reading(e.name, "trigger"):
            for c, row in rows.items():
                write[(c, e.label)] = (_number(row["write_through_accuracy"], e.name, metric), row["class"])
                shift[(c, e.label)] = (
                    _number(row["kv_donor_shift"]["mean"], e.name, metric),
                    "*" if row["shift_q"] < 0.05 else "",
                )
    if not columns:
        return []
    constructions = sorted({c for c, _ in write})
    values = [v for v, _ in shift.values()]
    return [
        plots.heatmap(
            constructions,
            columns,
            write,
            "Trigger write-through (kv accuracy vs the gold, chance .5; letter = W/U/N)",
            0,
            1,
        ),
        plots.heatmap(
            constructions,
            columns,
            shift,
            "Trigger kv donor shift (* = toward the donor, BH q < .05)",
            min(values),
            max(values),
            diverging=True,
        ),
    ]


def _programming(entries: list[ModelEntry], reported: Reported) -> list[Markup]:
    """The paper's X9 headline: donor-follow per carrier kind with decoy, unrelated register,
    carrier and review served (`follow_both`), beside the paper's pas / nld."""
    metric = EVALUATORS.get("programming").metric("follow_both")
    series = []
    for e in entries:
        rates = _run_metric(e, "programming", metric.key)
        if rates is not None:
            with _reading(e.name, "programming"):
                series.append(
                    plots.Series(
                        e.label,
                        {k: (_number(v, e.name, metric), None, None) for k, v in rates.items() if v is not None},
                    )
                )
    for model in reported.models:
        for f in reported.of(model, "programming"):
            if f.metric == metric:
                series.append(plots.Series(model, {k: (v, None, None) for k, v in f.value.items()}, reported=True))
    if not series:
        return []
    return [
        plots.bar_chart(
            ["pas", "bind", "dir", "nld", "exp"],
            series,
            "Programming: donor-follow by carrier kind, carrier + review served (X9)",
        )
    ]


def _harvest(entries: list[ModelEntry], reported: Reported) -> list[Markup]:
    contrasts = [
        m for m in EVALUATORS.get("harvest").contract if m.scale is Scale.DIFFERENCE and m.format is Format.SIGNED_CI
    ]
    rows = []
    for e in entries:
        card = e.contract.get("harvest") or {}
        with _reading(e.name, "harvest"):
            rows += [
                (f"{e.label} · {m.key}", *_point(m, card[m.key], e.name), False) for m in contrasts if card.get(m.key)
            ]
    for model in reported.models:
        rows += [
            (f"{model} · {f.metric.key}", *_point(f.metric, f.value, "reported figures"), True)
            for f in reported.of(model, "harvest")
            if f.metric in contrasts
        ]
    if not rows:
        return []
    return [plots.forest(rows, "Harvest: harv − iso (95% CI clustered by conversation)", 0.05)]


FIGURES.register("access")(
    FigureBuilder(
        "Access envelope: recovery of the dropped source's value from the kept carrier rows, by menu size, against "
        "chance.",
        _access,
    )
)
FIGURES.register("trigger")(
    FigureBuilder(
        "Trigger bank: write-through by construction and model, and the donor margin shift of the kv arm.", _trigger
    )
)
FIGURES.register("programming")(
    FigureBuilder("Programming: donor-follow with carrier and review served, per carrier kind.", _programming)
)
FIGURES.register("harvest")(
    FigureBuilder(
        "Harvest on real dialogs: harv − iso with its clustered 95% CI; the shaded band is the ±0.05 equivalence "
        "margin.",
        _harvest,
    )
)
