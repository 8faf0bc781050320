"""`matbench bench`: performance benchmarks."""

from __future__ import annotations

import argparse
import json
import shlex

from matbench.errors import MatbenchError
from matbench.models.loading import ATTN_IMPLEMENTATIONS, DTYPES
from matbench.protocol.pairs import SERVING_MODES


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="run a performance benchmark and keep its record",
        description="Performance measurements, kept in benchmarks/ with the command that made them. "
        "discovery: the naive reference path and the engine on the same items in one run; "
        "scaling: one GPU against all (launch with torchrun -m matbench); "
        "long-context: chunked prefill of one long context and sparse native serving; "
        "leaderboard: the site from N synthetic results files; "
        "patch-cost: an appended patch against re-prefilling the log (kv_timing); "
        "policies: each serving policy's scoring against the prefill, its serving against the oracle's; "
        "contract: `eval --suite all` with the defaults, timed per suite with its peak memory.",
        epilog="examples:\n"
        "  matbench bench discovery --random-weights qwen3-8b --n 64 --naive-n 8 --output benchmarks/x.json\n"
        "  torchrun --nproc-per-node 2 -m matbench bench scaling --random-weights qwen3-8b --pairs 256\n"
        "  matbench bench long-context --random-weights gemma3-12b --context 32768 --chunk-size 4096\n"
        "  matbench bench patch-cost --model smollm2-135m --n 5\n"
        "  matbench bench policies --random-weights qwen3-8b --n 32 --device cuda --dtype bfloat16\n"
        "  matbench bench contract --model DIR --locomo locomo10.json --realtalk realtalk/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "name", help="benchmark: contract, discovery, scaling, long-context, leaderboard, patch-cost or policies"
    )
    p.add_argument(
        "--n",
        "--pairs",
        dest="n",
        type=int,
        help="pairs (discovery 64, scaling 128, policies 8, contract: per suite, default all), results files (leaderboard 1000) or timed repetitions "
        "(patch-cost 5); spell it --pairs "
        "under torchrun, whose own parser takes --n for --nnodes",
    )
    p.add_argument("--model", help="a model (alias, Hub id, directory, .gguf)")
    p.add_argument(
        "--random-weights",
        dest="shape",
        metavar="SHAPE",
        help="random weights of a real shape (qwen3-8b, gemma3-12b, qwen3-tiny) instead of --model",
    )
    p.add_argument(
        "--tokenizer", help="with --random-weights: tokenizer directory or offline alias (default: the shape's)"
    )
    p.add_argument("--naive-n", type=int, help="discovery: pairs also run on the naive path (default 8)")
    p.add_argument("--context", type=int, help="long-context: tokens (default 32768)")
    p.add_argument("--chunk-size", type=int, help="long-context: prefill chunk (default 4096)")
    p.add_argument("--requests", type=int, help="long-context: sparse serves of the context (default 8)")
    p.add_argument(
        "--events", type=int, help="patch-cost: steps of the long log (default 384, kv_timing's; the short one has 24)"
    )
    p.add_argument("--device", help="cpu, cuda, cuda:N")
    p.add_argument("--device-map", choices=["auto"], help="discovery: spread the model's layers over every visible GPU")
    p.add_argument("--dtype", help=", ".join(DTYPES))
    p.add_argument("--attn-implementation", choices=ATTN_IMPLEMENTATIONS)
    p.add_argument(
        "--fused-kernels",
        choices=["auto", "on", "off"],
        help="fuse each RMSNorm and MLP activation into one compiled kernel (torch.compile; GPU with Triton): auto (default: on where available), on, off",
    )
    p.add_argument(
        "--decode-graphs",
        choices=["auto", "on", "off", "compare"],
        help="discovery, long-context: greedy "
        "decoding replayed from CUDA graphs (auto: on a single-GPU model), eagerly (off), or both one after "
        "the other in one run (compare)",
    )
    p.add_argument("--batch-pairs", type=int, help="discovery, scaling, policies: pairs per engine batch")
    p.add_argument(
        "--serving",
        choices=["auto", *SERVING_MODES],
        help="how kept rows are served (default auto: native on a model with sliding-window layers, else compact)",
    )
    p.add_argument("--locomo", help="contract: your LoCoMo copy (locomo10.json) for the harvest suite")
    p.add_argument("--realtalk", help="contract: your REALTALK folder for the harvest suite")
    p.add_argument("--results", help="contract: keep the run's results in this folder (default: a temporary one)")
    p.add_argument("--output", help="write the record (JSON) to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import inspect
    from pathlib import Path

    from matbench.bench import BENCHMARKS
    from matbench.bench.records import RECORDED, recorded_now
    from matbench.results.files import write_json

    for name in ("n", "naive_n", "context", "chunk_size", "requests", "batch_pairs", "events"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise MatbenchError(f"--{name.replace('_', '-')} must be at least 1 (got {value})")
    bench = BENCHMARKS.get(args.name)
    accepted = inspect.signature(bench).parameters
    skip = ("argv", "command", "func", "name", "output")
    given = {k: v for k, v in vars(args).items() if v is not None and k not in skip}
    unused = sorted(set(given) - set(accepted))
    if unused:
        flags = ", ".join("--" + ("random-weights" if k == "shape" else k.replace("_", "-")) for k in unused)
        raise MatbenchError(f"benchmark {args.name!r} takes no {flags}")
    record = bench(**given)
    if record is None:  # a rank other than 0 of a torchrun launch
        return 0
    command = "matbench " + shlex.join(args.argv)
    if record.get("processes"):
        command = f"torchrun --nproc-per-node {record['processes']} -m {command}"
    record["command"] = command
    # the device it ran on: a benchmark left to the default device (contract) names it itself
    ran_on = (record.get("machine") or {}).get("device") or getattr(args, "device", None)
    record[RECORDED] = recorded_now(ran_on)
    if args.output:
        write_json(Path(args.output), record)
    print(json.dumps(record, indent=1))
    return 0
