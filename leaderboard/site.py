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
from matbench.leaderboard.tables import (OVERVIEW_HEADER, RUNS_HEADER, Cell, evidence_link, fmt, metrics_of,
                                         overview_rows, reported_rows, runs_rows, suite_rows, tie_ranks)


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
    runs = find_runs(roots)
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

    for entry in entries:  # every reader on each model alone first: a bad file is named, not a traceback
        with metrics_of(entry):
            tie_ranks([entry])
            overview_rows([entry], {}, links, out)
            _figures([entry], reported)
            _contract_cells(entry, links, out)
            for suite in SUITES:
                suite_rows(suite, [entry], reported, links, out)
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
        _write(out / f"model-{entry.slug}.html", env.get_template("model.html").render(
            **common, entry=entry, runs=runs_rows([entry], links), contract=_contract_cells(entry, links, out)))
        pages += 1
    return SiteSummary(out, len(runs), len(entries), pages)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _contract_cells(entry: ModelEntry, links, out: Path) -> list[tuple[str, list[tuple[str, Cell]]]]:
    """Per suite of the model's scorecard: (metric name, value cell linked to the results file)."""
    rows = []
    for suite, values in (entry.scorecard or {}).get("contract", {}).items():
        href = evidence_link(values["evidence"], links, out)
        cells = [(name, Cell(fmt(v), None, href)) for name, v in values.items() if name != "evidence"]
        rows.append((suite, cells))
    return rows


def _largest(entry: ModelEntry, suite: str) -> Run | None:
    runs = [r for r in entry.runs if r.results.config.suite == suite and r.results.config.readout == "probe"]
    return max(runs, key=lambda r: r.results.config.n_items, default=None)


def _figures(entries: list[ModelEntry], reported: Reported) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    # Access envelope: recovery by cardinality against chance.
    series = []
    for e in entries:
        access = (e.scorecard or {}).get("contract", {}).get("access")
        if access:
            series.append(plots.Series(e.name, {k: (access[p]["accuracy"], *access[p]["ci"]) for k, p in
                                                (("2-way", "bin2"), ("4-way", "dir4"), ("8-way", "name8")) if access.get(p)}))
    paper = reported.model_not_named.get("access")
    if paper:
        series.append(plots.Series("paper (model not named)", {
            "2-way": (paper["bin2"]["accuracy"], *paper["bin2"]["ci"]), "4-way": (paper["dir4"]["accuracy"], None, None),
            "8-way": (paper["name8"]["accuracy"], None, None)}, reported=True))
    if series:
        figures["access"] = plots.line_chart(["2-way", "4-way", "8-way"], series, "Access envelope: harv_kv recovery by cardinality",
                                             reference={"2-way": 0.5, "4-way": 0.25, "8-way": 0.125})
    # Trigger: construction x model heat maps of write-through and of the kv donor shift.
    trig = {e.name + (f" @{e.revision[:8]}" if len({x.name for x in entries if x.name == e.name}) > 1 else ""): _largest(e, "trigger")
            for e in entries}
    trig = {k: r for k, r in trig.items() if r is not None}
    if trig:
        constructions = sorted({c for r in trig.values() for c in r.results.metrics["by_construction"]})
        write, shift = {}, {}
        for col, run in trig.items():
            for c, row in run.results.metrics["by_construction"].items():
                write[(c, col)] = (row["write_through"], row["class"])
                shift[(c, col)] = (row["kv_donor_shift"]["mean"], "*" if row["shift_q"] < 0.05 else "")
        values = [v for v, _ in shift.values()]
        figures["trigger"] = [
            plots.heatmap(constructions, list(trig), write, "Trigger write-through (kv follow rate; letter = W/U/N)", 0, 1),
            plots.heatmap(constructions, list(trig), shift, "Trigger kv donor shift (* = toward the donor, BH q < .05)",
                          min(values), max(values), diverging=True)]
    # Programming: donor-follow per carrier kind, carrier + review served.
    series = []
    for e in entries:
        run = _largest(e, "programming")
        if run:
            rates = run.results.metrics["headline"]["follow_rate"]
            series.append(plots.Series(e.name, {k: (v["both"], None, None) for k, v in rates.items()}))
    for m in reported.models:
        prog = m.figures.get("programming", {}).get("carrier_follow")
        if prog:
            series.append(plots.Series(m.model, {k: (f / n, None, None) for k, (f, n) in prog.items()}, reported=True))
    if series:
        figures["programming"] = plots.bar_chart(["pas", "bind", "dir", "nld", "exp"], series,
                                                 "Programming: donor-follow by carrier kind")
    # Harvest: harv - iso with its clustered CI against the +-0.05 equivalence band.
    rows = []
    for e in entries:
        h = (e.scorecard or {}).get("contract", {}).get("harvest")
        for corpus in ("locomo", "realtalk"):
            if h and h.get(corpus):
                rows.append((f"{e.name} · {corpus}", h[corpus]["mean"], *h[corpus]["ci"], False))
    for m in reported.models:
        h = m.figures.get("harvest")
        if h:
            ci = h.get("locomo_ci", [None, None])
            rows.append((f"{m.model} · locomo", h["locomo_harv_minus_iso"], ci[0], ci[1], True))
    if rows:
        figures["harvest"] = plots.forest(rows, "Harvest: harv − iso (95% CI clustered by conversation)", 0.05)
    return figures
