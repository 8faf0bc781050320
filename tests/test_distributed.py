"""Several processes (torchrun, gloo on the CPU here; nccl on GPUs) give the results of one:
pairs sharded in contiguous blocks, shard logs merged by rank 0 in single-process order, an
interrupted sharded run resumed by any number of processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matbench.errors import MatbenchError
from matbench.protocol.records import ArmRecord, PairRecord
from matbench.results.logs import ItemLog
from matbench.run.distributed import Shard, merge_shard_logs, shard_logs


def test_blocks_cover_every_item_once_in_order():
    items = list(range(11))
    for world in (1, 2, 3, 4, 11, 12):
        blocks = [Shard(r, world, r).block(items) for r in range(world)]
        assert [x for b in blocks for x in b] == items
        assert max(map(len, blocks)) - min(map(len, blocks)) <= 1


def test_shard_from_env(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    shard = Shard.from_env()
    assert (shard.rank, shard.world_size, shard.active, shard.is_main) == (1, 2, True, False)
    assert shard.shard_log(Path("o/s_probe_compact.items.jsonl")).name == "s_probe_compact.items.rank1.jsonl"
    # every rank records the same device, so all ranks share one config hash and their logs merge
    assert shard.config_device("cuda:1") == Shard(0, 2, 0).config_device("cuda:0") == "cuda"
    assert Shard().config_device("cuda:1") == "cuda:1"
    with pytest.raises(MatbenchError, match="own GPU"):
        shard.device("cuda:3")
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(MatbenchError, match="RANK 2 is not within WORLD_SIZE 2"):
        Shard.from_env()


def _line(item_id: str, config_hash: str = "k") -> str:
    arm = ArmRecord(
        answers=("ON", "OFF"),
        outcome="follow",
        probe_answers=("ON", "OFF"),
        probe_logp=((-0.1, -2.0), (-2.0, -0.1)),
        shift=3.8,
    )
    record = PairRecord(
        item_id=item_id,
        variant="",
        values=("ON", "OFF"),
        menu=("ON", "OFF"),
        budget=2,
        length=50,
        n_tokens=(50, 50),
        arms={"root": arm},
        config_hash=config_hash,
    )
    return json.dumps(record.to_json()) + "\n"


def test_merge_puts_records_in_the_given_order_and_drops_a_cut_line(tmp_path):
    path = tmp_path / "s.items.jsonl"
    log = ItemLog(path, "k")
    log.append(PairRecord.from_json(json.loads(_line("b"))))
    (tmp_path / "s.items.rank1.jsonl").write_text(_line("d") + '{"item_id": "e", "conf')
    (tmp_path / "s.items.rank0.jsonl").write_text("".join(_line(i) for i in ("c", "a", "b")))
    assert [p.name for p in shard_logs(path)] == ["s.items.rank0.jsonl", "s.items.rank1.jsonl"]
    assert merge_shard_logs(log, ["a", "b", "c", "d", "e"]) == 3
    assert [json.loads(line)["item_id"] for line in path.read_text().splitlines()] == ["b", "a", "c", "d"]
    assert shard_logs(path) == []
    (tmp_path / "s.items.rank0.jsonl").write_text(_line("x", "other"))
    with pytest.raises(MatbenchError, match="another configuration"):
        merge_shard_logs(ItemLog(path, "k"), ["x"])


def _launch(args, out, nproc: int):
    """`nproc` processes under torchrun, as a user launches them."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", "-m"]
    cmd = launcher + ["matbench", "eval", *args, "--no-progress", "--output", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _eval_here(args, out):
    """One process, in this one: the reference a launch of several is compared with."""
    from matbench.cli import main

    assert main(["eval", *args, "--no-progress", "--output", str(out)]) == 0


def _records(out: Path) -> dict[str, dict]:
    lines = (out / "discovery_probe_compact.items.jsonl").read_text().splitlines()
    return {r["item_id"]: r for r in map(json.loads, lines)}


def test_two_processes_give_the_results_of_one(tmp_path, tiny_dir):
    args = ["--model", str(tiny_dir), "--device", "cpu", "--limit", "5", "--batch-pairs", "2"]
    _eval_here(args, tmp_path / "one")
    _launch(args, tmp_path / "two", nproc=2)
    one, two = (json.loads((tmp_path / d / "discovery_probe_compact.json").read_text()) for d in ("one", "two"))
    assert two["resources"]["processes"] == 2 and one["resources"]["processes"] == 1
    assert two["items"]["n_records"] == 5 and two["items"]["n_from_log"] == 0
    assert not list((tmp_path / "two").glob("*.rank*.jsonl"))  # merged and removed
    a, b = _records(tmp_path / "one"), _records(tmp_path / "two")
    assert list(a) == list(b)  # the order one process writes
    for item_id, rec in a.items():
        for arm, entry in rec["arms"].items():
            other = b[item_id]["arms"][arm]
            assert entry["class"] == other["class"] and entry["probe_answers"] == other["probe_answers"]
            assert entry["shift"] == pytest.approx(other["shift"], abs=1e-4)
    for key, value in one["metrics"]["headline"].items():
        other = two["metrics"]["headline"][key]
        assert other == (pytest.approx(value, abs=1e-4) if isinstance(value, float) else value), key

    # An interrupted sharded run: rank 1 had logged two pairs; one process resumes it.
    lines = (tmp_path / "two" / "discovery_probe_compact.items.jsonl").read_text().splitlines()
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    (resumed / "discovery_probe_compact.items.rank1.jsonl").write_text("\n".join(lines[3:]) + "\n")
    _eval_here(args, resumed)
    again = json.loads((resumed / "discovery_probe_compact.json").read_text())
    assert again["items"]["n_from_log"] == 2 and again["items"]["n_records"] == 5
    assert set(_records(resumed)) == set(a)
    assert [_records(resumed)[i]["arms"]["root"]["class"] for i in a] == [
        r["arms"]["root"]["class"] for r in a.values()
    ]


def test_scaling_bench_under_two_processes(tmp_path):
    out = tmp_path / "scaling.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "matbench",
        "bench",
        "scaling",
        "--random-weights",
        "qwen3-tiny",
        "--pairs",
        "5",
        "--batch-pairs",
        "2",
        "--device",
        "cpu",
        "--output",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["processes"] == 2 and record["all"]["pairs_per_rank"] == [2, 3]
    assert record["class_agreement"]["compared"] == 5 * 4 * 2  # pairs x arms x (probe, short)
    assert record["class_agreement"]["rate"] == 1.0  # float32 on the CPU
    assert record["speedup"] == pytest.approx(record["one"]["seconds"] / record["all"]["seconds"], rel=1e-2)
    assert record["command"].startswith("torchrun --nproc-per-node 2 -m matbench bench scaling")
