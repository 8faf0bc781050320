"""`matbench rescore`: recompute metrics of finished runs from their logs."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rescore",
        help="recompute metrics of finished runs from their per-item logs",
        description="Recompute the metrics of results files with the installed evaluators, from "
        "the per-item logs the runs wrote (sha256-checked; no model is loaded), and rebuild "
        "scorecard.json where a directory has one, from the directories its evidence cites.",
    )
    p.add_argument("paths", nargs="+", help="results files or eval output directories")
    p.set_defaults(func=run)


def card_sources(card_path: Path) -> tuple[str, list[Path]]:
    """The readout of the scorecard at `card_path` and the directories its evidence cites, the
    card's own first (`matbench scorecard A B` writes A/scorecard.json citing B's runs as ../B/...)."""
    from matbench.errors import MatbenchError

    home = card_path.parent
    fix = "rebuild it with matbench scorecard"
    try:
        card: Any = json.loads(card_path.read_text())
        readout = card["readout"]
        cited = [(home / entry["evidence"]["results"]).resolve().parent for entry in card["contract"].values()]
    except json.JSONDecodeError as exc:
        raise MatbenchError(f"{card_path}: not valid JSON ({exc}); {fix}") from exc
    except KeyError as exc:
        raise MatbenchError(f"{card_path}: not a matbench scorecard (no key {exc}); {fix}") from exc
    except (TypeError, AttributeError) as exc:
        raise MatbenchError(f"{card_path}: not a matbench scorecard ({exc}); {fix}") from exc
    # Where directories tie on a suite's item count the first wins, and the card's own comes first.
    directories = sorted(dict.fromkeys(cited), key=lambda d: d != home.resolve())
    return readout, directories or [home]


def run(args: argparse.Namespace) -> int:
    from matbench.results.files import write_json
    from matbench.results.rescore import rescore_file, results_files
    from matbench.results.scorecard import build_scorecard

    for target in map(Path, args.paths):
        for path in results_files(target):
            payload = rescore_file(path)
            print(f"{path}: {len(payload['metrics'])} metric groups from {payload['items']['n_records']} records")
        card_path = target / "scorecard.json"
        if target.is_dir() and card_path.exists():
            readout, directories = card_sources(card_path)
            write_json(card_path, build_scorecard(directories, readout, home=target))
            print(f"{card_path}: rebuilt from {', '.join(os.path.relpath(d, target) for d in directories)}")
    return 0
