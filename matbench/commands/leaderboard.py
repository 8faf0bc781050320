"""`matbench leaderboard build`: the static site."""

from __future__ import annotations

import argparse
import sys


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "leaderboard",
        help="build the static leaderboard site",
        description="Build the static leaderboard from validated results files.",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    b = verbs.add_parser(
        "build",
        help="render the site from results directories",
        description="Validate every results file under the directories (schema, per-item log sha256) "
        "and write a static site (index, a page per suite and per model, plots, evidence copies, every table "
        "as CSV and JSON, all runs as leaderboard.parquet) that works from file://.",
    )
    b.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="DIR",
        help="a results store or directory of results files, searched recursively (repeatable)",
    )
    b.add_argument(
        "--hub-store",
        action="append",
        default=[],
        metavar="REPO_ID[@REVISION]",
        help="a results store published as a Hub dataset: its snapshot is downloaded (or taken from the "
        "Hub cache) and read like --results (repeatable)",
    )
    b.add_argument("--out", required=True, help="output folder of the site")
    b.add_argument("--reported", help="paper figures file (default: the committed leaderboard/reported.json)")
    b.add_argument(
        "--evidence",
        choices=["copy", "link"],
        default="copy",
        help="copy (default): each run's results file and log into the site's evidence/ folder; link: "
        "point at the run's files in the submissions dataset on the Hub (--hub-dataset) instead, copying "
        "only the runs not stored as submissions/<address>/ (the build says how many)",
    )
    b.add_argument(
        "--hub-dataset",
        metavar="REPO_ID",
        help="with --evidence link: the Hub dataset the submissions "
        "live in (the one matbench submit --to-hub opens pull requests on)",
    )
    b.add_argument(
        "--hub-revision", default="main", help="with --evidence link: its branch, tag or commit (default main)"
    )
    b.add_argument(
        "--docs-url",
        metavar="URL",
        help="the matbench docs site (e.g. where `mkdocs build` of docs/ is served): every page links "
        "it, each suite page its suite's page",
    )
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.errors import MatbenchError
    from matbench.leaderboard.evidence import EvidencePlan, HubDataset
    from matbench.leaderboard.reported import load_reported
    from matbench.leaderboard.site import build_site, docs_base
    from matbench.results.publish import download_store

    if not args.results and not args.hub_store:
        raise MatbenchError(
            "leaderboard build needs --results DIR (e.g. results, the store of this checkout) or --hub-store ORG/NAME"
        )
    docs_base(args.docs_url)  # checked before any file is read or downloaded
    hub = HubDataset(args.hub_dataset, args.hub_revision) if args.hub_dataset else None
    plan = EvidencePlan(args.evidence, hub)  # checked before any file is read or written
    stores = [HubDataset(*spec.split("@", 1)) for spec in args.hub_store]  # ids checked before any download
    roots = [Path(d) for d in args.results] + [download_store(s.repo_id, s.revision) for s in stores]
    reported = load_reported(Path(args.reported)) if args.reported else None
    summary = build_site(roots, Path(args.out), reported, plan, docs_url=args.docs_url)
    print(
        f"{summary.out / 'index.html'}: {summary.n_models} models, {summary.n_runs} results files, {summary.pages} pages"
    )
    for note in summary.notes:  # what the site lacks and why, one line each
        print(f"note: {note}", file=sys.stderr)
    return 0
