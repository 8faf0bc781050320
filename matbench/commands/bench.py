"""`matbench bench`: performance benchmarks."""

from __future__ import annotations

import argparse
import json
import sys

from matbench.errors import MatbenchError


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a performance benchmark and keep its record",
                       description="Performance measurements, kept in benchmarks/ with the command that made them. "
                       "discovery: the naive reference path and the engine on the same items in one run; "
                       "leaderboard: the site from N synthetic results files.")
    p.add_argument("name", help="benchmark: discovery or leaderboard")
    p.add_argument("--n", type=int, help="discovery: pairs (default 64); leaderboard: results files (default 1000)")
    p.add_argument("--model", help="discovery: a model (alias, Hub id, directory, .gguf)")
    p.add_argument("--random-weights", metavar="SHAPE", help="discovery: random weights of a real shape "
                   "(qwen3-8b, gemma3-12b, qwen3-tiny) instead of --model")
    p.add_argument("--tokenizer", help="discovery with --random-weights: tokenizer directory or offline alias "
                   "(default: the shape's)")
    p.add_argument("--naive-n", type=int, default=8, help="discovery: pairs also run on the naive path (default 8)")
    p.add_argument("--device", help="cpu, cuda, cuda:N")
    p.add_argument("--dtype", help="float32, bfloat16, float16")
    p.add_argument("--attn-implementation", choices=["sdpa_grouped", "sdpa", "eager"])
    p.add_argument("--batch-pairs", type=int, help="discovery: pairs per engine batch")
    p.add_argument("--serving", default="auto", choices=["auto", "compact", "native"])
    p.add_argument("--output", help="write the record (JSON) to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.bench import BENCHMARKS
    from matbench.results import write_json

    if args.n is not None and args.n < 1:
        raise MatbenchError(f"--n must be at least 1 (got {args.n})")
    bench = BENCHMARKS.get(args.name)
    if args.name == "leaderboard":
        record = bench(n=args.n or 1000)
    else:
        record = bench(n=args.n or 64, model=args.model, shape=args.random_weights, naive_n=args.naive_n,
                       device=args.device, dtype=args.dtype, batch_pairs=args.batch_pairs, serving=args.serving,
                       attn_implementation=args.attn_implementation, tokenizer=args.tokenizer)
    record["command"] = "matbench " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("matbench") else None
    if args.output:
        write_json(Path(args.output), record)
    print(json.dumps(record, indent=1))
    return 0
