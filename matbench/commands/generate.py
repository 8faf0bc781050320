"""`matbench generate`: write suites as a Hugging Face dataset repository."""

from __future__ import annotations

import argparse
import json
import sys

from matbench.commands.common import add_dialog_sources
from matbench.errors import MatbenchError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="write suites as a Hugging Face dataset repository (parquet + dataset card)",
        description="Generate donor-pair suites deterministically from (suite, version, seed, n) and write "
        "a dataset repository that datasets.load_dataset(DIR, SUITE) reads offline; optionally publish it.",
    )
    p.add_argument("--suite", default="all", help="suite name or all (default: all)")
    p.add_argument("--n-items", type=int, help="items per suite (default: each suite's default size)")
    p.add_argument("--seed", type=int, default=0, help="suite seed (default: 0)")
    p.add_argument("--out", required=True, help="output directory (the dataset repository)")
    p.add_argument("--push-to-hub", metavar="REPO_ID", help="upload to this Hub dataset repository")
    p.add_argument("--revision", help="tag the Hub upload with this release name")
    add_dialog_sources(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.data_gen import SUITES
    from matbench.data_gen.publish import push_to_hub, write_repo
    from matbench.results.provenance import git_revision

    if args.n_items is not None and args.n_items < 1:
        raise MatbenchError(f"--n-items must be at least 1 (got {args.n_items})")
    from matbench.data_gen.dialogs import DialogSources

    sources = DialogSources(args.locomo, args.realtalk)
    names = SUITES.names() if args.suite == "all" else [SUITES.get(args.suite).name]
    if args.suite == "all" and not (args.locomo or args.realtalk):
        names.remove("harvest")
        print(
            "note: harvest left out (it is built from your dialog copies: add --locomo PATH --realtalk DIR)",
            file=sys.stderr,
        )
    out = Path(args.out)
    for summary in write_repo(out, names, args.seed, args.n_items, git_revision(), sources):
        print(json.dumps(summary.as_dict()))
    if args.push_to_hub:
        print(push_to_hub(out, args.push_to_hub, args.revision))
    return 0
