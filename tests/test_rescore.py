"""`matbench rescore`: metrics recomputed from the unchanged per-item log, no model loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.protocol.records import PairRecord
from matbench.results.rescore import rescore_file
from matbench.results.schema import SCHEMA_VERSION, read_results
from tests.store_fixtures import STORE, as_eval_output

STORED = STORE / "contract" / "smollm2-135m"
STEM = "trigger_probe_compact"


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """The SmolLM2 contract runs as an eval output folder (indented results, plain logs)."""
    return as_eval_output(STORED, tmp_path_factory.mktemp("contract"), [STEM, "discovery_probe_compact"])


@pytest.fixture
def run_dir(tmp_path, source):
    for name in (f"{STEM}.json", f"{STEM}.items.jsonl"):
        shutil.copy(source / name, tmp_path / name)
    assert main(["scorecard", str(tmp_path)]) == 0
    return tmp_path


def test_rescore_restores_metrics_an_older_evaluator_lacked(run_dir, source, capsys):
    path = run_dir / f"{STEM}.json"
    old = json.loads(path.read_text())
    stripped = {
        **old,
        "schema_version": "1.0",
        "metrics": {k: v for k, v in old["metrics"].items() if k != "by_construction"},
    }
    stripped.pop("rescored", None)
    path.write_text(json.dumps(stripped))
    log_before = (run_dir / f"{STEM}.items.jsonl").read_bytes()

    assert main(["rescore", str(run_dir)]) == 0
    new = read_results(path)
    records = sorted(
        (PairRecord.from_json(json.loads(x)) for x in log_before.decode().splitlines()), key=lambda r: r.item_id
    )
    assert new.metrics == json.loads(json.dumps(EVALUATORS.get("trigger")(suite="trigger").summarize(records)))
    assert "by_construction" in new.metrics and new.metrics["by_construction"] == old["metrics"]["by_construction"]
    assert new.schema_version == SCHEMA_VERSION and new.rescored.from_schema_version == "1.0"
    original = read_results(source / f"{STEM}.json")
    assert (new.config, new.items, new.environment) == (original.config, original.items, original.environment)
    assert (run_dir / f"{STEM}.items.jsonl").read_bytes() == log_before  # the evidence is untouched
    card = json.loads((run_dir / "scorecard.json").read_text())
    assert card["contract"]["trigger"]["classes"] == new.metrics["headline"]["classes"]
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


def _copy_run(source: Path, stem: str, directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    for name in (f"{stem}.json", f"{stem}.items.jsonl"):
        shutil.copy(source / name, directory / name)


def test_rescore_rebuilds_a_scorecard_from_every_directory_it_cites(tmp_path, source, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    _copy_run(source, STEM, first)
    _copy_run(source, "discovery_probe_compact", second)
    assert main(["scorecard", str(first), str(second)]) == 0
    card = json.loads((first / "scorecard.json").read_text())
    assert card["contract"]["discovery"]["evidence"]["results"] == "../second/discovery_probe_compact.json"

    assert main(["rescore", str(first)]) == 0
    rebuilt = json.loads((first / "scorecard.json").read_text())
    assert rebuilt["suites"] == ["discovery", "trigger"]
    assert rebuilt["contract"]["discovery"]["evidence"] == card["contract"]["discovery"]["evidence"]
    assert rebuilt["contract"]["trigger"]["evidence"]["results"] == f"{STEM}.json"
    assert f"{first / 'scorecard.json'}: rebuilt from ., ../second" in capsys.readouterr().out


def test_rescore_of_a_malformed_scorecard_is_one_line(run_dir, capsys):
    card = json.loads((run_dir / "scorecard.json").read_text())
    del card["readout"]
    (run_dir / "scorecard.json").write_text(json.dumps(card))
    assert main(["rescore", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a matbench scorecard (no key 'readout')" in err
