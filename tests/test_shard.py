"""`matbench eval --shard I/N`: one slice of the items, no rendezvous, shard files and no results
file; bad shards refused in one line before anything loads."""

from __future__ import annotations

import json

import pytest

from matbench.cli import main
from matbench.run.distributed import Shard
from tests.test_cli import eval_refused_before_loading

STEM = "discovery_probe_compact"


def _attempts(path) -> dict[str, dict]:
    """Each attempt's last line: its totals."""
    return {json.loads(line)["attempt"]: json.loads(line) for line in path.read_text().splitlines()}


@pytest.mark.parametrize(
    "shard, env, message",
    [
        ("3/2", {}, "--shard 3/2: the index of one of 2 shards is 0 to 1 (0-based"),
        ("2/2", {}, "--shard 2/2: the index of one of 2 shards is 0 to 1"),
        ("x", {}, "--shard takes I/N, this shard's 0-based index and the number of shards (e.g. 0/4); got 'x'"),
        ("1/0", {}, "--shard 1/0: the index of one of 0 shards"),
        ("0/2", {"WORLD_SIZE": "2", "RANK": "0"}, "under torchrun (WORLD_SIZE 2)"),
    ],
)
def test_bad_shards_are_one_line(shard, env, message, tmp_path, monkeypatch, capsys):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    line = eval_refused_before_loading(
        ["--model", "smollm2-135m", "--shard", shard, "--output", str(tmp_path)], monkeypatch, capsys
    )
    assert message in line


def test_a_parsed_shard_runs_as_one_process_with_its_own_rank():
    shard = Shard.parse("1/3")
    assert (shard.rank, shard.world_size, shard.independent, shard.active, shard.is_main) == (1, 3, True, False, False)
    assert shard.config_device("cuda:0") == "cuda:0"  # recorded as one process records it: same config hash
    assert shard.device("cuda:1") == "cuda:1"


def test_a_shard_logs_its_slice_and_writes_no_results(tmp_path, tiny_dir, capsys):
    args = ["eval", "--model", str(tiny_dir), "--limit", "5", "--no-progress"]
    for index in (0, 1):
        assert main([*args, "--shard", f"{index}/2", "--output", str(tmp_path)]) == 0
    assert "shard 1/2 done" in capsys.readouterr().err
    assert not (tmp_path / f"{STEM}.json").exists() and not (tmp_path / f"{STEM}.items.jsonl").exists()
    described = [json.loads((tmp_path / f"{STEM}.shard.rank{i}.jsonl").read_text()) for i in (0, 1)]
    logged = [
        [json.loads(line)["item_id"] for line in (tmp_path / f"{STEM}.items.rank{i}.jsonl").read_text().splitlines()]
        for i in (0, 1)
    ]
    assert [d["items"] for d in described] == logged  # each shard logged exactly its slice, in order
    assert [len(x) for x in logged] == [2, 3]  # Shard.block's sizes of 5 items over 2
    assert (
        sorted(logged[0] + logged[1]) == sorted(described[0]["suite_order"]) and len(described[0]["suite_order"]) == 5
    )
    assert (described[0]["shard"], described[1]["shard"], described[1]["shards"]) == (0, 1, 2)
    assert described[0]["config_hash"] == described[1]["config_hash"]
    for i in (0, 1):
        (attempt,) = _attempts(tmp_path / f"{STEM}.attempts.rank{i}.jsonl").values()
        assert attempt["n_scored"] == len(logged[i]) and attempt["processes"] == 1
    lines = (tmp_path / f"{STEM}.attempts.rank1.jsonl").read_text()
    # A shard resumed alone keeps its slice and redoes nothing.
    assert main([*args, "--shard", "1/2", "--output", str(tmp_path)]) == 0
    assert [
        json.loads(line)["item_id"] for line in (tmp_path / f"{STEM}.items.rank1.jsonl").read_text().splitlines()
    ] == logged[1]
    assert (tmp_path / f"{STEM}.attempts.rank1.jsonl").read_text() == lines  # no item logged: no attempt


def test_a_plain_run_into_a_folder_of_shards_is_refused_unless_fresh(tmp_path, tiny_dir, capsys):
    """Without the guard a plain eval took the --shard logs for an interrupted torchrun's, merged
    and deleted them, and left their descriptions and attempts files behind."""
    args = ["eval", "--model", str(tiny_dir), "--limit", "3", "--no-progress", "--output", str(tmp_path)]
    assert main([*args, "--shard", "0/2"]) == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    assert before == [f"{STEM}.attempts.rank0.jsonl", f"{STEM}.items.rank0.jsonl", f"{STEM}.shard.rank0.jsonl"]
    capsys.readouterr()
    assert main(args) == 2
    assert f"holds 1 --shard run(s) of {STEM}: join them with `matbench merge" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing touched
    assert main([*args, "--fresh"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{STEM}.attempts.jsonl",
        f"{STEM}.items.jsonl",
        f"{STEM}.json",
    ]
