"""`matbench submit`: check a results file and add it to the leaderboard."""

from __future__ import annotations

import argparse


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="check a results file against its log and add it to the leaderboard",
                       description="Validate a results file (schema, size, per-item log sha256, metrics recomputed "
                       "from the log) and store it under a content-addressed name, or open a pull request on a "
                       "Hub dataset repository.")
    p.add_argument("results", help="a results file written by matbench eval (its .items.jsonl beside it)")
    p.add_argument("--to-hub", metavar="REPO_ID", help="open a pull request on this Hub dataset repository instead")
    p.add_argument("--submissions", help="submissions folder (default: leaderboard/submissions of this checkout)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.leaderboard.submit import (
        SUBMISSIONS,
        open_hub_pull_request,
        store_submission,
        verify_submission,
    )

    verified = verify_submission(Path(args.results))
    if args.to_hub:
        print(open_hub_pull_request(verified, args.to_hub))
        return 0
    stored = store_submission(verified, Path(args.submissions) if args.submissions else SUBMISSIONS)
    print(f"stored as {stored.address}: " + ", ".join(str(f) for f in stored.files))
    return 0
