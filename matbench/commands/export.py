"""`matbench export --eval-results`: a model repo's Hub score entries from its results files."""

from __future__ import annotations

import argparse

EVAL_RESULTS = ".eval_results/matbench.yaml"


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a model repo's .eval_results/matbench.yaml from results files",
        description="The Hub shows a model's scores on its page and on the benchmark's leaderboard "
        "from YAML files in the model repo's .eval_results/ folder. This writes matbench's entries "
        f"(one per task the suites dataset's eval.yaml registers) to DIR/{EVAL_RESULTS}; upload "
        "that folder to the model repo (e.g. `hf upload ORG/MODEL DIR . --create-pr`).",
    )
    p.add_argument(
        "--eval-results",
        nargs="+",
        required=True,
        metavar="RESULTS",
        help="results files of one model (one protocol run per suite)",
    )
    p.add_argument(
        "--dataset-id", default="matbench/suites", help="the suites dataset on the Hub (default: matbench/suites)"
    )
    p.add_argument("--source-url", help="where the evidence lives (e.g. the leaderboard or the submission's files)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to upload to the model repo")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import yaml

    from matbench.results.eval_results import eval_results_entries

    entries = eval_results_entries([Path(p) for p in args.eval_results], args.dataset_id, args.source_url)
    target = Path(args.out) / EVAL_RESULTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(entries, sort_keys=False))
    print(
        f"{target}: {len(entries)} entries ("
        + ", ".join(f"{e['dataset']['task_id']} {e['value']}" for e in entries)
        + ")"
    )
    return 0
