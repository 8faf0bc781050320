"""`matbench submit`: check a results file and add it to a results store."""

from __future__ import annotations

import argparse


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        help="check a results file against its log and add it to a results store",
        description="Validate a results file (schema, size, per-item log sha256, metrics recomputed "
        "from the log: the checks of matbench validate) and add it to a results store as "
        "submissions/<address>/, or open a pull request on the store's Hub dataset.",
    )
    p.add_argument("results", help="a results file written by matbench eval (its .items.jsonl beside it)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", metavar="DIR", help="the results store folder to add the run to (e.g. results)")
    where.add_argument("--to-hub", metavar="REPO_ID", help="open a pull request on this Hub dataset repository instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.leaderboard.submit import open_hub_pull_request, store_submission, verify_submission

    verified = verify_submission(Path(args.results))
    if args.to_hub:
        print(open_hub_pull_request(verified, args.to_hub))
        return 0
    stored = store_submission(verified, Path(args.store))
    print(f"stored as {stored.address}: " + ", ".join(str(f) for f in stored.files))
    return 0
