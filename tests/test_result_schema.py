"""The results file contract: validated on write and read, one line per bad field; resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matbench.errors import MatbenchError
from matbench.results.schema import read_results, schema_markdown, validate_results

DOC = Path(__file__).resolve().parents[1] / "docs" / "results-schema.md"


@pytest.fixture(scope="module")
def run(tiny_dir, tmp_path_factory) -> Path:
    from matbench.cli import main

    out = tmp_path_factory.mktemp("run")
    assert main(["eval", "--model", str(tiny_dir), "--limit", "2", "--no-progress", "--output", str(out)]) == 0
    return out / "discovery_probe_compact.json"


def test_a_written_results_file_validates(run, tmp_path):
    results = read_results(run)
    assert results.config.n_items == 2 and results.config.model.dtype == "float32"
    assert results.config.model.fused_kernels is None  # CPU: never fused, and the key is left out
    assert "fused_kernels" not in json.loads(run.read_text())["config"]["model"]
    payload = json.loads(run.read_text())
    payload["config"]["model"]["fused_kernels"] = True  # what a GPU run with --fused-kernels writes
    (tmp_path / "gpu.json").write_text(json.dumps(payload))
    assert read_results(tmp_path / "gpu.json").config.model.fused_kernels is True
    assert results.items.log == "discovery_probe_compact.items.jsonl" and results.items.n_records == 2
    assert results.environment.datasets and results.config.readout == "probe"


@pytest.mark.parametrize(
    "fields, variants",
    [
        ({}, []),
        ({"policy": "oracle"}, []),
        ({"policy": "recent:64"}, ["policy recent:64"]),
        ({"template": "para", "rope_yarn": 4.0}, ["template para", "yarn ×4"]),
        ({"rope_yarn": 2.5}, ["yarn ×2.5"]),
    ],
)
def test_a_run_names_its_departures_from_the_protocol(run, fields, variants):
    """`variants` keeps a run out of the scorecard and labels it in the reports and on the board."""
    from matbench.results.scorecard import largest_runs

    payload = json.loads(run.read_text())
    payload["config"].update(fields)
    results = validate_results(payload, run)
    assert results.config.variants == variants
    assert bool(largest_runs([(run, results)], "probe")) is (variants == [])


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["config"].__setitem__("n_items", "2"), "field config.n_items: Input should be a valid integer"),
        (lambda d: d["config"]["model"].__setitem__("dtype", "float8"), "field config.model.dtype: Input should be"),
        (lambda d: d.__setitem__("surprise", 1), "field surprise: Extra inputs are not permitted"),
        (lambda d: d["items"].pop("sha256"), "field items.sha256: Field required"),
        (
            lambda d: d["gates"].__setitem__("A", {"checked": -1, "passed": 0, "skipped": 0, "max_abs_diff": None}),
            "field gates.A.checked: Input should be greater than or equal to 0",
        ),
        (lambda d: d.__setitem__("schema_version", "0.1"), "schema_version '0.1' is not one of 1.0, 1.1, 1.2, 1.3"),
        (
            lambda d: d["config"]["model"].__setitem__("fused_kernels", "yes"),
            "field config.model.fused_kernels: Input should be a valid boolean",
        ),
    ],
)
def test_a_bad_field_is_named_in_one_line(run, tmp_path, edit, message):
    payload = json.loads(run.read_text())
    edit(payload)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(payload))
    with pytest.raises(MatbenchError) as info:
        read_results(bad)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unreadable_results_files_are_one_line(tmp_path):
    (tmp_path / "cut.json").write_text('{"schema_version": "1.0", "config": {')
    with pytest.raises(MatbenchError, match="is not valid JSON"):
        read_results(tmp_path / "cut.json")
    with pytest.raises(MatbenchError, match="not found"):
        read_results(tmp_path / "none.json")
    with pytest.raises(MatbenchError, match="must be a JSON object"):
        validate_results([1, 2])


def test_the_schema_document_is_generated_from_the_models():
    assert DOC.read_text() == schema_markdown() + "\n"


def test_a_corrupt_log_is_refused_and_left_untouched(tiny_dir, tmp_path, capsys):
    from matbench.cli import main

    args = ["eval", "--model", str(tiny_dir), "--limit", "3", "--no-progress", "--output", str(tmp_path)]
    assert main(args) == 0
    log = tmp_path / "discovery_probe_compact.items.jsonl"
    lines = log.read_text().splitlines()
    corrupt = "\n".join([lines[0], lines[1][:30] + "#garbage", lines[2]]) + "\n"
    log.write_text(corrupt)
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "line 2 is not valid JSON" in err
    assert log.read_text() == corrupt  # nothing already written is lost


def _eval(tiny_dir, out: Path, n: int):
    script = Path(sys.executable).with_name("matbench")
    cmd = [
        str(script),
        "eval",
        "--model",
        str(tiny_dir),
        "--limit",
        str(n),
        "--readout",
        "trace",
        "--batch-pairs",
        "1",
        "--no-progress",
        "--output",
        str(out),
    ]
    return cmd, {**os.environ, "HF_HUB_OFFLINE": "1"}


def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_results(tiny_dir, tmp_path):
    n = 10
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    cmd, env = _eval(tiny_dir, killed, n)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = killed / "discovery_trace_compact.items.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not log.exists() or log.read_text().count("\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = log.read_bytes()
    done = before.count(b"\n")
    assert 3 <= done < n, "the run finished before it could be killed; make the items slower"
    assert not (killed / "discovery_trace_compact.json").exists()

    from matbench.cli import main

    assert main(cmd[1:]) == 0  # the resume, in this process
    after = log.read_bytes()
    kept = before[: before.rfind(b"\n") + 1]
    assert after.startswith(kept) and after.count(b"\n") == n  # finished items kept byte for byte
    resumed = read_results(killed / "discovery_trace_compact.json")
    assert resumed.items.n_from_log == done and resumed.items.n_records == n
    # the killed attempt's time counts up to its last logged batch (its last line in the attempts file)
    last = {}
    for line in (killed / "discovery_trace_compact.attempts.jsonl").read_text().splitlines():
        last[json.loads(line)["attempt"]] = json.loads(line)
    (killed_attempt, resuming), attempts = last.values(), resumed.resources.attempts
    # the kill may land between an item's log line and its batch's attempt line
    assert done - 1 <= killed_attempt["n_scored"] <= done and resuming["n_scored"] == n - done and attempts == 2
    assert resumed.wall_seconds == round(sum(a["wall_seconds"] for a in last.values()), 2)
    assert resumed.resources.peak_memory_gib == max(a["peak_memory_gib"] for a in last.values())

    cmd_clean, _ = _eval(tiny_dir, clean, n)
    assert main(cmd_clean[1:]) == 0
    uninterrupted = read_results(clean / "discovery_trace_compact.json")
    assert resumed.metrics == uninterrupted.metrics and resumed.gates == uninterrupted.gates
    records = {json.loads(line)["item_id"]: json.loads(line) for line in after.decode().splitlines()}
    reference = {
        json.loads(line)["item_id"]: json.loads(line)
        for line in (clean / "discovery_trace_compact.items.jsonl").read_text().splitlines()
    }
    assert records == reference


def test_the_recorded_revision_says_when_the_tree_differs_from_it(tmp_path):
    import subprocess

    from matbench.results.provenance import git_revision

    assert git_revision(tmp_path) is None  # not a checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    code, result = tmp_path / "matbench" / "f.py", tmp_path / "results" / "r.json"
    for path in (code, result):
        path.parent.mkdir(parents=True)
        path.write_text("1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert git_revision(tmp_path) == head
    result.write_text("2\n")  # data, not code: a rescore rewriting results files one by one
    assert git_revision(tmp_path) == head and git_revision(code.parent) == head
    code.write_text("2\n")  # a copied tree whose .git lags behind
    assert git_revision(tmp_path) == head + "+dirty" and git_revision(code.parent) == head + "+dirty"
