"""The committed results are what the code computes from their own per-item logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matbench.evaluators import EVALUATORS
from matbench.results.report import report_rows
from matbench.results.rescore import log_records
from matbench.results.schema import read_results
from matbench.results.store import results_files

RESULTS = Path(__file__).resolve().parent.parent / "results"  # the store: one folder per run
CONTRACT = results_files(RESULTS / "contract", recursive=True)
# The paper's further experiments and the reworded template: the same checks.
EXPERIMENTS = results_files(RESULTS / "experiments", recursive=True)
MODELS = ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b")  # the three offline models (SPEC 4)
# Fresh-seed replications (`matbench replicate`): results/replication/<model>/<suite>/seed-S/<run>/
# beside the replication.json the command wrote from them.
REPLICATIONS = sorted(RESULTS.glob("replication/*/*/replication.json"))
REPLICATION_RUNS = results_files(RESULTS / "replication", recursive=True)
# The eviction audit: results/audit/<model>/<suite>_probe_<serving>_<policy>[_evicted]/
AUDIT = results_files(RESULTS / "audit", recursive=True)


def _model(path: Path) -> str:
    """The model folder of a run of the store: <collection>/<model>/<run>/<run>.json."""
    return path.parent.parent.name


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


def test_the_contract_runs_are_committed_for_the_three_offline_models():
    from matbench.protocol.readouts import READOUTS

    assert {_model(p) for p in CONTRACT} == set(MODELS)
    for model in MODELS:  # discovery under every readout for each model
        runs = [read_results(p) for p in CONTRACT if _model(p) == model and p.name.startswith("discovery_")]
        assert sorted(r.config.readout for r in runs) == sorted(READOUTS.names())


def test_the_leaderboard_builds_from_the_whole_results_folder(tmp_path):
    from matbench.leaderboard.site import build_site

    summary = build_site([RESULTS], tmp_path / "site")
    assert summary.n_runs == len(CONTRACT) + len(EXPERIMENTS) + len(REPLICATION_RUNS) + len(AUDIT)
    assert summary.n_models == len(MODELS)


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
    assert len(runs) == len(EXPERIMENTS) == 252
    assert f"contract suites: {len(EXPERIMENTS)} runs, one folder each" in " ".join(readme.split())


def test_report_rows_name_each_files_model_readout_serving_and_dtype():
    """The first five cells of a row come from the file's config, in the order of the header."""
    for path in CONTRACT[:3] + CONTRACT[-3:]:
        config = read_results(path).config
        row = next(r for r in report_rows([path]) if r.startswith(f"| {config.model.model} |"))
        assert row.split(" | ")[:5] == [
            f"| {config.model.model}",
            config.readout,
            config.serving,
            config.model.dtype,
            str(config.n_items),
        ]


@pytest.mark.parametrize("model", MODELS)
def test_contract_scorecards_rebuild_from_the_results(model):
    from matbench.results.scorecard import build_scorecard

    directory = RESULTS / "contract" / model
    committed = json.loads((directory / "scorecard.json").read_text())
    _close(json.loads(json.dumps(build_scorecard(directory))), committed)


def test_the_report_names_a_missing_file_in_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "matbench.results.report", str(tmp_path / "nope.json")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert f"results file {tmp_path / 'nope.json'} not found" in done.stderr


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
    stored = json.loads(path.read_text())
    assert _replication_of(path) == stored
    for report in stored["by_readout"].values():
        assert report["seeds"] == [1, 2, 3]  # fresh seeds: the committed runs are seed 0


def test_the_replications_are_committed_for_the_three_offline_models_and_their_readme_shows_them():
    from matbench.results.replication import replication_markdown

    assert sorted(p.parent.parent.name for p in REPLICATIONS) == sorted(MODELS)
    readme = (RESULTS / "replication" / "README.md").read_text()
    for path in REPLICATIONS:
        for report in json.loads(path.read_text(), object_hook=_int_seeds)["by_readout"].values():
            assert replication_markdown(report) in readme


def _int_seeds(obj: dict) -> dict:
    return {int(k) if k.isdigit() else k: v for k, v in obj.items()}


def test_the_eviction_audit_covers_its_grid_and_evicted_runs_never_show_the_donor():
    """3 models x (discovery, access) x 10 policies (8, the merging positive control and SnapKV's
    question-aware mode) x 4 budgets x 2 source modes, 32 pairs each, --check on every pair; and
    harvest x 4 policies (streaming_llm, knorm, snapkv, snapkv:question=True) x 4 budgets x 2 source
    modes, 32 pairs each, the first 8 gated, for the three models. In source-evicted files no governed arm was served a donor row; where a file
    holds the count-matched leak (schema 1.10), it never exceeds the leak."""
    configs = [read_results(p) for p in AUDIT]
    cells = {(r.config.model.model, r.config.suite, r.config.policy, r.config.source_mode) for r in configs}
    assert len(AUDIT) == len(cells) == 480 + 96
    pairs = {c for c in cells if c[1] != "harvest"}
    assert (
        len(pairs) == 480 and {c[0] for c in pairs} == set(MODELS) and {c[1] for c in pairs} == {"discovery", "access"}
    )
    policies = {c[2].split("@")[0] for c in pairs}
    assert policies == {
        "random",
        "streaming_llm",
        "knorm",
        "snapkv",
        "tova",
        "h2o",
        "pyramidkv",
        "adakv",
        "merging",
        "snapkv:question=True",
    }
    harvest = cells - pairs
    assert {c[0] for c in harvest} == set(MODELS) and len(harvest) == 3 * 4 * 4 * 2
    assert {c[2].split("@")[0] for c in harvest} == {"streaming_llm", "knorm", "snapkv", "snapkv:question=True"}
    newer = [r for r in configs if r.schema_version == "1.10"]
    assert {(r.config.suite == "harvest", r.config.policy.split("@")[0]) for r in newer} == {
        (False, "merging"),
        (False, "snapkv:question=True"),
        *((True, c[2].split("@")[0]) for c in harvest),
    }
    assert len(newer) == 96 + 96
    assert {r.config.check_pairs for r in configs} == {None, 8}
    assert {r.config.suite for r in configs if r.config.check_pairs == 8} == {"harvest"}
    assert {c[2].split("@")[1] for c in cells} == {"0.25", "0.5", "0.75", "0.875"}
    for path, results in zip(AUDIT, configs):
        assert results.items.n_records == 32 and results.config.check and results.config.readout == "probe"
        records = log_records(path, results)
        for arm, block in results.metrics["selection"].items():  # access's arms differ by variant
            assert block["n_pairs"] == sum(arm in r.arms and r.arms[arm].selection is not None for r in records) > 0
            if results.config.source_mode == "evicted":
                assert block["donor_visible"]["rate"] == 0.0, (path.name, arm)
                assert block["source_kept"]["a"]["rate"] == block["source_kept"]["b"]["rate"] == 0.0
            if "members_differ_matched" in block:
                assert block["members_differ_matched"]["rate"] <= block["members_differ"]["rate"]


def test_the_store_readme_counts_the_runs_of_each_collection():
    """The README's table of collections states each folder's run count as the store holds it."""
    readme = (RESULTS / "README.md").read_text()
    table = readme[readme.index("| folder | what | runs |") : readme.index("\n\n", readme.index("| folder |"))]
    rows = {
        line.split("|")[1].strip(): line.split("|")[3].strip()
        for line in table.splitlines()
        if line.startswith("| `") and line.count("|") == 4
    }
    counted = {"contract": CONTRACT, "experiments": EXPERIMENTS, "replication": REPLICATION_RUNS, "audit": AUDIT}
    assert {k.split("/")[0].strip("`"): v for k, v in rows.items() if v} == {k: str(len(v)) for k, v in counted.items()}
