"""`matbench rescore`: recompute metrics of finished runs from their logs."""

from __future__ import annotations

import argparse
import json


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rescore", help="recompute metrics of finished runs from their per-item logs",
                       description="Recompute the metrics of results files with the installed evaluators, from "
                       "the per-item logs the runs wrote (sha256-checked; no model is loaded), and rebuild "
                       "scorecard.json where a directory has one.")
    p.add_argument("paths", nargs="+", help="results files or eval output directories")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.rescore import rescore_file, results_files
    from matbench.results import write_json
    from matbench.scorecard import build_scorecard

    for target in map(Path, args.paths):
        for path in results_files(target):
            payload = rescore_file(path)
            print(f"{path}: {len(payload['metrics'])} metric groups from {payload['items']['n_records']} records")
        if target.is_dir() and (target / "scorecard.json").exists():
            card = json.loads((target / "scorecard.json").read_text())
            write_json(target / "scorecard.json", build_scorecard(target, card["readout"]))
            print(f"{target / 'scorecard.json'}: rebuilt")
    return 0
