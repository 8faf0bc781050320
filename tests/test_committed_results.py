"""The committed results are what the code computes from their own per-item logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matbench.evaluators import EVALUATORS
from matbench.results.report import report_rows
from matbench.results.rescore import log_records
from matbench.results.schema import read_results
from matbench.run.evaluate import _gate_summary

RESULTS = Path(__file__).resolve().parent.parent / "results"
CONTRACT = sorted(RESULTS.glob("contract*/*/*_probe_*.json"))
FILES = sorted(RESULTS.glob("*/discovery_*.json"))  # all readouts x serving modes, under results/<model>/


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


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_discovery_runs_read_in_the_current_schema_and_recompute_from_their_logs(path):
    results = read_results(path)
    assert results.items.n_records == results.config.n_items == 64
    records = log_records(path, results)
    evaluator = EVALUATORS.get(results.config.suite)(suite=results.config.suite)
    _close(evaluator.summarize(records), results.metrics)
    assert _gate_summary(records) == {k: v.model_dump() for k, v in results.gates.items()}


def test_the_leaderboard_builds_from_the_whole_results_folder(tmp_path):
    from matbench.leaderboard.site import build_site

    summary = build_site([RESULTS], tmp_path / "site")
    assert summary.n_runs == len(FILES) + len(CONTRACT) and summary.n_models == 2


def test_results_readme_table_is_generated_from_the_files():
    readme = (RESULTS / "README.md").read_text()
    for row in report_rows(FILES)[2:]:  # the table, below its "### discovery" heading
        assert row in readme


def test_the_contract_runs_are_committed_for_both_models():
    gpu = [p for p in CONTRACT if p.parent.parent.name == "contract"]
    assert {p.parent.name for p in gpu} == {"smollm2-135m", "gemma3-270m"}
    from matbench.data_gen import SUITES

    assert len(gpu) == 2 * len(SUITES.names())  # every suite for each of the 2 models


@pytest.mark.parametrize("path", CONTRACT, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem}")
def test_contract_results_validate_and_recompute_from_their_logs(path):
    from matbench.results.rescore import log_records
    from matbench.results.schema import read_results

    results = read_results(path)
    # The evidence is the log the run wrote (sha256 checked); a larger earlier run may have logged more.
    assert results.items.n_records == results.config.n_items
    records = log_records(path, results)
    evaluator = EVALUATORS.get(results.config.suite)(suite=results.config.suite)
    _close(evaluator.summarize(records), results.metrics)


@pytest.mark.parametrize("directory", sorted({p.parent for p in CONTRACT}), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_contract_scorecards_rebuild_from_the_results(directory):
    from matbench.results.scorecard import build_scorecard

    committed = json.loads((directory / "scorecard.json").read_text())
    _close(json.loads(json.dumps(build_scorecard(directory))), committed)


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m"])
def test_each_model_has_one_scorecard_over_its_largest_runs(model):
    from matbench.results.schema import read_results
    from matbench.results.scorecard import build_scorecard

    dirs = [RESULTS / "contract" / model, RESULTS / "contract-cpu" / model]
    card = json.loads((RESULTS / "scorecards" / f"{model}.json").read_text())
    _close(json.loads(json.dumps(build_scorecard(dirs, home=RESULTS / "scorecards"))), card)
    assert set(card["contract"]) == {"discovery", "trigger", "landing", "access", "programming", "harvest", "update"}
    for suite, entry in card["contract"].items():
        runs = [read_results(p) for d in dirs for p in d.glob(f"{suite}_probe_*.json")]
        assert entry["evidence"]["n_items"] == max(r.config.n_items for r in runs)  # the largest run counts
        assert (RESULTS / "scorecards" / entry["evidence"]["results"]).exists()


def test_the_report_names_a_missing_file_in_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "matbench.results.report", str(tmp_path / "nope.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert f"results file {tmp_path / 'nope.json'} not found" in done.stderr
