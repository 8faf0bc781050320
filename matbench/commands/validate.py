"""`matbench validate`: every run of a results store passes the checks a submission must pass."""

from __future__ import annotations

import argparse


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check every run of a results store (the checks of matbench submit)",
        description="Check every results file under STORE (recursively): the results schema and size "
        "limits, the per-item log the run wrote (sha256), every record keyed by the file's config hash, "
        "and the gate summary and metrics recomputed from the log equal to the file's; and that no "
        "run is stored twice. Prints one line per failure and a summary; exits 1 if any run fails.",
    )
    p.add_argument("store", nargs="+", metavar="STORE", help="a results store or eval output folder (repeatable)")
    p.add_argument(
        "--require-gates",
        action="store_true",
        help="also fail a run that did not run the faithfulness gates (--check) or failed one on any item",
    )
    p.add_argument("--quiet", action="store_true", help="print the failures and the summary only (no progress)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    import time
    from pathlib import Path

    from matbench.results.validate import validate_store

    started = time.perf_counter()
    checked = failed = 0
    seen: dict[str, Path] = {}
    for root in args.store:
        for verdict in validate_store(Path(root), args.require_gates):
            checked += 1
            problem = verdict.error
            if verdict.run is not None:
                first = seen.setdefault(verdict.run.address, verdict.path)
                if first != verdict.path:
                    problem = f"{verdict.path}: the same run as {first} (address {verdict.run.address}); keep one"
            if problem:
                failed += 1
                print(problem, file=sys.stderr)
            elif not args.quiet and checked % 100 == 0:
                print(f"{checked} runs checked ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    seconds = time.perf_counter() - started
    if not checked:
        print(f"no results files under {', '.join(args.store)}", file=sys.stderr)
    print(f"{checked - failed} of {checked} runs valid, {failed} failed, in {seconds:.1f} s")
    return 1 if failed or not checked else 0
