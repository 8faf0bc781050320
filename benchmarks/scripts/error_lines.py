"""The mistakes a new user makes first, each as the command, the one line matbench prints and the
time it takes to print it (median of three), written as a record; `docs/generate.py` renders the
record as docs/errors.md.

    python benchmarks/scripts/error_lines.py --output benchmarks/cpu-error-lines.json

Run from the repository root with matbench installed (`make install`). Scratch folders (an output
that is a file, an eval folder holding a scorecard, a folder of policy runs only) are made from the
committed results store under a temporary directory, which the record names as `TMP`. Run it on a
machine without a network: the Hub rows measure what a user without one meets.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m"
CONTRACT = ROOT / "results" / "contract" / MODEL
AUDIT_RUN = ROOT / "results" / "audit" / MODEL / "access_probe_compact_snapkv-0.25"

# (what the user did, the command after `matbench`, with TMP for the scratch folder)
MISTAKES = (
    ("--output names an existing file", f"eval --model {MODEL} --output TMP/a-file"),
    ("a misspelt offline alias", "eval --model smolm2-135m --output TMP/out"),
    ("a Hub id not in the cache, no network", "eval --model Qwen/Qwen3-8B --output TMP/out"),
    ("the same under HF_HUB_OFFLINE=1", "HF_HUB_OFFLINE=1 eval --model Qwen/Qwen3-8B --output TMP/out"),
    ("a misspelt suite", f"eval --model {MODEL} --suite discovry --output TMP/out"),
    ("a misspelt readout", f"eval --model {MODEL} --readout prob --output TMP/out"),
    ("a budget after ':' instead of '@'", f"eval --model {MODEL} --policy snapkv:0.5 --output TMP/out"),
    ("a misspelt policy", f"eval --model {MODEL} --policy snapk --output TMP/out"),
    ("--limit 0", f"eval --model {MODEL} --limit 0 --output TMP/out"),
    ("submitting a scorecard", "submit TMP/eval/scorecard.json --store TMP/store"),
    ("a leaderboard of policy runs only", "leaderboard build --results TMP/policies --out TMP/site"),
)
REPORT = ("the report over DIR/*.json, a scorecard among them", "TMP/eval/*.json")


def scratch(tmp: Path) -> None:
    (tmp / "a-file").write_text("")
    (tmp / "eval").mkdir()
    shutil.copy(CONTRACT / "scorecard.json", tmp / "eval" / "scorecard.json")
    run = CONTRACT / "discovery_probe_compact" / "discovery_probe_compact.json"
    shutil.copy(run, tmp / "eval" / run.name)
    (tmp / "policies").mkdir()
    shutil.copytree(AUDIT_RUN, tmp / "policies" / AUDIT_RUN.name)


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    seconds, line, code = [], "", 0
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        seconds.append(time.perf_counter() - started)
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        line, code = (lines[-1] if lines else ""), done.returncode
        if len(lines) > 1 and not all(x.startswith("matbench report: skipped") for x in lines[:-1]):
            raise SystemExit(f"{' '.join(argv)} printed {len(lines)} lines:\n{done.stderr}")
    return round(statistics.median(seconds), 2), code, line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", type=Path, required=True)
    args = p.parse_args()
    matbench = str(Path(sys.executable).parent / "matbench")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="mistakes-") as work:
        tmp = Path(work)
        scratch(tmp)
        for what, command in MISTAKES:
            words = command.replace("TMP", str(tmp)).split()
            settings = {}  # leading NAME=value words: the environment of this command
            while re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                name, _, value = words.pop(0).partition("=")
                settings[name] = value
            seconds, code, line = measure([matbench, *words], {**env, **settings})
            shown = " ".join(
                [*(f"{k}={v}" for k, v in settings.items()), "matbench", *command.split()[len(settings) :]]
            )
            rows.append(
                {
                    "mistake": what,
                    "command": shown,
                    "exit": code,
                    "line": line.replace(str(tmp), "TMP"),
                    "seconds": seconds,
                }
            )
        what, pattern = REPORT
        files = sorted(str(f) for f in (tmp / "eval").glob("*.json"))
        seconds, code, line = measure([sys.executable, "-m", "matbench.results.report", *files], env)
        rows.append(
            {
                "mistake": what,
                "command": f"python -m matbench.results.report {pattern}",
                "exit": code,
                "line": line.replace(str(tmp), "TMP"),
                "seconds": seconds,
            }
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    record = {
        "command": f"python benchmarks/scripts/error_lines.py --output {args.output}",
        "what": "each mistake's command, the last line matbench prints on stderr, its exit status and the "
        "median wall time of three runs, on a machine without a network",
        "mistakes": rows,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "recorded": {
            "date": datetime.date.today().isoformat(),
            "commit": commit.stdout.strip(),
            "hardware": f"{os.cpu_count()}-core {platform.machine()} CPU",
        },
    }
    args.output.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    for row in rows:
        print(f"{row['seconds']:6.2f} s  {row['command']}\n          {row['line']}")


if __name__ == "__main__":
    main()
