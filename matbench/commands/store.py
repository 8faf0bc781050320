"""`matbench store`: add finished runs to a results store, publish the store as a Hub dataset."""

from __future__ import annotations

import argparse


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "store",
        help="add runs to a results store; publish it as a Hub dataset",
        description="A results store keeps each run once, in a folder of its own: the results file "
        "(one line of JSON) and its per-item log compressed (.items.jsonl.gz), in the layout of a "
        "Hub dataset.",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    a = verbs.add_parser(
        "add",
        help="verify runs and write each into a run folder of the store",
        description="Verify each results file (the checks of matbench validate) and write it with "
        "its log compressed into INTO/<stem>/; a plain log left in that folder is removed.",
    )
    a.add_argument("results", nargs="+", help="results files or eval output folders")
    a.add_argument(
        "--into",
        required=True,
        metavar="DIR",
        help="the store folder the run folders go in, e.g. results/contract/smollm2-135m",
    )
    a.add_argument("--move", action="store_true", help="remove each source results file and log once stored")
    a.set_defaults(func=run_add)
    u = verbs.add_parser(
        "publish",
        help="upload the store to a Hub dataset repository in one commit",
        description="Upload every file of STORE (hidden ones aside) to the Hub dataset REPO_ID, "
        "created when missing, at the files' paths in the store.",
    )
    u.add_argument("store", metavar="STORE")
    u.add_argument("--repo", required=True, metavar="REPO_ID", help="the Hub dataset, ORG/NAME")
    u.add_argument("--revision", help="branch to commit to (default: the repository's default branch)")
    u.add_argument("--dry-run", action="store_true", help="print the files it would upload and stop")
    u.set_defaults(func=run_publish)


def run_add(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.results.store import results_files, store_run
    from matbench.results.validate import verify_run

    paths = [p for target in args.results for p in results_files(Path(target))]
    runs = [verify_run(p) for p in paths]  # every run checked before any is written
    for run in runs:
        folder = Path(args.into) / run.path.stem
        source_log = run.log
        results, log = store_run(run.path, folder)
        if args.move:
            for source in (run.path, source_log):
                if source.resolve() not in (results.resolve(), log.resolve()) and source.exists():
                    source.unlink()
        print(f"{results} ({run.address})")
    return 0


def run_publish(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.results.publish import publish_store, store_files

    store = Path(args.store)
    if args.dry_run:
        files = store_files(store)
        for path in files:
            print(path.relative_to(store).as_posix())
        print(
            f"{len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MiB: would be uploaded "
            f"to the Hub dataset {args.repo}"
        )
        return 0
    print(publish_store(store, args.repo, revision=args.revision))
    return 0
