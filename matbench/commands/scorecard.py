"""`matbench scorecard`: the memory-contract scorecard of results directories."""

from __future__ import annotations

import argparse
import json

from matbench.protocol.readouts import READOUTS


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scorecard",
        help="the memory-contract scorecard of one model's results directories",
        description="Read every results file of the directories (validated against the schema) and "
        "write the memory contract with the evidence of each entry, by default to "
        "FIRST_DIR/scorecard.json. Where several directories hold a suite, the run with the most "
        "items counts.",
    )
    p.add_argument("directories", nargs="+", metavar="DIR", help="matbench eval output directories of one model")
    p.add_argument("--readout", default="probe", choices=READOUTS.names(), help="default: probe")
    p.add_argument("--output", help="scorecard file to write (default: FIRST_DIR/scorecard.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.results.files import write_json
    from matbench.results.scorecard import build_scorecard

    target = Path(args.output) if args.output else Path(args.directories[0]) / "scorecard.json"
    card = build_scorecard([Path(d) for d in args.directories], args.readout, home=target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json(target, card)
    print(json.dumps(card["contract"], indent=1))
    return 0
