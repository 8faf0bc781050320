"""The README's main command as a new user meets it: a fresh clone, an empty pip and model cache,
`make quickstart` (install, then the run), timed over several clones; written as a record.

    python benchmarks/scripts/fresh_clone_quickstart.py --runs 3 --output benchmarks/cpu-quickstart.json

Each run clones the repository's HEAD into a new temporary folder and times `make
.venv/bin/.quickstart` (the install) and `make quickstart` (the run; the install is done) apart.
Before each run the disk is synced and left idle for 10 s, so that a run does not pay for the
write-back of the clone before it. The record keeps every run, the best and worst total, and the
lines the last run printed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python benchmarks/scripts/fresh_clone_quickstart.py"


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd} ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def one_run(work: Path) -> tuple[dict[str, float], list[str]]:
    clone = work / "matbench"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "MATBENCH_CACHE": str(work / "model-cache"), "PIP_NO_CACHE_DIR": "1"}
    install, _ = timed(["make", "-s", ".venv/bin/.quickstart"], clone, env)
    run, out = timed(["make", "-s", "quickstart"], clone, env)
    printed = [line for line in out.splitlines() if not line.startswith(".venv/bin/matbench")]
    while printed and not printed[0].strip():
        printed.pop(0)
    return {
        "install_seconds": round(install, 1),
        "run_seconds": round(run, 1),
        "total_seconds": round(install + run, 1),
    }, printed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--output", type=Path, required=True)
    args = p.parse_args()
    runs, printed = [], []
    for k in range(args.runs):
        # Each run starts on a quiet disk, as on a fresh machine: the previous clone's gigabyte of
        # installed packages is written back and deleted before the clock starts.
        os.sync()
        time.sleep(10)
        with tempfile.TemporaryDirectory(prefix="quickstart-") as work:
            times, printed = one_run(Path(work))
        runs.append(times)
        print(f"run {k + 1}/{args.runs}: {times}", flush=True)
    totals = [r["total_seconds"] for r in runs]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    record = {
        "command": f"{COMMAND} --runs {args.runs} --output {args.output}",
        "what": "make quickstart on a fresh clone with empty pip and model caches: the install (torch pinned, "
        "matbench, the embedded SmolLM2), then 24 discovery pairs (probe readout, compact serving, float32)",
        "runs": runs,
        "best_seconds": min(totals),
        "worst_seconds": max(totals),
        "printed": printed,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "recorded": {
            "date": datetime.date.today().isoformat(),
            "commit": commit.strip(),
            "hardware": f"{os.cpu_count()}-core {platform.machine()} CPU",
        },
    }
    args.output.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.output}: best {min(totals)} s, worst {max(totals)} s")


if __name__ == "__main__":
    main()
