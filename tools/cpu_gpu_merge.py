"""python tools/cpu_gpu_merge.py ROOT OUT.json: compare a CPU + GPU `matbench merge` with single processes.

ROOT holds, for one command (`matbench eval ... --readout all`): `cpu-shard0` (`--shard 0/2` on the
CPU), `gpu-shard1` (`--shard 1/2` on the GPU), `merged` (`matbench merge` of the two), `resumed` (the
merged log copied into an empty folder and the same `matbench eval` run there on the CPU: one
process writing the results file from those records), `cpu-one` and `gpu-one` (the whole run on
each). Per results file it records what is equal and, where CPU and GPU arithmetic differ, by how
much: per arm the classes, and per item the class, donor shift and probe log-probabilities.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ATTEMPT_FIELDS = ("wall_seconds", "resources", "invocation", "merged", "environment")


def records_only(results: dict) -> dict:
    """A results file without what describes the attempts: those fields, and `items.n_from_log`
    (the resumed process found every record in its log, the shards none)."""
    kept = {k: v for k, v in results.items() if k not in ATTEMPT_FIELDS}
    return {**kept, "items": {k: v for k, v in kept["items"].items() if k != "n_from_log"}}


def records(path: Path) -> dict[str, dict]:
    return {r["item_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def flat(logps) -> list[float]:
    return [x for row in logps for x in row]


def compare_items(a: dict[str, dict], b: dict[str, dict]) -> dict:
    """Items of `a` against the same items of `b`: class flips and the largest differences."""
    flips, shift, logp, same = 0, 0.0, 0.0, 0
    for item_id, ra in a.items():
        rb = b[item_id]
        same += ra["arms"] == rb["arms"]
        for arm, xa in ra["arms"].items():
            xb = rb["arms"][arm]
            flips += xa["class"] != xb["class"]
            shift = max(shift, abs(xa["shift"] - xb["shift"]))
            logp = max(
                logp, max((abs(p - q) for p, q in zip(flat(xa["probe_logp"]), flat(xb["probe_logp"]))), default=0.0)
            )
    return {
        "items": len(a),
        "items_identical": same,
        "arm_class_flips": flips,
        "max_abs_shift_diff": shift,
        "max_abs_probe_logp_diff": logp,
    }


def arm_classes(results: dict) -> dict[str, dict]:
    return {arm: m["classes"] for arm, m in results["metrics"]["arms"].items()}


def main(root: Path, out: Path) -> None:
    report = {}
    for merged_file in sorted((root / "merged").glob("*.json")):
        stem = merged_file.name.removesuffix(".json")
        merged = json.loads(merged_file.read_text())
        resumed = json.loads((root / "resumed" / merged_file.name).read_text())
        cpu, gpu = (json.loads((root / f"{k}-one" / merged_file.name).read_text()) for k in ("cpu", "gpu"))
        log = {k: records(root / k / f"{stem}.items.jsonl") for k in ("merged", "cpu-one", "gpu-one")}
        shard = {
            k: records(next((root / f).glob(f"{stem}.items.rank*.jsonl")))
            for k, f in (("cpu", "cpu-shard0"), ("gpu", "gpu-shard1"))
        }
        resumed_cmp = {
            **resumed,
            "config": {
                **resumed["config"],
                "model": {**resumed["config"]["model"], "device": merged["config"]["model"]["device"]},
            },
        }
        report[stem] = {
            "devices": merged["config"]["model"]["device"],
            "config_hash_equal": len(
                {merged["config_hash"], resumed["config_hash"], cpu["config_hash"], gpu["config_hash"]}
            )
            == 1,
            "merged_log_is_resumed_log": (root / "merged" / f"{stem}.items.jsonl").read_bytes()
            == (root / "resumed" / f"{stem}.items.jsonl").read_bytes(),
            "merged_file_is_one_process_file": records_only(merged) == records_only(resumed_cmp),
            "n_from_log": {"merged": merged["items"]["n_from_log"], "resumed": resumed["items"]["n_from_log"]},
            "arm_classes_equal_cpu_gpu_merged": arm_classes(merged) == arm_classes(cpu) == arm_classes(gpu),
            "arm_classes": arm_classes(merged),
            "root_shift_mean": {
                "merged": merged["metrics"]["arms"]["root"]["donor_shift"]["mean"],
                "cpu": cpu["metrics"]["arms"]["root"]["donor_shift"]["mean"],
                "gpu": gpu["metrics"]["arms"]["root"]["donor_shift"]["mean"],
            },
            "cpu_shard_vs_cpu_one": compare_items(shard["cpu"], log["cpu-one"]),
            "gpu_shard_vs_gpu_one": compare_items(shard["gpu"], log["gpu-one"]),
            "cpu_one_vs_gpu_one": compare_items(log["cpu-one"], log["gpu-one"]),
            "gates": {k: f"{v['passed']}/{v['checked']}" for k, v in merged["gates"].items()},
        }
    out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    for stem, r in report.items():
        c = r["cpu_one_vs_gpu_one"]
        print(
            f"{stem}: one-process file {r['merged_file_is_one_process_file']}, classes equal "
            f"{r['arm_classes_equal_cpu_gpu_merged']}, CPU vs GPU: {c['arm_class_flips']} class flips, "
            f"max |dshift| {c['max_abs_shift_diff']:.2e}, max |dlogp| {c['max_abs_probe_logp_diff']:.2e}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
