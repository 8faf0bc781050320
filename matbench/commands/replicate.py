"""`matbench replicate`: rerun one suite under fresh seeds and report whether its results agree."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from matbench.commands.eval import add_eval_options, eval_config
from matbench.errors import MatbenchError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replicate",
        help="rerun a suite under fresh seeds and report whether each metric's verdict agrees",
        description="The paper's fresh-seed replication (kv_frozen.py): `matbench eval` once per seed, into "
        "OUTPUT/seed-S (each resumable), then per readout and serving each declared metric under every seed, "
        "its verdict (above / below its chance or zero, or undecided, by its interval or sign test) and "
        "whether the seeds agree; written to OUTPUT/replication.json and printed as a table.",
    )
    add_eval_options(p)
    p.add_argument("--seeds", required=True, help="comma list of suite seeds, e.g. 1,2,3 (at least two)")
    p.set_defaults(func=run)


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise MatbenchError(f"--seeds takes a comma list of integers, e.g. 1,2,3 (got {text!r})") from None
    if len(set(seeds)) < 2 or len(set(seeds)) != len(seeds):
        raise MatbenchError(f"--seeds needs at least two different seeds, each once (got {text!r})")
    return seeds


def run(args: argparse.Namespace) -> int:
    from matbench.evaluators import EVALUATORS
    from matbench.results.files import write_json
    from matbench.results.replication import replication_markdown, replication_report
    from matbench.run.evaluate import load_model_for, run_eval

    seeds = parse_seeds(args.seeds)
    if args.suite == "all":
        raise MatbenchError("replicate runs one suite at a time; name it with --suite")
    if args.dataset:
        raise MatbenchError("replicate regenerates the suite under each seed; a --dataset has fixed rows")
    base = eval_config(args)
    out = Path(base.output)
    loaded = load_model_for(base)
    by_combo: dict[tuple[str, str], dict[int, dict]] = {}
    for seed in seeds:
        for payload in run_eval(replace(base, seed=seed, output=str(out / f"seed-{seed}")), loaded=loaded):
            c = payload["config"]
            by_combo.setdefault((c["readout"], c["serving"]), {})[seed] = payload["metrics"]
    written = replication_report(base.suite, base.model, EVALUATORS.get(base.suite).contract, by_combo)
    write_json(out / "replication.json", written)
    report = written["by_readout"]
    for key, rep in report.items():
        print(f"## {base.suite}, {key}\n\n{replication_markdown(rep)}\n")
    print(json.dumps({k: r["agreement"] for k, r in report.items()}))
    return 0
