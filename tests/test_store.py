"""The results store: runs added once with their logs compressed, read by every reader as they
are, and checked by `matbench validate` exactly as `matbench submit` checks a submission."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.results.store import find_log, read_log_bytes, results_bytes, run_address
from tests.store_fixtures import STORE

STEM = "discovery_short_compact"


@pytest.fixture(scope="session")
def eval_output(tmp_path_factory, tiny_dir) -> Path:
    """A finished run of the tiny Llama: 3 discovery pairs under the short readout, gated."""
    out = tmp_path_factory.mktemp("eval") / "run"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--limit",
                "3",
                "--check",
                "--readout",
                "short",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    return out


@pytest.fixture
def store(tmp_path, eval_output, capsys) -> Path:
    """A store holding the run as `matbench store add` writes it: store/tiny/<stem>/."""
    root = tmp_path / "store"
    assert main(["store", "add", str(eval_output), "--into", str(root / "tiny")]) == 0
    capsys.readouterr()
    return root


def _run_folder(store: Path) -> Path:
    return store / "tiny" / STEM


def test_store_add_writes_one_folder_per_run_with_the_log_compressed(store, eval_output):
    folder = _run_folder(store)
    assert sorted(p.name for p in folder.iterdir()) == [f"{STEM}.items.jsonl.gz", f"{STEM}.json"]
    original = json.loads((eval_output / f"{STEM}.json").read_bytes())
    stored = (folder / f"{STEM}.json").read_bytes()
    assert stored == results_bytes(original) and stored.count(b"\n") == 1  # the same payload, one line
    plain = (eval_output / f"{STEM}.items.jsonl").read_bytes()
    assert gzip.decompress((folder / f"{STEM}.items.jsonl.gz").read_bytes()) == plain  # the very bytes
    assert hashlib.sha256(plain).hexdigest() == original["items"]["sha256"]
    assert run_address(original) == run_address(json.loads(stored))


def test_storing_again_gives_the_same_bytes_and_move_removes_the_sources(store, eval_output, tmp_path, capsys):
    folder = _run_folder(store)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert main(["store", "add", str(eval_output / f"{STEM}.json"), "--into", str(store / "tiny")]) == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    moved = tmp_path / "moved"
    shutil.copytree(eval_output, moved)
    assert main(["store", "add", str(moved), "--into", str(moved), "--move"]) == 0  # in place
    assert not (moved / f"{STEM}.json").exists() and not (moved / f"{STEM}.items.jsonl").exists()
    assert {p.name: p.read_bytes() for p in (moved / STEM).iterdir()} == before
    assert str(moved / STEM / f"{STEM}.json") in capsys.readouterr().out


def test_validate_passes_a_store_and_says_how_many_runs_in_how_long(store, capsys):
    assert main(["validate", str(store), "--require-gates"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 of 1 runs valid, 0 failed, in ") and out.endswith(" s\n")


def _edit_results(store: Path, edit) -> None:
    path = _run_folder(store) / f"{STEM}.json"
    payload = json.loads(path.read_bytes())
    edit(payload)
    path.write_bytes(results_bytes(payload))


def _edit_log(store: Path, edit_lines) -> None:
    """Rewrite the compressed log and make the results file's sha256 match it (forged together)."""
    log = _run_folder(store) / f"{STEM}.items.jsonl.gz"
    lines = [json.loads(line) for line in gzip.decompress(log.read_bytes()).decode().splitlines()]
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in edit_lines(lines)).encode()
    log.write_bytes(gzip.compress(data))
    _edit_results(store, lambda d: d["items"].__setitem__("sha256", hashlib.sha256(data).hexdigest()))


def _truncate(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


def _first(lines, edit):
    edit(lines[0])
    return lines


# Every doctored run that `matbench submit` refuses, `matbench validate` refuses with the same line.
DOCTORED = {
    "metrics": (
        lambda s: _edit_results(s, lambda d: d["metrics"]["arms"]["root"]["classes"].__setitem__("follow", 9)),
        "metrics.arms.root.classes.follow does not match",
    ),
    "headline": (
        lambda s: _edit_results(s, lambda d: d["metrics"]["headline"].__setitem__("control_clean", False)),
        "metrics.headline.control_clean does not match",
    ),
    "log path": (
        lambda s: _edit_results(s, lambda d: d["items"].__setitem__("log", "../x.items.jsonl")),
        "field items.log",
    ),
    "log sha256": (
        lambda s: _edit_results(s, lambda d: d["items"].__setitem__("sha256", "0" * 64)),
        "not the one the run wrote",
    ),
    "unknown key": (lambda s: _edit_results(s, lambda d: d.__setitem__("script", "<script>")), "field script"),
    "claimed items": (
        lambda s: _edit_results(
            s, lambda d: (d["items"].__setitem__("n_records", 2), d["config"].__setitem__("n_items", 2))
        ),
        "does not match",
    ),
    "gates": (
        lambda s: _edit_results(s, lambda d: d["gates"]["A"].__setitem__("passed", 2)),
        "gates.A.passed does not match the gate results",
    ),
    "log record": (
        lambda s: _edit_log(s, lambda lines: _first(lines, lambda r: r["arms"]["root"].__setitem__("class", "won"))),
        "class 'won' is not one of",
    ),
    "log key": (
        lambda s: _edit_log(s, lambda lines: _first(lines, lambda r: r.__setitem__("config_hash", "f" * 16))),
        "holds records keyed",
    ),
    "log lines lost": (lambda s: _edit_log(s, lambda lines: lines[:2]), "the log holds 2 usable records"),
    "truncated gzip": (
        lambda s: _truncate(_run_folder(s) / f"{STEM}.items.jsonl.gz", 40),
        "is not a complete gzip file",
    ),
    "log missing": (lambda s: (_run_folder(s) / f"{STEM}.items.jsonl.gz").unlink(), "is missing"),
}


@pytest.mark.parametrize("name", DOCTORED)
def test_validate_and_submit_refuse_each_doctored_run_with_the_same_line(store, tmp_path, capsys, name):
    doctor, message = DOCTORED[name]
    doctor(store)
    assert main(["validate", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("0 of 1 runs valid, 1 failed") and err.count("\n") == 1 and message in err, err
    assert main(["submit", str(_run_folder(store) / f"{STEM}.json"), "--store", str(tmp_path / "to")]) == 2
    submitted = capsys.readouterr().err
    assert submitted == f"matbench: error: {err}" and not (tmp_path / "to").exists()


def test_a_log_that_expands_past_the_limit_is_refused_without_reading_it_whole(store, monkeypatch):
    from matbench.errors import MatbenchError
    from matbench.results import validate

    log = _run_folder(store) / f"{STEM}.items.jsonl.gz"
    size = len(read_log_bytes(log))
    monkeypatch.setattr(validate, "MAX_LOG_BYTES", size - 1)
    with pytest.raises(MatbenchError, match=f"over the {size - 1} byte limit \\(decompressed\\)"):
        validate.check_run(_run_folder(store) / f"{STEM}.json")
    monkeypatch.setattr(validate, "MAX_LOG_BYTES", size)
    assert validate.check_run(_run_folder(store) / f"{STEM}.json").log == log


def test_validate_refuses_a_run_stored_twice(store, capsys):
    shutil.copytree(_run_folder(store), store / "again" / STEM)
    assert main(["validate", str(store), "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("1 of 2 runs valid, 1 failed") and "the same run as" in err and err.count("\n") == 1
    assert main(["validate", str(store / "nothing-here")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_require_gates_refuses_a_run_made_without_them(tmp_path, tiny_dir, capsys):
    out = tmp_path / "ungated"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--limit",
                "2",
                "--readout",
                "short",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0  # a valid run ...
    capsys.readouterr()
    assert main(["validate", str(out), "--require-gates"]) == 1  # ... that did not run the gates
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did not run the faithfulness gates" in err


def test_every_reader_takes_a_stored_run_as_it_is(store, eval_output, tmp_path, capsys):
    """report, rescore, scorecard, leaderboard: the compressed log and one-line results read the same."""
    import subprocess
    import sys

    from matbench.results.report import report
    from matbench.results.schema import read_results
    from matbench.results.scorecard import build_scorecard

    stored = _run_folder(store) / f"{STEM}.json"
    assert [line for line in report([stored]) if not line.startswith("#### ")] == [
        line for line in report([eval_output / f"{STEM}.json"]) if not line.startswith("#### ")
    ]
    card = build_scorecard(store / "tiny", readout="short")  # runs found in their run folders
    assert card["contract"]["discovery"]["evidence"]["items"] == f"{STEM}/{STEM}.items.jsonl.gz"
    done = subprocess.run(
        [sys.executable, "-m", "matbench.results.report", str(stored)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "discovery" in done.stdout
    log_before = (_run_folder(store) / f"{STEM}.items.jsonl.gz").read_bytes()
    assert main(["rescore", str(stored)]) == 0
    assert stored.read_bytes().count(b"\n") == 1  # a stored file stays one line
    assert (_run_folder(store) / f"{STEM}.items.jsonl.gz").read_bytes() == log_before
    assert read_results(stored).metrics == read_results(eval_output / f"{STEM}.json").metrics
    assert main(["leaderboard", "build", "--results", str(store), "--out", str(tmp_path / "site")]) == 0
    assert "1 models, 1 results files" in capsys.readouterr().out
    evidence = sorted(p.name for p in (tmp_path / "site" / "evidence").rglob("*") if p.is_file())
    address = run_address(json.loads(stored.read_bytes()))
    assert evidence == [f"{address}.items.jsonl.gz", f"{address}.json"]


def test_find_log_prefers_the_plain_log_and_falls_back_to_the_compressed_one(tmp_path):
    assert find_log(tmp_path, "a.items.jsonl") is None
    (tmp_path / "a.items.jsonl.gz").write_bytes(gzip.compress(b"x\n"))
    assert find_log(tmp_path, "a.items.jsonl") == tmp_path / "a.items.jsonl.gz"
    (tmp_path / "a.items.jsonl").write_bytes(b"x\n")
    assert find_log(tmp_path, "a.items.jsonl") == tmp_path / "a.items.jsonl"


class _RecordingApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, **kw):
        self.calls.append(("create_repo", kw))

    def create_commit(self, **kw):
        self.calls.append(("create_commit", kw))

        class Info:
            commit_url = "https://huggingface.co/datasets/org/r/commit/abc"

        return Info()


def test_publish_uploads_every_file_of_the_store_at_its_path_in_one_commit(store, capsys):
    from matbench.results.publish import publish_store

    (store / "README.md").write_text("# results\n")
    (store / ".cache").mkdir()
    (store / ".cache" / "x").write_text("not published")
    api = _RecordingApi()
    assert publish_store(store, "org/r", api=api) == "https://huggingface.co/datasets/org/r/commit/abc"
    (kind, repo), (commit, kw) = api.calls
    assert (kind, repo) == ("create_repo", {"repo_id": "org/r", "repo_type": "dataset", "exist_ok": True})
    assert commit == "create_commit" and kw["repo_type"] == "dataset" and kw["repo_id"] == "org/r"
    assert [(op.path_in_repo, Path(op.path_or_fileobj)) for op in kw["operations"]] == [
        ("README.md", store / "README.md"),
        (f"tiny/{STEM}/{STEM}.items.jsonl.gz", _run_folder(store) / f"{STEM}.items.jsonl.gz"),
        (f"tiny/{STEM}/{STEM}.json", _run_folder(store) / f"{STEM}.json"),
    ]
    assert main(["store", "publish", str(store), "--repo", "org/r", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["README.md", f"tiny/{STEM}/{STEM}.items.jsonl.gz", f"tiny/{STEM}/{STEM}.json"]
    assert out[3].startswith("3 files, ") and out[3].endswith("would be uploaded to the Hub dataset org/r")


def test_the_leaderboard_reads_a_store_published_on_the_hub_from_its_snapshot(store, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    asked = []

    def snapshot_download(**kw):
        asked.append(kw)
        return str(store)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    assert main(["leaderboard", "build", "--hub-store", "org/r@v1", "--out", str(tmp_path / "site")]) == 0
    assert asked == [{"repo_id": "org/r", "repo_type": "dataset", "revision": "v1"}]
    assert "1 models, 1 results files" in capsys.readouterr().out
    assert main(["leaderboard", "build", "--hub-store", "not a repo", "--out", str(tmp_path / "x")]) == 2
    assert "is not a Hub repository id" in capsys.readouterr().err and len(asked) == 1
    assert main(["leaderboard", "build", "--out", str(tmp_path / "y")]) == 2
    assert "needs --results DIR" in capsys.readouterr().err


def test_a_folder_lists_its_run_folders_but_not_an_eval_output_folder_below_it(store, eval_output, tmp_path):
    from matbench.results.store import results_files

    assert results_files(store / "tiny") == [_run_folder(store) / f"{STEM}.json"]  # <stem>/<stem>.json
    shutil.copytree(eval_output, tmp_path / "parent" / "run")
    assert results_files(tmp_path / "parent") == []  # run/<stem>.json is another folder's run
    assert results_files(tmp_path / "parent", recursive=True) == [tmp_path / "parent" / "run" / f"{STEM}.json"]


@pytest.mark.parametrize("leak", ["donor_visible", "source_kept"])
def test_a_source_evicted_run_whose_serving_kept_the_source_is_refused(tmp_path, capsys, leak):
    # A forged run made consistent throughout (log rehashed, metrics and gates recomputed from it):
    # only the serving invariant of source eviction can refuse it.
    from matbench.results.payload import gate_summary
    from matbench.results.rescore import read_records, recompute_metrics
    from matbench.results.schema import parse_results
    from tests.store_fixtures import as_eval_output

    stem = "discovery_probe_compact_snapkv-0.5_evicted"
    out = as_eval_output(STORE / "audit" / "smollm2-135m", tmp_path / "run", [stem])
    assert main(["validate", str(out)]) == 0
    log = out / f"{stem}.items.jsonl"
    lines = log.read_text().splitlines()
    record = json.loads(lines[2])
    record["arms"]["root"]["selection"][leak] = True if leak == "donor_visible" else [True, False]
    log.write_text("\n".join([*lines[:2], json.dumps(record), *lines[3:]]) + "\n")
    payload, parsed = parse_results((out / f"{stem}.json").read_bytes(), out / f"{stem}.json")
    payload["items"]["sha256"] = hashlib.sha256(log.read_bytes()).hexdigest()
    records = read_records(log, parsed.items.n_records)
    payload["metrics"], payload["gates"] = recompute_metrics(parsed, records), gate_summary(records)
    (out / f"{stem}.json").write_text(json.dumps(payload))
    capsys.readouterr()
    assert main(["validate", str(out)]) == 1
    printed = capsys.readouterr()
    assert "0 of 1 runs valid, 1 failed" in printed.out and printed.err.count("\n") == 1
    line = printed.err.strip()
    kept = "served arm root a donor-dependent row" if leak == "donor_visible" else "kept a source row for arm root"
    assert f"the run evicted the source event, yet item {record['item_id']} {kept}" in line
