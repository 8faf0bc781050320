"""`matbench eval`: run a suite (or the whole contract) through a model."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from matbench.commands.common import add_dialog_sources, add_model, add_suite_rows, choices, suite_seed
from matbench.errors import MatbenchError
from matbench.models.loading import ATTN_IMPLEMENTATIONS, DTYPES
from matbench.protocol.pairs import SERVING_MODES
from matbench.protocol.readouts import READOUTS

EVAL_EPILOG = """examples:
  matbench eval --model smollm2-135m --output out/smollm2
  matbench eval --model gemma3-270m --readout all --serving compact,native --limit 16 --output out/g
  matbench eval --model Qwen/Qwen3-8B --revision <sha> --device cuda --dtype bfloat16 --check --output out/q

outputs, one pair per readout x serving combination (all share one prefill per donor pair):
OUTPUT/<suite>_<readout>_<serving>.json (config, environment, metrics) and
OUTPUT/<suite>_<readout>_<serving>.items.jsonl (one line per donor pair, written as it finishes;
re-running the same command resumes and skips finished pairs). It ends with a table of every arm
per file (classes, p, accuracy and donor shift with 95% CIs) and the files' paths; --json prints
one JSON line of headline metrics per file instead.

several GPUs: torchrun --nproc-per-node 2 -m matbench eval ... (or accelerate launch -m matbench
eval ...) shards the pairs over the processes, one GPU each; rank 0 merges the per-rank logs and
writes the same results a single process would.

several machines (Slurm array jobs, no rendezvous): --shard $SLURM_ARRAY_TASK_ID/4 under
#SBATCH --array=0-3 runs slice I (0-based) of 4 of the items into OUTPUT's shard files and writes
no results file; then matbench merge DIR... --output DIR writes the results of one process."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="run a donor-pair suite through a model and score it",
        description="Run a suite's donor pairs through one global prefill and sparse serving, and "
        "report outcome classes (follow/anti/const/other), the exact sign test, prevalence, "
        "comprehension and the donor margin shift.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_eval_options(p)
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only slice I of N of the suite's items (contiguous blocks; I "
        "is 0-based, as SLURM_ARRAY_TASK_ID under --array=0-N-1), with no rendezvous: each shard writes "
        "OUTPUT/<suite>_<readout>_<serving>.items.rankI.jsonl and its description, no results file; "
        "`matbench merge` joins the shards (not under torchrun)",
    )
    p.set_defaults(func=run)


def add_eval_options(p: argparse.ArgumentParser) -> None:
    """Every option of `matbench eval` (also `matbench replicate`'s)."""
    add_model(p)
    p.add_argument(
        "--suite",
        default="discovery",
        help="suite name (a registered suite: built in, or a plugin's; "
        "see MATBENCH_PLUGINS), or all for the whole memory contract and its scorecard (default: discovery)",
    )
    add_suite_rows(p)
    p.add_argument(
        "--readout",
        type=choices("readout", tuple(READOUTS.names())),
        help=f"{', '.join(READOUTS.names())}, a comma list, or all (default: probe, or the suite's own "
        "where it is read from free text; the donor shift always comes from the probe). Several share "
        "one prefill per pair.",
    )
    p.add_argument(
        "--serving",
        default="auto",
        type=choices("serving", ("auto", *SERVING_MODES)),
        help="compact, native, compact,native, or auto (default: native for models with "
        "sliding-window layers, else compact)",
    )
    p.add_argument(
        "--policy",
        action="append",
        metavar="NAME[:ARGS][@BUDGET]",
        help="serving policy that chooses the kept rows of the arms that measure materialization: "
        "oracle (default: the suite's declared events, the paper's protocol), recent:N, a scoring "
        "policy such as snapkv or knorm (`matbench policies` lists them), or "
        "'kvpress:SnapKVPress(window_size=32)'; repeat for several, all served from one prefill per "
        "pair; controls and comprehension arms keep their declared rows",
    )
    p.add_argument(
        "--budget",
        type=lambda v: tuple(v.split(",")),
        default=(),
        metavar="B[,B...]",
        help="budgets of the scoring policies named without @BUDGET: a fraction removed (0.5 keeps "
        "half, kvpress's compression_ratio) or a token count (256); one run per budget",
    )
    p.add_argument(
        "--source-mode",
        default=("natural",),
        type=choices("source mode", ("natural", "evicted")),
        help="under a policy: natural (it may keep the source's rows; results split by whether it "
        "did), evicted (the source's rows are never kept), or natural,evicted",
    )
    p.add_argument(
        "--kept-from",
        default=("a",),
        type=choices("kept-from member", ("a", "b")),
        help="under a policy: whose picks both donor members are served, a (default), b, or a,b",
    )
    p.add_argument("--device", help="cpu, cuda, cuda:N (default: cuda if available)")
    p.add_argument(
        "--device-map",
        choices=["auto"],
        help="spread a model too large for one GPU over every visible GPU (accelerate); one process",
    )
    p.add_argument(
        "--dtype",
        help=f"{', '.join(DTYPES)} (default: float32 on CPU, bfloat16 on GPU; float64 tells "
        "a gate's rounding from a fault)",
    )
    p.add_argument(
        "--attn-implementation",
        choices=ATTN_IMPLEMENTATIONS,
        help="attention kernel (default: sdpa_grouped = SDPA without per-head K/V copies, eager for soft-capped logits; see docs/running.md)",
    )
    p.add_argument(
        "--decode-graphs",
        default="auto",
        choices=["auto", "on", "off"],
        help="replay each greedy decoding "
        "step (short, trace readouts) from a CUDA graph instead of launching its kernels from Python: auto "
        "(default: on for a model on one CUDA device), on, off (the eager loop, the CPU's)",
    )
    p.add_argument(
        "--fused-kernels",
        default="auto",
        choices=["auto", "on", "off"],
        help="fuse each RMSNorm and MLP activation into one compiled kernel (torch.compile; GPU with Triton): auto (default: on where available), on, off",
    )
    p.add_argument(
        "--judge",
        metavar="MODEL",
        help="grade each free answer against the gold with this local causal "
        "LM (alias, Hub id, directory, .gguf; kv_harvest3's judge prompt; harvest_freeform); results *_judge-MODEL",
    )
    p.add_argument(
        "--rope-yarn",
        type=float,
        metavar="FACTOR",
        help="stretch the model's RoPE by YaRN with this "
        "factor (> 1; the paper's position-stress variant, llm_hf SPRAG_ROPE_FACTOR); results *_yarnF",
    )
    p.add_argument("--chunk-size", type=int, help="prefill in chunks of this many tokens (long contexts)")
    p.add_argument(
        "--batch-pairs",
        type=int,
        help="donor pairs served and decoded together (default: as many as fit in half the free GPU memory, up to 64; 2 on CPU)",
    )
    p.add_argument(
        "--memory-fraction",
        type=float,
        help="cap this process at this share of its GPU's memory (0-1], so several runs can share one GPU; the batch is sized within it",
    )
    p.add_argument("--check", action="store_true", help="run the faithfulness gates on every pair; stop on failure")
    p.add_argument(
        "--check-pairs",
        type=int,
        metavar="N",
        help="run the gates on the suite's first N pairs only "
        "(implies --check; long-context audits whose every setting's gates cost more than the run)",
    )
    p.add_argument("--trust-remote-code", action="store_true", help="allow the checkpoint's own Python code")
    p.add_argument("--fresh", action="store_true", help="discard an earlier per-item log in OUTPUT")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--json",
        action="store_true",
        help="end with one JSON line of headline metrics per results file "
        "(the scorecard's contract with --suite all) instead of the arms tables",
    )
    add_dialog_sources(p)
    p.add_argument("--output", required=True, help="output directory")


def eval_config(args: argparse.Namespace):
    """The EvalConfig the parsed eval options describe."""
    from matbench.run.config import EvalConfig

    return EvalConfig(
        model=args.model,
        suite=args.suite,
        output=args.output,
        dataset=args.dataset,
        dataset_revision=args.dataset_revision,
        limit=args.limit,
        seed=suite_seed(args),
        readouts=(args.readout if isinstance(args.readout, tuple) else (args.readout,))
        if args.readout
        else default_readouts(args.suite),
        servings=args.serving if isinstance(args.serving, tuple) else (args.serving,),
        revision=args.revision,
        device=args.device,
        dtype=args.dtype,
        device_map=args.device_map,
        attn_implementation=args.attn_implementation,
        fused_kernels=args.fused_kernels,
        decode_graphs=args.decode_graphs,
        chunk_size=args.chunk_size,
        batch_pairs=args.batch_pairs,
        memory_fraction=args.memory_fraction,
        trust_remote_code=args.trust_remote_code,
        check=args.check or args.check_pairs is not None,
        check_pairs=args.check_pairs,
        fresh=args.fresh,
        locomo=args.locomo,
        realtalk=args.realtalk,
        progress=not args.no_progress,
        policies=tuple(args.policy or ("oracle",)),
        budgets=args.budget,
        source_modes=_tuple(args.source_mode),
        kept_from=_tuple(args.kept_from),
        template=args.template,
        rope_yarn=args.rope_yarn,
        judge=args.judge,
    )


def _tuple(value) -> tuple[str, ...]:
    return value if isinstance(value, tuple) else (value,)


def default_readouts(suite: str) -> tuple[str, ...]:
    """Without --readout: the probe, or the first readout a suite read from free text names."""
    from matbench.data_gen import SUITES

    own = SUITES.get(suite).readouts if suite in SUITES.names() else ()
    return own[:1] or ("probe",)


def print_arm_tables(payloads: list[dict], output: Path) -> None:
    """What lm-evaluation-harness ends a run with: per results file written, a table of every arm
    and the paths of the files."""
    from matbench.results.arms import run_summary, wrapped
    from matbench.results.schema import validate_results
    from matbench.results.verdicts import LEGEND

    for payload in payloads:
        print("\n" + "\n".join(run_summary(validate_results(payload), output)))
    if payloads:
        print("\n" + "\n".join(wrapped(LEGEND)))


def full_run_hint(cfg: Any, argv: list[str], payloads: list[dict]) -> str | None:
    """For a run of fewer pairs than its suite's default size: what it was, how long the whole
    suite would take at this run's pace (`AttemptLog.pace`), and the command that runs it."""
    from matbench.data_gen import SUITES
    from matbench.results.attempts import AttemptLog, attempts_path

    if not payloads or cfg.dataset or cfg.limit is None or cfg.suite not in SUITES.names():
        return None
    full = SUITES.get(cfg.suite).default_n  # None: every item of the user's dialogs
    if full is None or cfg.limit >= full:
        return None
    payload = payloads[0]
    log = Path(cfg.output) / payload["items"]["log"]
    pace = AttemptLog(attempts_path(log), payload["config_hash"]).pace()
    # quoted for a shell: policy specs such as kvpress:AdaKVPress(press=KnormPress()) hold parentheses
    command = shlex.join(["matbench", *_without_limit(argv, f"{cfg.output.rstrip('/')}-{full}")])
    text = f"this was {cfg.limit} of {cfg.suite}'s {full} pairs"
    if pace is None:
        return f"{text}; the whole suite:\n  {command}"
    setup, per_item = pace
    seconds = setup + per_item * full
    took = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
    return f"{text}; the whole suite takes about {took} here ({per_item:.1f} s a pair):\n  {command}"


def _without_limit(argv: list[str], output: str) -> list[str]:
    """`argv` without --limit N, its --output replaced (a new per-item log: the limit is part of
    a run's identity)."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("--limit", "--output"):
            skip = True
            if arg == "--output":
                out += ["--output", output]
            continue
        if arg.startswith("--limit="):
            continue
        if arg.startswith("--output="):
            out.append(f"--output={output}")
            continue
        out.append(arg)
    return out


def run(args: argparse.Namespace) -> int:
    from matbench.run.preflight import preflight

    cfg = eval_config(args)
    preflight(cfg)  # before torch imports: a mistyped option costs well under a second

    from matbench.run.distributed import Shard
    from matbench.run.evaluate import run_eval

    shard = Shard.from_env()  # several processes under torchrun / accelerate launch
    if args.shard is not None:
        if shard.world_size > 1:
            raise MatbenchError(
                f"--shard splits a run over independent processes; under torchrun (WORLD_SIZE "
                f"{shard.world_size}) the processes already share the items: drop one of them"
            )
        shard = Shard.parse(args.shard)
    shard.start()
    try:
        if args.suite == "all":
            from matbench.run.evaluate import run_contract

            payloads, card = run_contract(cfg, shard)
            if shard.is_main and card:
                if args.json:
                    print(json.dumps(card["contract"], indent=1))
                else:
                    print_arm_tables(payloads, Path(cfg.output))
                    print(f"scorecard: {Path(cfg.output) / 'scorecard.json'}")
            return 0
        payloads = run_eval(cfg, shard=shard)
        if args.json:
            for payload in payloads:
                c = payload["config"]
                print(
                    json.dumps(
                        {"readout": c["readout"], "serving": c["serving"], **payload["metrics"].get("headline", {})}
                    )
                )
        else:
            print_arm_tables(payloads, Path(cfg.output))
            hint = full_run_hint(cfg, args.argv, payloads)
            if hint:
                print("\n" + hint)
        if shard.independent:
            print(
                f"shard {shard.rank}/{shard.world_size} done in {cfg.output}; when every shard is, run "
                f"matbench merge FOLDER... --output DIR",
                file=sys.stderr,
            )
        return 0
    finally:
        shard.stop()
