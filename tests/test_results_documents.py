"""The store's documents (READMEs, scorecards, replication reports) are what the code makes of
the runs the store holds, whichever those are. The runs themselves are checked by
`matbench validate results` (its own step of `make test`), not here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matbench.evaluators import EVALUATORS
from matbench.results.report import report_rows
from matbench.results.schema import read_results
from matbench.results.store import results_files

RESULTS = Path(__file__).resolve().parent.parent / "results"  # the store: one folder per run
CONTRACT = results_files(RESULTS / "contract", recursive=True)
# The paper's further experiments and the reworded template: the same checks.
EXPERIMENTS = results_files(RESULTS / "experiments", recursive=True)
# Fresh-seed replications (`matbench replicate`): results/replication/<model>/<suite>/seed-S/<run>/
# beside the replication.json the command wrote from them.
REPLICATIONS = sorted(RESULTS.glob("replication/*/*/replication.json"))
REPLICATION_RUNS = results_files(RESULTS / "replication", recursive=True)
# The eviction audit: results/audit/<model>/<suite>_probe_<serving>_<policy>[_evicted]/
AUDIT = results_files(RESULTS / "audit", recursive=True)
AUDIT_KVPRESS = results_files(RESULTS / "audit-kvpress", recursive=True)


def _close(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-12)
    else:
        assert a == b


def test_results_readme_tables_are_generated_from_the_files():
    """Every suite's table in results/README.md is the report of exactly the committed files."""
    readme = (RESULTS / "README.md").read_text()
    rows = report_rows(CONTRACT)
    assert sum(row.startswith("### ") for row in rows) == len({p.name.split("_")[0] for p in CONTRACT})
    for row in rows:
        assert row in readme
    below = readme[readme.index("\n### ") :]  # the suites' tables close the file
    tables = [line for line in below.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    runs = [line for line in tables if not line.startswith("|---")]
    assert len(runs) == len(CONTRACT)  # no row left over from a file that is gone


def test_experiments_readme_tables_are_generated_from_the_files():
    """results/experiments/README.md closes with the report of exactly the committed experiment files."""
    readme = (RESULTS / "experiments" / "README.md").read_text()
    rows = report_rows(EXPERIMENTS)
    below = readme[readme.index("\n### ") :]
    assert below.strip().splitlines() == [r for r in "\n".join(rows).strip().splitlines()]
    runs = [line for line in below.splitlines() if line.startswith("| ") and not line.startswith(("| model", "|---"))]
    assert len(runs) == len(EXPERIMENTS)
    assert f"contract suites: {len(EXPERIMENTS)} runs, one folder each" in " ".join(readme.split())


SCORECARDS = sorted(RESULTS.glob("contract/*/scorecard.json"))


@pytest.mark.parametrize("card", SCORECARDS, ids=lambda p: p.parent.name)
def test_contract_scorecards_rebuild_from_the_results(card):
    from matbench.results.scorecard import build_scorecard

    directory = card.parent
    committed = json.loads(card.read_text())
    _close(json.loads(json.dumps(build_scorecard(directory))), committed)


def _replication_of(report_path: Path) -> dict:
    """The replication.json `matbench replicate` writes, rebuilt from the seed runs beside it."""
    from matbench.results.replication import replication_report

    by_combo: dict[tuple[str, str], dict[int, dict]] = {}
    for path in sorted(report_path.parent.glob("seed-*/*/*.json")):
        results = read_results(path)
        assert path.parent.parent.name == f"seed-{results.config.seed}"
        by_combo.setdefault((results.config.readout, results.config.serving), {})[results.config.seed] = results.metrics
    suite = results.config.suite
    report = replication_report(suite, report_path.parent.parent.name, EVALUATORS.get(suite).contract, by_combo)
    return json.loads(json.dumps(report))  # as written: the seeds become string keys


@pytest.mark.parametrize("path", REPLICATIONS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_replication_reports_rebuild_from_their_seed_runs(path):
    assert _replication_of(path) == json.loads(path.read_text())


def test_the_replication_readme_shows_each_replication_report():
    from matbench.results.replication import replication_markdown

    assert REPLICATIONS  # a store without them has no replication README to check
    readme = (RESULTS / "replication" / "README.md").read_text()
    for path in REPLICATIONS:
        for report in json.loads(path.read_text(), object_hook=_int_seeds)["by_readout"].values():
            assert replication_markdown(report) in readme


def _int_seeds(obj: dict) -> dict:
    return {int(k) if k.isdigit() else k: v for k, v in obj.items()}


def test_the_store_readme_counts_the_runs_of_each_collection():
    """The README's table of collections states each folder's run count as the store holds it."""
    readme = (RESULTS / "README.md").read_text()
    table = readme[readme.index("| folder | what | runs |") : readme.index("\n\n", readme.index("| folder |"))]
    rows = {
        line.split("|")[1].strip(): line.split("|")[3].strip()
        for line in table.splitlines()
        if line.startswith("| `") and line.count("|") == 4
    }
    counted = {
        "contract": CONTRACT,
        "experiments": EXPERIMENTS,
        "replication": REPLICATION_RUNS,
        "audit": AUDIT,
        "audit-kvpress": AUDIT_KVPRESS,
    }
    assert {k.split("/")[0].strip("`"): v for k, v in rows.items() if v} == {k: str(len(v)) for k, v in counted.items()}


def test_the_replication_readings_count_is_the_reports():
    """The reading's "N of M judged metrics agree" sums the replication reports' agreement."""
    agree = judged = 0
    for path in REPLICATIONS:
        for report in json.loads(path.read_text())["by_readout"].values():
            agree += report["agreement"]["agree"]
            judged += report["agreement"]["judged"]
    readme = " ".join((RESULTS / "replication" / "README.md").read_text().split())
    assert f"So {agree} of {judged} judged metrics agree." in readme
