"""`matbench merge`: join the shards of `matbench eval --shard I/N` into one process's results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MERGE_EPILOG = """example (Slurm, four machines, then on the login node):
  #SBATCH --array=0-3
  matbench eval --model M --shard $SLURM_ARRAY_TASK_ID/4 --output out/m
  matbench merge out/m --output out/m

Shards must be of one run: one configuration (the model with its dtype and kernels, the suite and
every eval option but --output; not the device: a CPU shard and a GPU shard merge given the same
--dtype, --attn-implementation, --decode-graphs and --fused-kernels), every slice present and
finished. The results file is the one a process writes from the shards' records; wall_seconds and
resources add up every shard's, and `merged` lists each shard's machine and device. The shard files
are left as they are."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="join the shards of `matbench eval --shard I/N` into one run's results",
        description="Merge the shard logs that `matbench eval --shard I/N` left in one or several "
        "folders (separate machines) into the per-item log and results file one process writes over "
        "the same items. Loads no model.",
        epilog=MERGE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="the shards' --output folders")
    p.add_argument("--output", required=True, type=Path, help="where to write the merged log and results file")
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON line of headline metrics per results file instead of the arms tables (as matbench eval --json)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from matbench.commands.eval import print_arm_tables
    from matbench.results.merge import merge_folders

    payloads = merge_folders(args.folders, args.output)
    if not args.json:  # the end matbench eval has, with the shard count
        shards = sorted({len(p["merged"]["shards"]) for p in payloads})
        runs = f" of {len(payloads)} results files" if len(payloads) > 1 else ""
        print(f"merged {'/'.join(map(str, shards))} shards{runs} into {args.output}")
        print_arm_tables(payloads, args.output)
        return 0
    for payload in payloads:
        c = payload["config"]
        print(
            json.dumps(
                {
                    "readout": c["readout"],
                    "serving": c["serving"],
                    "shards": len(payload["merged"]["shards"]),
                    **payload["metrics"].get("headline", {}),
                }
            )
        )
    return 0
