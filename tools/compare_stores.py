"""Show that two sets of results folders hold the same runs with the same metrics and logs.

    python tools/compare_stores.py --before OLD_TREE/results OLD_TREE/leaderboard/submissions \
        --after results [--listing runs.tsv]

Every results file under each folder (recursively) is read; a run is identified by its address
(`matbench.results.store.run_address`: the sha256 of its whole results payload, whatever the
file's formatting), so two files of one run match only when every key is equal. For each run of
`--before`, the tool finds it in `--after` and compares the metrics (exact JSON equality) and the
per-item log (sha256 of its decompressed bytes, and the hash the results file records). Prints a
summary; `--listing` writes one line per run. Exits 1 when a run is missing or differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from matbench.results.store import find_log, read_log_bytes, results_files, run_address


def runs_under(roots: list[Path]) -> tuple[dict[str, dict], int]:
    """address -> {path, metrics, log sha256, recorded sha256}, and the number of files read."""
    runs: dict[str, dict] = {}
    files = 0
    for root in roots:
        for path in results_files(root, recursive=True):
            payload = json.loads(path.read_bytes())
            log = find_log(path.parent, payload["items"]["log"])
            files += 1
            runs.setdefault(
                run_address(payload),
                {
                    "path": path,
                    "metrics": payload["metrics"],
                    "recorded": payload["items"]["sha256"],
                    "log": hashlib.sha256(read_log_bytes(log)).hexdigest() if log else None,
                },
            )
    return runs, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", nargs="+", type=Path, required=True)
    parser.add_argument("--after", nargs="+", type=Path, required=True)
    parser.add_argument("--listing", type=Path, help="write one tab-separated line per run here")
    args = parser.parse_args(argv)
    before, n_before = runs_under(args.before)
    after, n_after = runs_under(args.after)
    lines, bad = [], 0
    for address, old in sorted(before.items(), key=lambda kv: str(kv[1]["path"])):
        new = after.get(address)
        if new is None:
            verdict = "missing"
        elif new["metrics"] != old["metrics"]:
            verdict = "metrics differ"
        elif not (old["log"] == new["log"] == old["recorded"]):
            verdict = "log differs"
        else:
            verdict = "equal"
        bad += verdict != "equal"
        lines.append(f"{verdict}\t{address}\t{old['path']}\t{new['path'] if new else '-'}")
    if args.listing:
        args.listing.write_text("verdict\taddress\tbefore\tafter\n" + "\n".join(lines) + "\n")
    print(f"before: {n_before} results files, {len(before)} distinct runs")
    print(f"after:  {n_after} results files, {len(after)} distinct runs")
    print(f"{len(before) - bad} of {len(before)} runs found after with equal metrics and logs; {bad} not")
    for line in (x for x in lines if not x.startswith("equal")):
        print(line)
    extra = sorted(set(after) - set(before))
    print(f"{len(extra)} runs after that were not there before")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
