"""`matbench leaderboard build`: validated results -> a static site (jinja2, inline SVG, no server).

Pages: index.html (overview: one row per model and revision with tie-group ranks, the paper's
reported rows, one row per results file, the four plots), suite-<name>.html, model-<slug>.html.
Every number links to its evidence, copied under evidence/ with content-addressed names, so the
site works from file:// and no submitted name ever becomes a path.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from matbench.leaderboard import plots
from matbench.leaderboard.collect import ModelEntry, Run, find_runs, group_models
from matbench.leaderboard.reported import SUITES, Reported, load_reported
from matbench.leaderboard.tables import (
    OVERVIEW_HEADER,
    RUNS_HEADER,
    Cell,
    evidence_link,
    fmt,
    metrics_of,
    overview_rows,
    reported_rows,
    runs_rows,
    suite_rows,
    tie_ranks,
)
from matbench.results.schema import ResultsFile
from matbench.results.scorecard import largest_runs


@dataclass(frozen=True)
class SiteSummary:
    out: Path
    n_runs: int
    n_models: int
    pages: int


def _evidence(out: Path, entries: list[ModelEntry]) -> dict[Path, tuple[str, str]]:
    """Copy every run's results file and log under evidence/<model slug>/; map path -> links."""
    links = {}
    for entry in entries:
        folder = out / "evidence" / entry.slug
        folder.mkdir(parents=True, exist_ok=True)
        for run in entry.runs:
            stem = run.sha256[:16]
            shutil.copyfile(run.path, folder / f"{stem}.json")
            shutil.copyfile(run.log, folder / f"{stem}.items.jsonl")
            links[run.path.resolve()] = (f"evidence/{entry.slug}/{stem}.json", f"evidence/{entry.slug}/{stem}.items.jsonl")
    return links


def build_site(roots: list[Path], out: Path, reported: Reported | None = None) -> SiteSummary:
    """Validate every results file under `roots`, then render the site into `out`."""
    return render_site(find_runs(roots), out, reported)


def render_site(runs: list[Run], out: Path, reported: Reported | None = None) -> SiteSummary:
    """The site of already validated runs (`find_runs`). Every reader of a run's metrics runs
    model by model under `metrics_of`, so a file lacking them is named in one line."""
    reported = reported if reported is not None else load_reported()
    out.mkdir(parents=True, exist_ok=True)
    entries = group_models(runs, home=out)
    links = _evidence(out, entries)
    env = Environment(loader=PackageLoader("matbench.leaderboard", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    static = out / "static"
    static.mkdir(exist_ok=True)
    for name in ("style.css", "sort.js"):
        (static / name).write_text(resources.files("matbench.leaderboard").joinpath("static", name).read_text())

    ranks = tie_ranks(entries)
    figures = _figures(entries, reported)
    pages = 0
    common = {"suites": SUITES, "source": reported.source, "overview_header": OVERVIEW_HEADER, "runs_header": RUNS_HEADER}
    _write(out / "index.html", env.get_template("index.html").render(
        **common, overview=overview_rows(entries, ranks, links, out) + reported_rows(reported),
        runs=runs_rows(entries, links), figures=figures, n_runs=len(runs), n_models=len(entries)))
    pages += 1
    for suite in SUITES:
        header, rows = suite_rows(suite, entries, reported, links, out)
        _write(out / f"suite-{suite}.html", env.get_template("suite.html").render(
            **common, suite=suite, header=header, rows=rows, figure=figures.get(suite),
            unnamed=reported.model_not_named.get(suite)))
        pages += 1
    for entry in entries:
        with metrics_of(entry):
            contract = _contract_cells(entry, links, out)
        _write(out / f"model-{entry.slug}.html", env.get_template("model.html").render(
            **common, entry=entry, runs=runs_rows([entry], links), contract=contract))
        pages += 1
    return SiteSummary(out, len(runs), len(entries), pages)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _contract_cells(entry: ModelEntry, links, out: Path) -> list[tuple[str, list[tuple[str, Cell]]]]:
    """Per suite of the model's scorecard: (metric name, value cell linked to the results file)."""
    rows = []
    for suite, values in entry.contract.items():
        href = evidence_link(values["evidence"], links, out)
        cells = [(name, Cell(fmt(v), None, href)) for name, v in values.items() if name != "evidence"]
        rows.append((suite, cells))
    return rows


def _largest(entry: ModelEntry) -> dict[str, ResultsFile]:
    """Per suite, the entry's run with the most items, of the readout its scorecard was built from."""
    runs = largest_runs([(r.path, r.results) for r in entry.runs], entry.scorecard["readout"])
    return {suite: parsed for suite, (_, parsed) in runs.items()}


def _number(value: Any) -> float:
    """A metric drawn in a figure: one that is not a number fails here, under `metrics_of`, not in the drawing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return value


def _interval(value: Any, ci: Any) -> tuple[float, float, float]:
    low, high = ci
    return _number(value), _number(low), _number(high)


ACCESS_POOLS = (("2-way", "bin2"), ("4-way", "dir4"), ("8-way", "name8"))


def _figures(entries: list[ModelEntry], reported: Reported) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    access: list[plots.Series] = []
    write: dict[tuple[str, str], tuple[float, str]] = {}
    shift: dict[tuple[str, str], tuple[float, str]] = {}
    trigger_columns: list[str] = []
    programming: list[plots.Series] = []
    harvest: list[tuple[str, float, float | None, float | None, bool]] = []
    for e in entries:  # every metric a figure reads, model by model: a file lacking one is named in one line
        with metrics_of(e):
            largest = _largest(e)
            # Access envelope: recovery by cardinality against chance.
            a = e.contract.get("access")
            if a:
                access.append(plots.Series(e.label, {k: _interval(a[p]["accuracy"], a[p]["ci"])
                                                     for k, p in ACCESS_POOLS if a.get(p)}))
            # Trigger: construction x model heat maps of write-through and of the kv donor shift.
            if "trigger" in largest:
                trigger_columns.append(e.label)
                for c, row in largest["trigger"].metrics["by_construction"].items():
                    write[(c, e.label)] = (_number(row["write_through"]), row["class"])
                    shift[(c, e.label)] = (_number(row["kv_donor_shift"]["mean"]), "*" if row["shift_q"] < 0.05 else "")
            # Programming: donor-follow per carrier kind, carrier + review served.
            if "programming" in largest:
                rates = largest["programming"].metrics["headline"]["follow_rate"]
                programming.append(plots.Series(e.label, {k: (_number(v["both"]), None, None) for k, v in rates.items()}))
            # Harvest: harv - iso with its clustered CI against the +-0.05 equivalence band.
            h = e.contract.get("harvest")
            for corpus in ("locomo", "realtalk"):
                if h and h.get(corpus):
                    harvest.append((f"{e.label} · {corpus}", *_interval(h[corpus]["mean"], h[corpus]["ci"]), False))

    paper = reported.model_not_named.get("access")
    if paper:
        access.append(plots.Series("paper (model not named)", {
            "2-way": (paper["bin2"]["accuracy"], *paper["bin2"]["ci"]), "4-way": (paper["dir4"]["accuracy"], None, None),
            "8-way": (paper["name8"]["accuracy"], None, None)}, reported=True))
    if access:
        figures["access"] = plots.line_chart([k for k, _ in ACCESS_POOLS], access,
                                             "Access envelope: harv_kv recovery by cardinality",
                                             reference={"2-way": 0.5, "4-way": 0.25, "8-way": 0.125})
    if trigger_columns:
        constructions = sorted({c for c, _ in write})
        values = [v for v, _ in shift.values()]
        figures["trigger"] = [
            plots.heatmap(constructions, trigger_columns, write, "Trigger write-through (kv follow rate; letter = W/U/N)", 0, 1),
            plots.heatmap(constructions, trigger_columns, shift, "Trigger kv donor shift (* = toward the donor, BH q < .05)",
                          min(values), max(values), diverging=True)]
    for m in reported.models:
        prog = m.figures.get("programming", {}).get("carrier_follow")
        if prog:
            programming.append(plots.Series(m.model, {k: (f / n, None, None) for k, (f, n) in prog.items()}, reported=True))
    if programming:
        figures["programming"] = plots.bar_chart(["pas", "bind", "dir", "nld", "exp"], programming,
                                                 "Programming: donor-follow by carrier kind")
    for m in reported.models:
        h = m.figures.get("harvest")
        if h:
            ci = h.get("locomo_ci", [None, None])
            harvest.append((f"{m.model} · locomo", h["locomo_harv_minus_iso"], ci[0], ci[1], True))
    if harvest:
        figures["harvest"] = plots.forest(harvest, "Harvest: harv − iso (95% CI clustered by conversation)", 0.05)
    return figures
