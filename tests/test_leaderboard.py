"""The static leaderboard and submissions: every number from a validated run, nothing executable."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.collect import find_runs
from matbench.leaderboard.reported import load_reported
from matbench.leaderboard.site import build_site
from matbench.leaderboard.submit import (
    open_hub_pull_request,
    store_submission,
    verify_submission,
)
from matbench.results.files import file_sha256
from matbench.results.store import read_log_bytes, run_address
from matbench.results.validate import MAX_RESULTS_BYTES
from tests.leaderboard_fixtures import (
    HOSTILE,
    STORE,
    copy_run,
    fixture_runs,
    synthetic_runs,
)

RUN = next(p for p in fixture_runs() if p.name == "discovery_probe_compact.json")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.tags, self.rows = [], [], {}
        self._table = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "a":
            self.hrefs.append(attrs["href"])
        if tag == "table":
            self._table = attrs.get("id")
            self.rows[self._table] = []
        if tag == "tr" and self._table and attrs.get("class"):
            self.rows[self._table].append(attrs["class"])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text())
    return parser


def test_site_from_the_fixture_store(tmp_path):
    summary = build_site([STORE], tmp_path / "site")
    site = summary.out
    runs = fixture_runs()
    models = {json.loads(p.read_text())["config"]["model"]["model"] for p in runs}
    suites = {json.loads(p.read_text())["config"]["suite"] for p in runs}
    assert (summary.n_runs, summary.n_models) == (len(runs), len(models))
    audited = {
        json.loads(p.read_text())["config"]["model"]["model"]
        for p in runs
        if json.loads(p.read_text())["config"].get("policy")
    }
    # index, a page per suite, a page per model, a policies page per audited model
    assert summary.pages == 1 + len(suites_in_order()) + summary.n_models + len(audited) and len(audited) == 2
    assert sum(h.startswith("policies-") for h in _parse(site / "index.html").hrefs) == len(audited)
    index = _parse(site / "index.html")
    reported = load_reported()
    named_rows = [(model, readout) for model, readout in reported.rows() if model is not None]
    assert index.rows["overview"] == ["measured"] * len(models) + ["reported"] * len(named_rows)
    assert index.rows["runs"] == ["measured"] * len(runs)  # one row per results file
    figures = dict(re.findall(r'<figure id="plot-(\w+)">(.*?)</figure>', (site / "index.html").read_text(), re.DOTALL))
    assert "trigger" in suites and figures["trigger"].count("<svg") == 2  # the two heat maps
    # The paper's X9 bars (pas, nld: the reported follow_both figure) reach the programming chart.
    assert "reported" in figures["programming"] and "Qwen3-8B" in figures["programming"]
    assert index.tags.count("svg") == sum(f.count("<svg") for f in figures.values())  # plots live in figures
    for page in site.glob("*.html"):  # every link resolves inside the site: evidence works offline
        for href in _parse(page).hrefs:
            assert (site / href).resolve().is_file(), (page.name, href)
            assert (site / href).resolve().is_relative_to(site.resolve())
    evidence = [h for h in index.hrefs if h.startswith("evidence/")]
    assert len({h for h in evidence if h.endswith(".items.jsonl.gz")}) == len(runs)  # logs as stored


def test_the_runs_table_names_each_runs_departure_from_the_protocol(tmp_path):
    """YaRN, reworded and audit runs are kept off the suite pages (they are not the contract); in
    the runs table their variant cell says which they are, counted here from the file names."""
    from collections import Counter

    from matbench.leaderboard.collect import group_models
    from matbench.leaderboard.tables import RUNS_HEADER, runs_rows

    runs = find_runs([STORE])
    rows = runs_rows(group_models(runs, home=tmp_path), {r.path.resolve(): ("r", "i") for r in runs})
    variants = Counter(row.cells[RUNS_HEADER.index("variant")].text for row in rows)
    yarn = sum(r.path.stem.endswith("_yarn4") for r in runs)
    para = sum(r.path.stem.endswith("_para") for r in runs)
    assert yarn == 2 and para == 1  # the fixture's YaRN harvests and reworded discovery
    # An audit run's variant names its policy and budget, and whether the source was evicted; the
    # file name says the same (`<stem>_<policy>-<budget>[_evicted]`).
    audits = [r for r in runs if r.results.config.policy]
    assert len(audits) == 13
    assert all((r.results.config.source_mode == "evicted") == r.path.stem.endswith("_evicted") for r in audits)
    expected = Counter(
        f"policy {r.results.config.policy}" + (", source evicted" if r.results.config.source_mode else "")
        for r in audits
    )
    assert variants == Counter(
        {"—": len(runs) - yarn - para - len(audits), "yarn ×4": yarn, "template para": para, **expected}
    )


def test_the_overview_ranks_are_the_paired_tests_of_the_committed_models(tmp_path):
    from matbench.leaderboard.collect import find_runs, group_models
    from matbench.leaderboard.ranks import compare, item_outcomes

    site = build_site([STORE], tmp_path / "site").out
    cells = re.findall(
        r'<tr class="measured"[^>]*><td[^>]*data-sort="(\d+)"[^>]*>\d+</td><td[^>]*data-sort="(\d+)"',
        (site / "index.html").read_text(),
    )
    entries = group_models(find_runs([STORE]), site)
    outcomes = [item_outcomes(e, site) for e in entries]
    assert len(cells) == len(entries) == 3 and all(len(o) == 16 for o in outcomes)
    comparisons = [compare(a, b) for i, a in enumerate(outcomes) for b in outcomes[i + 1 :]]
    # on the 16 shared discovery pairs no paired test separates the three offline models: one rank each way
    assert all(
        c.shared == 16 and not (c.a_follows_more or c.b_follows_more or c.a_shifts_more or c.b_shifts_more)
        for c in comparisons
    )
    assert cells == [("1", "1")] * 3
    assert "exact McNemar test" in (site / "index.html").read_text()


def test_a_hostile_model_name_stays_text_and_cannot_pick_a_path(tmp_path):
    copy_run(RUN, tmp_path / "runs" / "evil", model=HOSTILE)
    site = build_site([tmp_path / "runs"], tmp_path / "site").out
    html = "".join(p.read_text() for p in site.glob("*.html"))
    assert "<script>window" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    written = [p.resolve() for p in tmp_path.rglob("*")]  # the run's inputs under runs/, all else in the site
    assert written and all(
        p.is_relative_to(site.resolve()) or p.is_relative_to((tmp_path / "runs").resolve()) for p in written
    )
    assert not (tmp_path / "etc").exists()
    # In the CSV downloads the name is text behind an apostrophe; the JSON keeps it as submitted.
    import csv

    runs_csv = list(csv.DictReader((site / "index.runs.csv").open()))
    assert [r["model"] for r in runs_csv] == ["'" + HOSTILE]
    assert [r["model"] for r in json.loads((site / "index.runs.json").read_text())] == [HOSTILE]


def test_a_csv_cell_a_spreadsheet_would_run_goes_behind_an_apostrophe(tmp_path):
    import csv

    import pandas as pd

    from matbench.leaderboard.downloads import write_frame

    cells = [
        "=1+1",
        "@SUM(A1)",
        "+cmd",
        "-2+3+cmd|' /C calc'!A0",
        "\tx",
        "-0.260",
        "+0.005 [-0.002, +0.011]",
        "12.5%",
        "1e-05",
        "-1.5e-05 [-2e-05, 3.1]",
        "—",
        "smollm2-135m",
        "-",
        3,
        -0.5,
        None,
    ]
    frame = pd.DataFrame({"cell": pd.Series(cells, dtype=object)})
    write_frame(tmp_path, "t", frame)
    written = [r["cell"] for r in csv.DictReader((tmp_path / "t.csv").open())]
    assert written == [
        "'=1+1",
        "'@SUM(A1)",
        "'+cmd",
        "'-2+3+cmd|' /C calc'!A0",
        "'\tx",
        "-0.260",
        "+0.005 [-0.002, +0.011]",
        "12.5%",
        "1e-05",
        "-1.5e-05 [-2e-05, 3.1]",
        "—",
        "smollm2-135m",
        "'-",
        "3",
        "-0.5",
        "",
    ]
    assert [r["cell"] for r in json.loads((tmp_path / "t.json").read_text())] == cells


def _tamper(tmp_path: Path, edit) -> Path:
    path = copy_run(RUN, tmp_path / "sub")
    payload = json.loads(path.read_text())
    edit(payload)
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda d: d["metrics"]["arms"]["root"]["classes"].__setitem__("follow", 9),
            "metrics.arms.root.classes.follow does not match",
        ),
        (
            lambda d: d["metrics"]["headline"].__setitem__("control_clean", False),
            "metrics.headline.control_clean does not match",
        ),
        (lambda d: d["items"].__setitem__("log", "../../outside.items.jsonl"), "field items.log"),
        (lambda d: d["items"].__setitem__("sha256", "0" * 64), "not the one the run wrote"),
        (lambda d: d.__setitem__("script", "<script>"), "field script"),
    ],
)
def test_a_doctored_submission_is_refused_in_one_line(tmp_path, capsys, edit, message):
    path = _tamper(tmp_path, edit)
    assert main(["submit", str(path), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "store").exists()  # nothing written


def test_oversized_and_missing_submissions_are_refused(tmp_path):
    path = copy_run(RUN, tmp_path / "big")
    path.write_text(path.read_text() + " " * MAX_RESULTS_BYTES)
    with pytest.raises(MatbenchError, match=f"over the {MAX_RESULTS_BYTES} byte limit"):
        verify_submission(path)
    with pytest.raises(MatbenchError, match="not found"):
        verify_submission(tmp_path / "nope.json")
    lost = copy_run(RUN, tmp_path / "lost")
    (lost.parent / "discovery_probe_compact.items.jsonl").unlink()
    with pytest.raises(MatbenchError, match="per-item log discovery_probe_compact.items.jsonl is missing"):
        verify_submission(lost)


def _edit_first_record(line: str, edit) -> str:
    record = json.loads(line)
    edit(record)
    return json.dumps(record)


@pytest.mark.parametrize(
    "edit_line, message",
    [
        (lambda line: "{not json", "line 1 is not JSON"),
        (lambda line: "[1, 2]", "line 1: missing field 'item_id'"),
        (lambda line: _edit_first_record(line, lambda r: r.pop("item_id")), "line 1: missing field 'item_id'"),
        (lambda line: _edit_first_record(line, lambda r: r.pop("arms")), "missing field 'arms'"),
        (
            lambda line: _edit_first_record(line, lambda r: r["arms"]["root"].__setitem__("class", "won")),
            "arm root: class 'won' is not one of follow, anti, const, other",
        ),
        (lambda line: _edit_first_record(line, lambda r: r.__setitem__("scrore", 1)), "unknown field 'scrore'"),
    ],
)
def test_a_submission_whose_log_lacks_records_is_refused_in_one_line(tmp_path, capsys, edit_line, message):
    # The log matches the results file's sha256 (both forged together), but its lines are not records.
    path = copy_run(RUN, tmp_path / "sub")
    log = path.parent / "discovery_probe_compact.items.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([edit_line(lines[0]), *lines[1:]]) + "\n")
    payload = json.loads(path.read_text())
    payload["items"]["sha256"] = file_sha256(log)
    path.write_text(json.dumps(payload))
    assert main(["submit", str(path), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "discovery_probe_compact" in err
    assert not (tmp_path / "store").exists()


def test_store_is_content_addressed_and_idempotent(tmp_path):
    run = verify_submission(copy_run(RUN, tmp_path / "sub"))
    first = store_submission(run, tmp_path / "store")
    second = store_submission(run, tmp_path / "store")
    folder = tmp_path / "store" / "submissions" / first.address
    assert first == second and first.address == run.sha256[:16] == run_address(json.loads(RUN.read_bytes()))
    assert sorted(p.name for p in folder.iterdir()) == [
        "discovery_probe_compact.items.jsonl.gz",
        "discovery_probe_compact.json",
    ]
    assert first.files == (folder / "discovery_probe_compact.json", folder / "discovery_probe_compact.items.jsonl.gz")
    bytes_once = [p.read_bytes() for p in first.files]
    store_submission(run, tmp_path / "store")  # the same bytes again: deterministic compression
    assert [p.read_bytes() for p in first.files] == bytes_once
    stored = verify_submission(folder / "discovery_probe_compact.json")
    assert stored.sha256 == run.sha256 and stored.log == folder / "discovery_probe_compact.items.jsonl.gz"
    assert (folder / "discovery_probe_compact.json").read_text().count("\n") == 1  # one line


def test_hub_submission_opens_a_pull_request_with_both_files(tmp_path):
    class FakeApi:
        def create_commit(self, **kw):
            self.kw = kw

            class Info:
                pr_url = "https://huggingface.co/datasets/x/y/discussions/1"

            return Info()

    api = FakeApi()
    run = verify_submission(copy_run(RUN, tmp_path / "sub"))
    assert open_hub_pull_request(run, "org/matbench-submissions", api=api).endswith("/discussions/1")
    assert api.kw["create_pr"] is True and api.kw["repo_type"] == "dataset"
    assert [op.path_in_repo for op in api.kw["operations"]] == [
        f"submissions/{run.address}/discovery_probe_compact.json",
        f"submissions/{run.address}/discovery_probe_compact.items.jsonl.gz",
    ]


def _http_error(message: str) -> Exception:
    from types import SimpleNamespace

    from huggingface_hub.errors import HfHubHTTPError

    return HfHubHTTPError(message, response=SimpleNamespace(headers={}, request=None))


@pytest.mark.parametrize(
    "error, name",
    [
        (lambda: _http_error("403 Forbidden: you cannot open a pull request here\nmore detail"), "HfHubHTTPError"),
        (lambda: ConnectionError("you cannot open a pull request here\nmore detail"), "ConnectionError"),
    ],
)
def test_hub_errors_are_one_line(tmp_path, error, name):
    class FailingApi:
        def create_commit(self, **kw):
            raise error()

    run = verify_submission(copy_run(RUN, tmp_path / "sub"))
    with pytest.raises(
        MatbenchError,
        match=rf"^could not open a pull request on the Hub dataset org/x: {name}: "
        r"(403 Forbidden: )?you cannot open a pull request here$",
    ):
        open_hub_pull_request(run, "org/x", api=FailingApi())


def test_build_cli_and_its_errors(tmp_path, capsys):
    assert main(["leaderboard", "build", "--results", str(STORE), "--out", str(tmp_path / "s")]) == 0
    runs = fixture_runs()
    models = {json.loads(p.read_text())["config"]["model"]["model"] for p in runs}
    audited = {
        json.loads(p.read_text())["config"]["model"]["model"]
        for p in runs
        if json.loads(p.read_text())["config"].get("policy")
    }
    pages = 1 + len(suites_in_order()) + len(models) + len(audited)  # a policies page per audited model
    assert f"{len(models)} models, {len(runs)} results files, {pages} pages" in capsys.readouterr().out
    assert main(["leaderboard", "build", "--results", str(tmp_path / "none"), "--out", str(tmp_path / "t")]) == 2
    assert "is not a directory of results files" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x_probe_compact.json").write_text('{"schema_version": "1.1", "config": 3}')
    assert main(["leaderboard", "build", "--results", str(bad), "--out", str(tmp_path / "u")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fails the results schema" in err
    missing = tmp_path / "no-reported.json"
    assert (
        main(
            [
                "leaderboard",
                "build",
                "--results",
                str(STORE),
                "--out",
                str(tmp_path / "v"),
                "--reported",
                str(missing),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"reported figures {missing} cannot be read" in err
    assert not (tmp_path / "v").exists()


def test_synthetic_runs_group_into_models(tmp_path):
    """21 runs made from the k SmolLM2 submissions: one synthetic model per k runs."""
    from matbench.leaderboard import synthetic

    k = len(synthetic.sources(STORE))
    paths = synthetic_runs(tmp_path / "runs", 21)
    assert len(find_runs([tmp_path / "runs"])) == 21
    summary = build_site([tmp_path / "runs"], tmp_path / "site")
    assert (summary.n_runs, summary.n_models) == (21, -(-21 // k)) and len(paths) == 21


def test_a_file_with_foreign_metrics_is_named_in_one_line(tmp_path, capsys):
    # The schema leaves `metrics` open (each suite has its own); a file whose metrics are not what
    # this matbench reads must be named, not crash a page with a traceback.
    path = copy_run(RUN, tmp_path / "runs" / "odd", model="odd-model")
    payload = json.loads(path.read_text())
    payload["metrics"]["arms"]["root"]["classes"] = "everything"
    path.write_text(json.dumps(payload))
    assert main(["leaderboard", "build", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results of 'odd-model'" in err and "discovery_probe_compact.json" in err


def test_a_file_whose_metrics_a_figure_cannot_read_is_named_in_one_line(tmp_path, capsys):
    # The trigger heat maps read each construction's row from the run itself: a row of another
    # shape is one line naming whose results, not a KeyError from inside the figure.
    trigger = next(p for p in fixture_runs() if p.name == "trigger_probe_compact.json")
    path = copy_run(trigger, tmp_path / "runs" / "odd", model="odd-model")
    payload = json.loads(path.read_text())
    construction = next(iter(payload["metrics"]["by_construction"]))
    del payload["metrics"]["by_construction"][construction]["kv_donor_shift"]
    path.write_text(json.dumps(payload))
    assert main(["leaderboard", "build", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results of 'odd-model': the trigger figure cannot read them (KeyError" in err


def test_two_revisions_of_one_model_are_two_series_in_every_figure(tmp_path):
    # The same name under two revisions: each figure labels both, and the trigger heat maps get a
    # column each instead of one overwriting the other.
    for path in fixture_runs():
        if json.loads(path.read_text())["config"]["model"]["model"] == "smollm2-135m":
            for revision in ("a" * 40, "b" * 40):
                copy_run(path, tmp_path / "runs" / revision[0] / path.parent.name, revision=revision)
    copied = list((tmp_path / "runs").glob("*/*/*.json"))
    summary = build_site([tmp_path / "runs"], tmp_path / "site")
    assert (summary.n_runs, summary.n_models) == (len(copied), 2)
    index = (summary.out / "index.html").read_text()
    figures = re.findall(r'<figure id="plot-(\w+)">(.*?)</figure>', index, re.DOTALL)
    suites = {json.loads(p.read_text())["config"]["suite"] for p in copied}
    plotted = [s for s in ("trigger", "access", "programming", "harvest") if s in suites]  # table order
    names = [name for name, _ in figures]
    assert names == [s for s in ("trigger", "access", "programming", "harvest") if s in names]  # table order
    assert set(plotted) <= set(names) and "trigger" in plotted
    for name, figure in figures:
        if name not in suites:  # drawn from the paper's reported figures only
            continue
        for label in ("smollm2-135m @aaaaaaaa", "smollm2-135m @bbbbbbbb"):
            assert label in figure, (name, label)
    trigger = dict(figures)["trigger"]
    heatmaps = re.findall(r"<svg.*?</svg>", trigger, re.DOTALL)
    assert len(heatmaps) == 2
    for svg in heatmaps:  # one column label per revision (drawn truncated to 14 characters)
        assert svg.count(">smollm2-135m @</text>") == 2


def test_each_reported_figure_sits_in_a_column_computed_the_same_way(tmp_path):
    """A paper figure is shown in a metric's column only on a row of the readout the paper read
    it with, on that metric's scale, and only where the metric means something under that
    readout; every metric figure is shown exactly once per table."""
    from matbench.leaderboard.collect import group_models
    from matbench.leaderboard.tables import (
        EMPTY,
        overview_columns,
        overview_header,
        reported_rows,
        scorecard_metrics,
        suite_rows,
    )

    reported = load_reported()
    entries = group_models(find_runs([STORE]), home=tmp_path)

    def figure(model, suite, readout, metric):
        found = [f for f in reported.of(model, suite, readout) if f.metric == metric]
        assert len(found) == 1, (model, suite, readout, metric.key)
        assert found[0].metric.scale == metric.scale and metric.valid_for(readout)
        return found[0]

    for suite in suites_in_order():
        metrics = scorecard_metrics(suite)
        _, rows = suite_rows(suite, entries, reported, {}, tmp_path)
        placed = 0
        for row in (r for r in rows if r.kind == "reported"):
            model, readout = row.cells[0].sort or None, row.cells[2].sort
            for metric, cell in zip(metrics, row.cells[4 : 4 + len(metrics)]):
                if cell is not EMPTY:
                    assert cell.text.startswith(metric.text(figure(model, suite, readout, metric).value))
                    placed += 1
        assert placed == sum(f.suite == suite and f.metric is not None for f in reported.figures), suite
    overview = [(s, m) for s, m in overview_columns()]
    first = len(overview_header()) - len(overview)  # rank, shift rank, model, revision, readout
    for row in reported_rows(reported):
        model, readout = row.cells[2].sort, row.cells[4].sort
        for (suite, metric), cell in zip(overview, row.cells[first:]):
            if cell is not EMPTY:
                figure(model, suite, readout, metric)


def test_the_policies_page_shows_each_audit_cell_and_the_oracle_row_from_their_files(tmp_path):
    """Heat maps per (suite, readout, serving, governed arm): each policy cell is its results
    file's `metrics.selection` value, the oracle row the mean shift of its log's arm, recomputed
    here from the raw lines."""
    from matbench.leaderboard.collect import group_models
    from matbench.leaderboard.policies import AUDIT_METRICS, audit_sections

    runs = find_runs([STORE])
    entry = next(e for e in group_models(runs, home=tmp_path) if e.name == "smollm2-135m")
    links = {r.path.resolve(): (f"r/{r.sha256}", "i") for r in entry.runs}
    sections = audit_sections(entry, links)
    audits = [r for r in entry.runs if r.results.config.policy]
    arms = {(r.results.config.suite, arm) for r in audits for arm in r.results.metrics["selection"] if "/" not in arm}
    assert sorted((s.suite, s.arm) for s in sections) == sorted(arms) and (sections[0].suite, sections[0].arm) == (
        "discovery",
        "root",
    )
    section = next(s for s in sections if (s.suite, s.arm) == ("discovery", "root"))
    shift = next(m for m in section.maps if m.metric.key == "shift")
    assert shift.columns == [(mode, b) for mode in ("natural", "evicted") for b in ("0.25", "0.5", "0.75", "0.875")]
    rows = dict(shift.rows)
    assert next(iter(rows)) == "oracle (whole events)" and len(rows) == 1 + len(
        {r.results.config.policy.split("@")[0] for r in audits}
    )
    run = next(
        r
        for r in audits
        if r.results.config.policy == "snapkv@0.75"
        and r.results.config.source_mode
        and r.results.config.suite == "discovery"
    )
    hidden = run.results.metrics["selection"]["root"]["materialization"]["donor_hidden"]
    cell = rows["snapkv"][shift.columns.index(("evicted", "0.75"))]
    assert cell.text == f"{hidden['shift']['mean']:+.3f}" and cell.href == f"r/{run.sha256}"
    assert cell.strong == (hidden["shift"]["ci"][0] > 0 or hidden["shift"]["ci"][1] < 0)
    # the donor shift against the ratio removed: a chart per source mode, a line per policy and the
    # oracle's dashed reference, each point the heat map's value with its CI
    measured = {
        mode
        for mode in ("natural", "evicted")
        for p, cells in rows.items()
        if p != "oracle (whole events)"
        and sum(c.value is not None for c, col in zip(cells, shift.columns) if col[0] == mode) >= 2
    }
    assert len(section.charts) == len(measured) >= 1
    evicted = str(next(c for c in section.charts if "evicted: donor margin shift against the fraction" in c))
    ratio_policies = {
        p
        for p, cells in rows.items()
        if p != "oracle (whole events)"
        and any(c.value is not None for c, col in zip(cells, shift.columns) if col[0] == "evicted")
    }
    assert evicted.count("<polyline") == len(ratio_policies) + 1 and "oracle</text>" in evicted
    assert f"<title>snapkv 0.75: {hidden['shift']['mean']:.3f}</title>" in evicted
    oracle = next(
        r
        for r in entry.runs
        if not r.results.config.variants
        and r.results.config.suite == "discovery"
        and (r.results.config.readout, r.results.config.serving) == (section.readout, section.serving)
        and r.results.config.n_items
        == max(
            x.results.config.n_items
            for x in entry.runs
            if x.results.config.suite == "discovery"
            and not x.results.config.variants
            and x.results.config.readout == section.readout
            and x.results.config.serving == section.serving
        )
    )
    lines = [json.loads(line) for line in read_log_bytes(oracle.log).decode().splitlines() if line.strip()]
    lines = sorted(lines, key=lambda d: d["item_id"])[: oracle.results.items.n_records]
    mean = sum(d["arms"]["root"]["shift"] for d in lines) / len(lines)
    assert {c.text for c in rows["oracle (whole events)"]} == {f"{mean:+.3f}"}
    leak = dict(next(m for m in section.maps if m.metric.key == "leak").rows)
    assert "oracle (whole events)" not in leak  # a leak needs a policy's choice
    memory = dict(next(m for m in section.maps if m.metric.key == "memory").rows)
    merged = next(
        r
        for r in audits
        if r.results.config.policy == "merging@0.75"
        and r.results.config.source_mode
        and r.results.config.suite == "discovery"
    ).results.metrics["selection"]["root"]
    assert (
        memory["merging"][shift.columns.index(("evicted", "0.75"))].text
        == f"{merged['needed_bytes_mean'] / merged['served_bytes_mean']:.2f}"
    )
    assert memory["snapkv"][0].text == "—"  # a schema 1.9 file: no bytes recorded
    # schema 1.9 files hold no count-matched leak: no such heat map for them
    assert [m.metric.key for m in section.maps] == [
        m.key
        for m in AUDIT_METRICS
        if any(
            m.read(r.results.metrics["selection"]["root"]) is not None
            for r in audits
            if "root" in r.results.metrics["selection"]
        )
    ]


def test_the_policies_page_reads_accuracy_not_a_donor_shift_for_unpaired_items(tmp_path):
    """An arm of unpaired items only (harvest's natural QAs) has no donor to shift, follow or leak:
    those maps read nothing and accuracy is shown; an arm of donor pairs reads as before. The
    oracle row is a protocol run with the audit's RoPE scaling, or none."""
    from matbench.leaderboard.collect import group_models
    from matbench.leaderboard.policies import AUDIT_METRICS, _model_settings, _oracle_run

    every = {
        "n": 4,
        "classes": {},
        "follow_rate": {"rate": 0.5, "ci": [0.1, 0.9], "n": 4},
        "shift": {"mean": 0.0, "ci": [0.0, 0.0]},
        "accuracy": {"mean": 0.625, "ci": [0.25, 1.0], "n": 4},
        "paired": 0,
    }
    block = {
        "n_pairs": 4,
        "members_differ": {"rate": 0.0, "ci": [0.0, 0.5], "n": 4},
        "members_differ_matched": {"rate": 0.0, "ci": [0.0, 0.5], "n": 4},
        "source_kept": {"a": {"rate": 0.25, "ci": [0.0, 0.7], "n": 4}},
        "materialization": {"all": every, "donor_hidden": every},
    }
    reads = {m.key: m.read(block) for m in AUDIT_METRICS}
    assert reads == {
        "shift": None,
        "follow": None,
        "accuracy": (0.625, [0.25, 1.0], 4),
        "margin": None,
        "leak": None,
        "leak_matched": None,
        "memory": None,
        "source_kept": (0.25, [0.0, 0.7], 4),
    }
    margin = {"mean": -0.5, "ci": [-0.75, -0.25], "n": 4}
    with_margin = {**block, "materialization": {"all": {**every, "margin": margin}, "donor_hidden": every}}
    assert next(m for m in AUDIT_METRICS if m.key == "margin").read(with_margin) == (-0.5, [-0.75, -0.25], 4)
    paired = {**block, "materialization": {"all": {**every, "paired": 4}, "donor_hidden": {**every, "paired": 4}}}
    assert next(m for m in AUDIT_METRICS if m.key == "shift").read(paired) == (0.0, [0.0, 0.0], 4)
    assert next(m for m in AUDIT_METRICS if m.key == "leak").read(paired) == (0.0, [0.0, 0.5], 4)
    entry = next(e for e in group_models(find_runs([STORE]), home=tmp_path) if e.name == "smollm2-135m")
    contract = next(
        r
        for r in entry.runs
        if r.results.config.suite == "harvest"
        and r.results.config.serving == "compact"
        and r.results.config.readout == "probe"
        and r.results.config.rope_yarn
        and not r.results.config.policy
    )
    audit = contract.results.config.model_copy(update={"policy": "knorm@0.5", "source_mode": "evicted"})
    assert _model_settings(audit) == ("yarn ×4",)
    assert _oracle_run(entry, "harvest", "probe", "compact", _model_settings(audit)) is contract
    plain = audit.model_copy(update={"rope_yarn": None})  # an audit without YaRN: the protocol run without it
    reference = _oracle_run(entry, "harvest", "probe", "compact", _model_settings(plain))
    assert (
        reference is not None and reference.results.config.variants == [] and reference.results.config.rope_yarn is None
    )
    templated = audit.model_copy(update={"template": "para"})  # no protocol run of harvest with that template
    assert _oracle_run(entry, "harvest", "probe", "compact", _model_settings(templated)) is None


def _run_sha256(path: Path) -> str:
    """A run's sha256 as the leaderboard names it: of its results in the store's serialization."""
    import hashlib

    from matbench.results.store import results_bytes

    return hashlib.sha256(results_bytes(json.loads(path.read_bytes()))).hexdigest()


@pytest.fixture(scope="module")
def committed_site(tmp_path_factory):
    return build_site([STORE], tmp_path_factory.mktemp("committed") / "site")


def test_the_parquet_holds_one_row_per_results_file_with_its_headline_metrics(committed_site):
    import pandas as pd

    from matbench.evaluators import EVALUATORS
    from matbench.protocol.runspec import split_budget

    site = committed_site.out
    frame = pd.read_parquet(site / "leaderboard.parquet")
    runs = fixture_runs()
    assert len(frame) == len(runs) and sorted(frame["sha256"]) == sorted(_run_sha256(p) for p in runs)
    by_sha = {_run_sha256(p): json.loads(p.read_text()) for p in runs}
    index = _parse(site / "index.html").hrefs
    checked = 0
    for row in frame.astype(object).where(frame.notna(), None).to_dict(orient="records"):  # missing -> None
        config = by_sha[row["sha256"]]["config"]
        policy, budget = split_budget(config["policy"]) if config.get("policy") else (None, None)
        assert (row["model"], row["suite"], row["readout"], row["serving"], row["policy"], row["budget"]) == (
            config["model"]["model"],
            config["suite"],
            config["readout"],
            config["serving"],
            policy,
            budget,
        )
        assert row["results"] in index and row["items_log"] in index  # the runs table's evidence links
        assert file_sha256(site / row["results"]) == row["sha256"]
        for metric in (m for m in EVALUATORS.get(config["suite"]).contract if m.overview):
            value = metric.value(by_sha[row["sha256"]]["metrics"])
            if metric.format.value in ("rate_ci", "signed_ci") and value is not None:
                name = f"{config['suite']}.{metric.key}"
                mean, ci = metric.fields
                assert (row[f"{name}.{mean}"], row[f"{name}.{ci}_low"], row[f"{name}.{ci}_high"]) == (
                    value[mean],
                    *value[ci],
                )
                checked += 1
    assert (
        checked
        == sum(
            m.format.value in ("rate_ci", "signed_ci") and m.value(json.loads(p.read_text())["metrics"]) is not None
            for p in runs
            for m in EVALUATORS.get(json.loads(p.read_text())["config"]["suite"]).contract
            if m.overview
        )
        > 0
    )


def test_without_a_parquet_engine_the_build_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    from matbench.leaderboard import downloads

    monkeypatch.setattr(downloads, "parquet_engine", lambda: None)
    copy_run(RUN, tmp_path / "runs" / "one")
    assert main(["leaderboard", "build", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("note: leaderboard.parquet not written: no parquet engine")
    assert not (tmp_path / "site" / "leaderboard.parquet").exists()
    assert "leaderboard.parquet" not in (tmp_path / "site" / "index.html").read_text()
    assert (tmp_path / "site" / "index.runs.csv").is_file()


def test_a_policies_download_has_a_row_per_filled_heat_map_cell(committed_site):
    import pandas as pd

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.cells, self._in = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table" and ("class", "heatmap") in attrs:
                self._in = "table"
            elif tag == "td" and self._in:
                self._in, self._text, self._href = "td", "", None
            elif tag == "a" and self._in == "td":
                self._href = dict(attrs)["href"]

        def handle_data(self, data):
            if self._in == "td":
                self._text += data

        def handle_endtag(self, tag):
            if tag == "td" and self._in == "td":
                self._in = "table"
                if self._text:
                    self.cells.append((self._text, self._href))
            elif tag == "table":
                self._in = None

    pages = sorted(committed_site.out.glob("policies-*.html"))
    assert len(pages) == 2
    for page in pages:
        parser = Cells()
        parser.feed(page.read_text())
        frame = pd.read_csv(page.with_suffix(".heatmaps.csv"), keep_default_na=False, dtype=str)
        assert list(zip(frame["text"], frame["link"])) == parser.cells and parser.cells
        records = json.loads(page.with_suffix(".heatmaps.json").read_text())
        assert [(r["text"], r["link"]) for r in records] == parser.cells
        # the unrounded value rounds to the text the cell shows
        assert all(r["text"] in (f"{r['value']:+.3f}", f"{r['value']:.2f}") for r in records if r["text"] != "—")


def test_evidence_link_points_each_number_at_its_submission_on_the_hub(tmp_path, capsys):
    import pandas as pd

    from matbench.leaderboard.collect import check_run

    trigger = next(p for p in fixture_runs() if p.name == "trigger_probe_compact.json")
    stored = [
        store_submission(check_run(copy_run(p, tmp_path / "in" / p.stem)), tmp_path / "subs") for p in (RUN, trigger)
    ]
    args = [
        "leaderboard",
        "build",
        "--results",
        str(tmp_path / "subs"),
        "--evidence",
        "link",
        "--hub-dataset",
        "org/subs",
        "--hub-revision",
        "v1",
    ]
    assert main([*args, "--out", str(tmp_path / "site")]) == 0
    assert capsys.readouterr().err == ""  # every run has its address: nothing copied, nothing to say
    site = tmp_path / "site"
    assert not (site / "evidence").exists()
    expected = {
        f"https://huggingface.co/datasets/org/subs/resolve/v1/submissions/{s.address}/{f.name}"
        for s in stored
        for f in s.files
    }
    hrefs = {h for page in site.glob("*.html") for h in _parse(page).hrefs if h.startswith("https://")}
    assert hrefs == expected and len(expected) == 4
    frame = pd.read_parquet(site / "leaderboard.parquet")
    assert set(frame["results"]) | set(frame["items_log"]) == expected
    # A run outside submissions/<address>/ has no Hub address: its evidence is copied, said once.
    loose = copy_run(trigger, tmp_path / "loose" / "x", model="loose-model")
    assert main([*args, "--results", str(tmp_path / "loose"), "--out", str(tmp_path / "mixed")]) == 0
    err = capsys.readouterr().err
    assert err == (
        "note: 1 of 3 results files have no Hub address (not stored as submissions/<address>/ by "
        "matbench submit): their evidence is copied under evidence/\n"
    )
    copied = sorted(
        p.relative_to(tmp_path / "mixed") for p in (tmp_path / "mixed" / "evidence").rglob("*") if p.is_file()
    )
    stem = run_address(json.loads(loose.read_bytes()))
    assert [p.name for p in copied] == [f"{stem}.items.jsonl", f"{stem}.json"]
    mixed = {h for page in (tmp_path / "mixed").glob("*.html") for h in _parse(page).hrefs}
    assert expected <= mixed and {str(p) for p in copied} <= mixed


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--evidence", "link"], "--evidence link needs --hub-dataset ORG/NAME"),
        (["--evidence", "link", "--hub-dataset", "../etc"], "--hub-dataset '../etc' is not a Hub repository id"),
        (["--evidence", "link", "--hub-dataset", "a/b/c"], "--hub-dataset 'a/b/c' is not a Hub repository id"),
        (["--hub-dataset", "org/subs"], "--hub-dataset is for --evidence link"),
    ],
)
def test_evidence_flags_are_refused_in_one_line_before_anything_is_written(tmp_path, capsys, flags, message):
    assert main(["leaderboard", "build", "--results", str(STORE), "--out", str(tmp_path / "site"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "site").exists()


def _stronger_copy(run: Path, dest: Path, model: str, n_follow: int, lift: float) -> Path:
    """The run under another name whose root arm follows the donor on its first `n_follow` pairs and
    whose shift is `lift` higher on every pair: a model with a known paired difference. The log is
    edited, then the results file's metrics and log sha256 made to match it (as a real run's do)."""
    from matbench.protocol.records import PairRecord
    from matbench.results.files import file_sha256
    from matbench.results.rescore import recompute_metrics
    from matbench.results.schema import read_results

    target = copy_run(run, dest, model=model)
    payload = json.loads(target.read_text())
    log = dest / payload["items"]["log"]
    lines = []
    for k, line in enumerate(log.read_text().splitlines()):
        record = json.loads(line)
        root = record["arms"]["root"]
        root["shift"] += lift
        if k < n_follow:
            root["class"] = "follow"
        lines.append(json.dumps(record, sort_keys=True))
    log.write_text("\n".join(lines) + "\n")
    records = [PairRecord.from_json(json.loads(line)) for line in lines]
    payload["metrics"] = recompute_metrics(read_results(run), records)
    payload["items"]["sha256"] = file_sha256(log)
    target.write_text(json.dumps(payload, indent=1))
    return target


def test_paired_ranks_separate_a_synthetic_pair_of_models_with_a_known_difference(tmp_path):
    from matbench.leaderboard.collect import find_runs, group_models
    from matbench.leaderboard.ranks import compare, item_outcomes

    runs = tmp_path / "runs"
    copy_run(RUN, runs / "weak", model="weak-model")
    _stronger_copy(RUN, runs / "strong", "strong-model", n_follow=16, lift=0.5)
    site = build_site([runs], tmp_path / "site").out
    cells = re.findall(
        r'<tr class="measured"[^>]*><td[^>]*data-sort="(\d+)"[^>]*>\d+</td><td[^>]*data-sort="(\d+)"'
        r'[^>]*>\d+</td><td data-sort="([^"]+)"',
        (site / "index.html").read_text(),
    )
    assert cells == [("1", "1", "strong-model"), ("2", "2", "weak-model")]
    strong, weak = (item_outcomes(e, site) for e in sorted(group_models(find_runs([runs]), site), key=lambda e: e.name))
    c = compare(strong, weak)
    n_weak_follows = sum(o.follow for o in weak.values())
    assert c.only_b_follows == 0 and c.only_a_follows == 16 - sum(weak[k].follow for k in list(weak)[:16])
    assert c.follow_p < 0.05 and c.shift_difference == pytest.approx(0.5) and n_weak_follows <= 16


def test_the_reported_badge_sits_in_the_model_cell(tmp_path):
    from matbench.leaderboard.tables import overview_header

    site = build_site([STORE], tmp_path / "site").out
    html = (site / "index.html").read_text()
    overview = html[html.index('<table class="sortable" id="overview">') :]
    overview = overview[: overview.index("</table>")]
    rows = re.findall(r'<tr class="reported"[^>]*>(.*?)</tr>', overview)
    assert rows  # the paper's rows
    for row in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert [i for i, c in enumerate(cells) if "badge reported" in c] == [overview_header().index("model")]


def test_with_a_docs_url_every_page_links_the_docs_and_a_suite_page_its_suite(tmp_path, capsys):
    discovery = copy_run(RUN, tmp_path / "runs" / "d")
    args = ["leaderboard", "build", "--results", str(discovery.parent)]
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert not any("docs" in _parse(p).hrefs for p in (tmp_path / "plain").glob("*.html"))
    assert main([*args, "--out", str(tmp_path / "site"), "--docs-url", "https://example.org/matbench"]) == 0
    pages = sorted((tmp_path / "site").glob("*.html"))
    assert pages and all("https://example.org/matbench/" in _parse(p).hrefs for p in pages)
    suite = _parse(tmp_path / "site" / "suite-discovery.html").hrefs
    assert "https://example.org/matbench/suites/discovery/" in suite
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "bad"), "--docs-url", "docs/"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--docs-url 'docs/' is not a web address" in err
    assert not (tmp_path / "bad").exists()


def test_a_model_page_shows_each_suites_verdict_and_warnings_of_the_run_it_cites(committed_site):
    """The lines `matbench eval` ends with, on the model page, for the run the scorecard cites."""
    from html import unescape

    from matbench.leaderboard.collect import group_models
    from matbench.results.verdicts import run_verdict, run_warnings

    entries = group_models(find_runs([STORE]), home=committed_site.out)
    checked = 0
    for entry in entries:
        page = unescape((committed_site.out / f"model-{entry.slug}.html").read_text())
        for values in entry.contract.values():
            cited = next(
                r
                for r in entry.runs
                if r.path.resolve() == (committed_site.out / values["evidence"]["results"]).resolve()
            )
            found = run_verdict(cited.results)
            assert f'<p class="verdict">Verdict: {found.line().removeprefix("verdict: ")}</p>' in page
            assert all(f"<li>{w}</li>" in page for w in run_warnings(cited.results))
            checked += 1
    assert checked == sum(len(e.contract) for e in entries) and checked >= 7
