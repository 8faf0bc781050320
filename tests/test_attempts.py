"""A resumed run's results count every attempt: wall seconds summed, the largest peak, the number of
attempts that logged items (read from the attempts file beside the per-item log)."""

from __future__ import annotations

import json
from pathlib import Path

from matbench.cli import main
from matbench.results.logs import ItemLog

STEM = "discovery_probe_compact"


def _attempts(out: Path) -> dict[str, dict]:
    """Each attempt's last line in the attempts file: its totals."""
    last = {}
    for line in (out / f"{STEM}.attempts.jsonl").read_text().splitlines():
        record = json.loads(line)
        last[record["attempt"]] = record
    return last


def test_an_interrupted_then_resumed_run_counts_both_attempts(tmp_path, tiny_dir, monkeypatch, capsys):
    args = [
        "eval",
        "--model",
        str(tiny_dir),
        "--limit",
        "3",
        "--batch-pairs",
        "1",
        "--no-progress",
        "--output",
        str(tmp_path),
    ]
    append = ItemLog.append
    calls = []

    def interrupted(self, record):  # Ctrl-C while the second item is written
        calls.append(record.item_id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        append(self, record)

    monkeypatch.setattr(ItemLog, "append", interrupted)
    assert main(args) == 130
    monkeypatch.undo()
    assert not (tmp_path / f"{STEM}.json").exists()
    assert len((tmp_path / f"{STEM}.items.jsonl").read_text().splitlines()) == 1
    first = _attempts(tmp_path)
    assert [a["n_scored"] for a in first.values()] == [1]

    assert main(args) == 0
    attempts = _attempts(tmp_path)
    assert len(attempts) == 2 and [a["n_scored"] for a in attempts.values()] == [1, 2]
    assert next(iter(attempts.values())) == next(iter(first.values()))  # the first attempt's totals kept
    results = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert results["resources"]["attempts"] == 2
    assert results["wall_seconds"] == round(sum(a["wall_seconds"] for a in attempts.values()), 2)
    assert results["resources"]["peak_memory_gib"] == max(a["peak_memory_gib"] for a in attempts.values())
    assert results["items"]["n_from_log"] == 1 and results["items"]["n_records"] == 3

    # Re-running the finished command logs nothing, so it is no attempt: the totals stay.
    assert main(args) == 0
    again = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert _attempts(tmp_path) == attempts
    assert (again["wall_seconds"], again["resources"]) == (results["wall_seconds"], results["resources"])

    # --fresh forgets the earlier attempts with the records they made.
    assert main([*args, "--fresh"]) == 0
    fresh = _attempts(tmp_path)
    assert len(fresh) == 1 and set(fresh).isdisjoint(attempts)
    results = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert results["resources"]["attempts"] == 1
    assert results["wall_seconds"] == next(iter(fresh.values()))["wall_seconds"]
    capsys.readouterr()


def test_a_log_from_before_attempts_files_counts_the_run_that_rewrites_it(tmp_path, tiny_dir):
    args = ["eval", "--model", str(tiny_dir), "--limit", "2", "--no-progress", "--output", str(tmp_path)]
    assert main(args) == 0
    (tmp_path / f"{STEM}.attempts.jsonl").unlink()  # as an older matbench left it
    assert main(args) == 0
    (stand_in,) = _attempts(tmp_path).values()
    assert stand_in["n_scored"] == 0
    results = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert results["resources"]["attempts"] == 1 and results["wall_seconds"] == stand_in["wall_seconds"]
    assert main(args) == 0  # recorded once: a further re-run changes nothing
    assert json.loads((tmp_path / f"{STEM}.json").read_text())["wall_seconds"] == stand_in["wall_seconds"]
