"""`matbench leaderboard build`: validated results -> a static site (jinja2, inline SVG, no server).

Pages: index.html (overview: one row per model and revision with paired ranks (leaderboard/ranks.py), the paper's
reported rows, the models with an eviction audit, one row per results file, the four plots),
suite-<name>.html, model-<slug>.html, policies-<slug>.html (a model's eviction audit as heat maps).
Every table is also written as CSV and JSON beside its page (`<page>.<table id>.csv|json`, linked
above the table), and every run as one row of leaderboard.parquet (downloads.py).
Every number links to its evidence, copied under evidence/ with content-addressed names, so the
site works from file:// and no submitted name ever becomes a path; or, with `--evidence link`, to
the run's files in the submissions dataset on the Hub (evidence.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from matbench.errors import MatbenchError
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.collect import ModelEntry, Run, find_runs, group_models
from matbench.leaderboard.downloads import (
    PARQUET,
    audit_frame,
    write_frame,
    write_runs_parquet,
    write_table,
)
from matbench.leaderboard.evidence import COPY, EvidencePlan, place_evidence
from matbench.leaderboard.figures import build_figures
from matbench.leaderboard.filters import OVERVIEW_FACETS, RUNS_FACETS, filters_for
from matbench.leaderboard.policies import AUDIT_METRICS, audit_sections
from matbench.leaderboard.ranks import METHOD as RANK_METHOD
from matbench.leaderboard.ranks import paired_ranks
from matbench.leaderboard.reported import Reported, load_reported
from matbench.leaderboard.tables import (
    RUNS_HEADER,
    Cell,
    evidence_link,
    metric_cell,
    overview_header,
    overview_rows,
    reported_rows,
    runs_rows,
    scorecard_metrics,
    suite_rows,
)
from matbench.results.verdicts import run_verdict, run_warnings


@dataclass(frozen=True)
class SiteSummary:
    out: Path
    n_runs: int
    n_models: int
    pages: int
    notes: tuple[str, ...] = ()  # one line each, printed by the build command: what the site lacks and why


def docs_base(url: str | None) -> str | None:
    """The docs site's address as the pages link it (ending in /); one line when it is no web URL."""
    if url is None:
        return None
    if not url.startswith(("https://", "http://")) or any(c in url for c in "\"'<> "):
        raise MatbenchError(f"--docs-url {url!r} is not a web address: pass the docs site's https:// URL")
    return url.rstrip("/") + "/"


def build_site(
    roots: list[Path],
    out: Path,
    reported: Reported | None = None,
    evidence: EvidencePlan = COPY,
    docs_url: str | None = None,
) -> SiteSummary:
    """Validate every results file under `roots`, then render the site into `out`."""
    docs = docs_base(docs_url)  # checked before any file is read
    return render_site(find_runs(roots), out, reported, evidence, docs)


def render_site(
    runs: list[Run],
    out: Path,
    reported: Reported | None = None,
    evidence: EvidencePlan = COPY,
    docs: str | None = None,
) -> SiteSummary:
    """The site of already validated runs (`find_runs`). Every value is read through the metric its
    suite declares, so a file lacking one is named in one line. With `docs` (the docs site's
    address, `docs_base`), every page links it and each suite page links the suite's own page."""
    reported = reported if reported is not None else load_reported()
    out.mkdir(parents=True, exist_ok=True)
    entries = group_models(runs, home=out)
    placed = place_evidence(out, entries, evidence)
    links = placed.links
    env = Environment(
        loader=PackageLoader("matbench.leaderboard", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    static = out / "static"
    static.mkdir(exist_ok=True)
    for name in ("style.css", "sort.js", "filter.js"):
        (static / name).write_text(resources.files("matbench.leaderboard").joinpath("static", name).read_text())

    suites = suites_in_order()
    figures = {f.suite: f for f in build_figures(entries, reported)}
    audits = {e.slug: sections for e in entries if (sections := audit_sections(e, links))}
    common = {
        "suites": suites,
        "source": reported.source,
        "overview_header": overview_header(),
        "runs_header": RUNS_HEADER,
        "docs": docs,
    }
    notes = list(placed.notes)
    parquet = write_runs_parquet(out, entries, links)
    if parquet is None:
        notes.append(
            f"{PARQUET} not written: no parquet engine installed (pip install pyarrow); "
            "the CSV and JSON downloads are complete"
        )
    overview = overview_rows(entries, paired_ranks(entries, out), links, out) + reported_rows(reported)
    every_run = runs_rows(entries, links)
    _write(
        out / "index.html",
        env.get_template("index.html").render(
            **common,
            overview=overview,
            rank_method=RANK_METHOD,
            runs=every_run,
            figures=list(figures.values()),
            n_runs=len(runs),
            n_models=len(entries),
            audited=[(e, len(audits[e.slug])) for e in entries if e.slug in audits],
            parquet=parquet.name if parquet else None,
            filters={"overview": filters_for(overview, OVERVIEW_FACETS), "runs": filters_for(every_run, RUNS_FACETS)},
            downloads={
                "overview": write_table(out, "index.overview", overview_header(), overview),
                "runs": write_table(out, "index.runs", RUNS_HEADER, every_run),
            },
        ),
    )
    pages = 1
    for entry in entries:
        if entry.slug in audits:
            _write(
                out / f"policies-{entry.slug}.html",
                env.get_template("policies.html").render(
                    **common,
                    entry=entry,
                    sections=audits[entry.slug],
                    metrics=AUDIT_METRICS,
                    download=write_frame(out, f"policies-{entry.slug}.heatmaps", audit_frame(audits[entry.slug])),
                ),
            )
            pages += 1
    for suite in suites:
        header, rows = suite_rows(suite, entries, reported, links, out)
        _write(
            out / f"suite-{suite}.html",
            env.get_template("suite.html").render(
                **common,
                suite=suite,
                header=header,
                rows=rows,
                figure=figures.get(suite),
                downloads={"suite-table": write_table(out, f"suite-{suite}.suite-table", header, rows)},
                glossary=[m.describe() for m in scorecard_metrics(suite)],
            ),
        )
        pages += 1
    for entry in entries:
        model_runs = runs_rows([entry], links)
        _write(
            out / f"model-{entry.slug}.html",
            env.get_template("model.html").render(
                **common,
                entry=entry,
                runs=model_runs,
                contract=_contract_cells(entry, links, out),
                audited=entry.slug in audits,
                downloads={"runs": write_table(out, f"model-{entry.slug}.runs", RUNS_HEADER, model_runs)},
            ),
        )
        pages += 1
    return SiteSummary(out, len(runs), len(entries), pages, tuple(notes))


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class ContractSection:
    """One suite of a model page: the suite's verdict on the run its scorecard cites, that run's
    warnings (`matbench.results.verdicts`, as `matbench eval` prints them) and the scorecard's
    cells, each linked to the results file."""

    suite: str
    verdict: str | None
    warnings: tuple[str, ...]
    cells: list[tuple[str, Cell]]


def _contract_cells(entry: ModelEntry, links, out: Path) -> list[ContractSection]:
    """Per suite of the model's scorecard: its verdict, warnings and (metric label, value cell)."""
    rows = []
    by_path = {run.path.resolve(): run for run in entry.runs}
    for suite in suites_in_order():
        values = entry.contract.get(suite)
        if values is None:
            continue
        href = evidence_link(values["evidence"], links, out)
        cited = by_path.get((out / values["evidence"]["results"]).resolve())
        found = run_verdict(cited.results) if cited else None
        rows.append(
            ContractSection(
                suite,
                found.line().removeprefix("verdict: ") if found else None,
                tuple(run_warnings(cited.results)) if cited else (),
                [(m.label, metric_cell(m, entry, suite, href)) for m in scorecard_metrics(suite) if m.key in values],
            )
        )
    return rows
