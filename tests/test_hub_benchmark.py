"""The Hub benchmark files: the suites' eval.yaml and a model repo's .eval_results/matbench.yaml,
checked offline against the documented format (tasks with id, config, split; entries with
dataset.id, dataset.task_id, value, date, source)."""

from __future__ import annotations

import json
from datetime import date

import pytest
import yaml

from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.protocol.hub_tasks import HUB_TASKS
from matbench.results.eval_results import eval_results_entries
from tests.store_fixtures import STORE, stored
from tests.test_cli import one_line_error

CONTRACT = STORE / "contract" / "smollm2-135m"
DISCOVERY = stored("contract", "smollm2-135m", "discovery_probe_compact")


def test_generate_writes_an_eval_yaml_naming_each_task_config_and_split(tmp_path):
    assert main(["generate", "--suite", "discovery", "--n-items", "3", "--out", str(tmp_path / "r")]) == 0
    card = yaml.safe_load((tmp_path / "r" / "eval.yaml").read_text())
    assert set(card) == {"name", "description", "evaluation_framework", "tasks"}
    assert card["name"] == card["evaluation_framework"] == "matbench"
    assert card["tasks"] == [{"id": t.id, "config": "discovery", "split": "test"} for t in HUB_TASKS]
    assert all(t.id in card["description"] for t in HUB_TASKS)
    # every task's config and split is one the dataset card declares
    readme = (tmp_path / "r" / "README.md").read_text()
    front = yaml.safe_load(readme.split("---")[1])
    declared = {(c["config_name"], f["split"]) for c in front["configs"] for f in c["data_files"]}
    assert {(t["config"], t["split"]) for t in card["tasks"]} <= declared


def test_a_repository_without_a_task_suite_has_no_eval_yaml(tmp_path):
    assert main(["generate", "--suite", "trigger", "--n-items", "2", "--out", str(tmp_path / "r")]) == 0
    assert not (tmp_path / "r" / "eval.yaml").exists()


def test_export_writes_one_entry_per_task_with_the_files_numbers(tmp_path, capsys):
    out = tmp_path / "repo"
    assert (
        main(
            [
                "export",
                "--eval-results",
                str(DISCOVERY),
                str(stored("contract", "smollm2-135m", "trigger_probe_compact")),
                "--dataset-id",
                "org/suites",
                "--source-url",
                "https://example.org/lb",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    entries = yaml.safe_load((out / ".eval_results" / "matbench.yaml").read_text())
    metrics = json.loads(DISCOVERY.read_text())["metrics"]["arms"]["root"]
    assert [e["dataset"] for e in entries] == [{"id": "org/suites", "task_id": t.id} for t in HUB_TASKS]
    assert entries[0]["value"] == round(100 * metrics["classes"]["follow"] / metrics["n_pairs"], 4)
    assert entries[1]["value"] == round(metrics["donor_shift"]["mean"], 4)
    assert all(set(e) == {"dataset", "value", "date", "source"} and date.fromisoformat(e["date"]) for e in entries)
    assert entries[0]["source"] == {
        "name": f"matbench probe/compact, {metrics['n_pairs']} pairs (discovery_probe_compact.json)",
        "url": "https://example.org/lb",
    }
    assert capsys.readouterr().out.startswith(f"{out / '.eval_results' / 'matbench.yaml'}: 2 entries")


def test_export_refuses_what_is_not_one_models_benchmark_score(tmp_path, capsys):
    other = next(p for p in (CONTRACT.parent / "gemma3-270m").glob("discovery_probe_*/*.json"))
    with pytest.raises(MatbenchError, match="results of 2 models"):
        eval_results_entries([DISCOVERY, other], "org/suites")
    native = next(p for p in CONTRACT.glob("discovery_*/*.json") if p != DISCOVERY)
    with pytest.raises(MatbenchError, match="2 protocol runs of discovery"):
        eval_results_entries([DISCOVERY, native], "org/suites")
    variant = next((CONTRACT.parent.parent / "audit" / "smollm2-135m").glob("discovery_probe_*/*.json"))
    assert main(["export", "--eval-results", str(variant), "--out", str(tmp_path)]) == 2
    assert "nothing to export" in one_line_error(capsys.readouterr().err)
