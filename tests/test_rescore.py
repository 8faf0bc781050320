"""`matbench rescore`: metrics recomputed from the unchanged per-item log, no model loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.rescore import rescore_file
from matbench.result_schema import SCHEMA_VERSION, read_results

SOURCE = Path(__file__).resolve().parent.parent / "results" / "contract" / "smollm2-135m"
STEM = "update_probe_compact"


@pytest.fixture
def run_dir(tmp_path):
    for name in (f"{STEM}.json", f"{STEM}.items.jsonl", "scorecard.json"):
        shutil.copy(SOURCE / name, tmp_path / name)
    return tmp_path


def test_rescore_restores_metrics_an_older_evaluator_lacked(run_dir, capsys):
    path = run_dir / f"{STEM}.json"
    old = json.loads(path.read_text())
    stripped = {**old, "schema_version": "1.0", "metrics": {k: v for k, v in old["metrics"].items() if k != "despite_patch"}}
    stripped.pop("rescored", None)
    path.write_text(json.dumps(stripped))
    log_before = (run_dir / f"{STEM}.items.jsonl").read_bytes()

    assert main(["rescore", str(run_dir)]) == 0
    new = read_results(path)
    records = sorted((json.loads(x) for x in log_before.decode().splitlines()), key=lambda r: r["item_id"])
    assert new.metrics == json.loads(json.dumps(EVALUATORS.get("update")(suite="update").summarize(records)))
    assert "despite_patch" in new.metrics and new.metrics["despite_patch"] == old["metrics"]["despite_patch"]
    assert new.schema_version == SCHEMA_VERSION and new.rescored.from_schema_version == "1.0"
    assert (new.config, new.items, new.environment) == (read_results(SOURCE / f"{STEM}.json").config,
                                                         read_results(SOURCE / f"{STEM}.json").items,
                                                         read_results(SOURCE / f"{STEM}.json").environment)
    assert (run_dir / f"{STEM}.items.jsonl").read_bytes() == log_before  # the evidence is untouched
    card = json.loads((run_dir / "scorecard.json").read_text())
    assert card["contract"]["update"]["donor_follow_despite_patch"] == new.metrics["headline"]["donor_follow_despite_patch"]
    assert "scorecard.json: rebuilt" in capsys.readouterr().out


def test_rescore_refuses_a_log_changed_since_the_run(run_dir):
    log = run_dir / f"{STEM}.items.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:-1]) + "\n")  # one finished item lost
    before = (run_dir / f"{STEM}.json").read_bytes()
    with pytest.raises(MatbenchError, match="changed since the run wrote it"):
        rescore_file(run_dir / f"{STEM}.json")
    assert (run_dir / f"{STEM}.json").read_bytes() == before


def test_rescore_of_a_missing_path_is_one_line(tmp_path, capsys):
    assert main(["rescore", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not found" in err
