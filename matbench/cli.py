"""`matbench` command line: a short entry composing subcommands.

Every user error is printed as one line (`matbench: error: ...`), never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from matbench.errors import MatbenchError, is_out_of_memory

EVAL_EPILOG = """examples:
  matbench eval --model smollm2-135m --output out/smollm2
  matbench eval --model gemma3-270m --readout all --serving compact,native --limit 16 --output out/g
  matbench eval --model Qwen/Qwen3-8B --revision <sha> --device cuda --dtype bfloat16 --check --output out/q

outputs, one pair per readout x serving combination (all share one prefill per donor pair):
OUTPUT/<suite>_<readout>_<serving>.json (config, environment, metrics) and
OUTPUT/<suite>_<readout>_<serving>.items.jsonl (one line per donor pair, written as it finishes;
re-running the same command resumes and skips finished pairs)."""


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="run a donor-pair suite through a model and score it",
        description="Run a suite's donor pairs through one global prefill and sparse serving, and "
        "report outcome classes (follow/anti/const/other), the exact sign test, prevalence, "
        "comprehension and the donor margin shift.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True,
                   help="offline alias (smollm2-135m, gemma3-270m), Hub id, local directory, or .gguf file")
    p.add_argument("--revision", help="Hub revision (branch, tag or commit sha)")
    p.add_argument("--suite", default="discovery", help="suite name, or all for the whole memory contract and its scorecard (default: discovery)")
    p.add_argument("--dataset", help="read the suite from a dataset repository (Hub id or directory made by "
                   "`matbench generate`) instead of generating it in memory")
    p.add_argument("--dataset-revision", help="dataset revision (tag or commit) on the Hub")
    p.add_argument("--limit", type=int, help="number of donor pairs (default: the suite's default size)")
    p.add_argument("--seed", type=int, help="suite seed of a generated suite (default: 0)")
    p.add_argument("--readout", default="probe", type=_choices("readout", ("probe", "short", "trace")),
                   help="probe, short, trace, a comma list, or all (default: probe; the donor shift "
                   "always comes from the probe). Several share one prefill per pair.")
    p.add_argument("--serving", default="auto", type=_choices("serving", ("auto", "compact", "native")),
                   help="compact, native, compact,native, or auto (default: native for models with "
                   "sliding-window layers, else compact)")
    p.add_argument("--device", help="cpu, cuda, cuda:N (default: cuda if available)")
    p.add_argument("--dtype", help="float32, bfloat16, float16 (default: float32 on CPU, bfloat16 on GPU)")
    p.add_argument("--attn-implementation", choices=["sdpa", "eager"], help="attention kernel (default: the model's on CPU, eager on GPU; see README)")
    p.add_argument("--chunk-size", type=int, help="prefill in chunks of this many tokens (long contexts)")
    p.add_argument("--batch-pairs", type=int, help="donor pairs served and decoded together (default: 8 on GPU, 2 on CPU)")
    p.add_argument("--check", action="store_true", help="run the faithfulness gates on every pair; stop on failure")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the checkpoint's own Python code")
    p.add_argument("--fresh", action="store_true", help="discard an earlier per-item log in OUTPUT")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_dialog_sources(p)
    p.add_argument("--output", required=True, help="output directory")
    p.set_defaults(func=_run_eval)


def _add_dialog_sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--locomo", metavar="PATH", help="your copy of LoCoMo's locomo10.json (harvest suite)")
    p.add_argument("--realtalk", metavar="DIR", help="your folder of REALTALK's Chat_*.json (harvest suite)")


def _choices(what: str, allowed: tuple[str, ...]):
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(t.strip() for t in text.split(",") if t.strip())
        if items == ("all",):
            return tuple(a for a in allowed if a != "auto")
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {what} {','.join(bad) or text!r}; choose from {', '.join(allowed)} or all")
        return items

    return parse


def _run_eval(args: argparse.Namespace) -> int:
    from matbench.evaluate import EvalConfig, run_eval

    if args.dataset and args.seed is not None:
        raise MatbenchError("--seed applies to generated suites; the rows of --dataset carry their own seed")
    cfg = EvalConfig(
        model=args.model, suite=args.suite, output=args.output, dataset=args.dataset,
        dataset_revision=args.dataset_revision, limit=args.limit, seed=0 if args.seed is None else args.seed,
        readouts=args.readout if isinstance(args.readout, tuple) else (args.readout,),
        servings=args.serving if isinstance(args.serving, tuple) else (args.serving,), revision=args.revision, device=args.device,
        dtype=args.dtype, attn_implementation=args.attn_implementation, chunk_size=args.chunk_size, batch_pairs=args.batch_pairs,
        trust_remote_code=args.trust_remote_code, check=args.check, fresh=args.fresh,
        locomo=args.locomo, realtalk=args.realtalk,
        progress=not args.no_progress,
    )
    if args.suite == "all":
        from matbench.evaluate import run_contract

        _, card = run_contract(cfg)
        print(json.dumps(card["contract"], indent=1))
        return 0
    for payload in run_eval(cfg):
        c = payload["config"]
        print(json.dumps({"readout": c["readout"], "serving": c["serving"],
                          **payload["metrics"].get("headline", {})}))
    return 0


def _add_scorecard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scorecard", help="the memory-contract scorecard of one model's results directories",
                       description="Read every results file of the directories (validated against the schema) and "
                       "write the memory contract with the evidence of each entry, by default to "
                       "FIRST_DIR/scorecard.json. Where several directories hold a suite, the run with the most "
                       "items counts.")
    p.add_argument("directories", nargs="+", metavar="DIR", help="matbench eval output directories of one model")
    p.add_argument("--readout", default="probe", choices=["probe", "short", "trace"], help="default: probe")
    p.add_argument("--output", help="scorecard file to write (default: FIRST_DIR/scorecard.json)")
    p.set_defaults(func=_run_scorecard)


def _run_scorecard(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.results import write_json
    from matbench.scorecard import build_scorecard

    target = Path(args.output) if args.output else Path(args.directories[0]) / "scorecard.json"
    card = build_scorecard([Path(d) for d in args.directories], args.readout, home=target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json(target, card)
    print(json.dumps(card["contract"], indent=1))
    return 0


def _add_rescore(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rescore", help="recompute metrics of finished runs from their per-item logs",
                       description="Recompute the metrics of results files with the installed evaluators, from "
                       "the per-item logs the runs wrote (sha256-checked; no model is loaded), and rebuild "
                       "scorecard.json where a directory has one.")
    p.add_argument("paths", nargs="+", help="results files or eval output directories")
    p.set_defaults(func=_run_rescore)


def _run_rescore(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.rescore import rescore_file, results_files
    from matbench.results import write_json
    from matbench.scorecard import build_scorecard

    for target in map(Path, args.paths):
        for path in results_files(target):
            payload = rescore_file(path)
            print(f"{path}: {len(payload['metrics'])} metric groups from {payload['items']['n_records']} records")
        if target.is_dir() and (target / "scorecard.json").exists():
            card = json.loads((target / "scorecard.json").read_text())
            write_json(target / "scorecard.json", build_scorecard(target, card["readout"]))
            print(f"{target / 'scorecard.json'}: rebuilt")
    return 0


def _add_leaderboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="build the static leaderboard site",
                       description="Build the static leaderboard from validated results files.")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    b = verbs.add_parser("build", help="render the site from results directories",
                         description="Validate every results file under the directories (schema, per-item log sha256) "
                         "and write a static site (index, a page per suite and per model, plots, evidence copies) "
                         "that works from file://.")
    b.add_argument("--results", action="append", required=True, metavar="DIR",
                   help="a directory of results files, searched recursively (repeatable)")
    b.add_argument("--out", required=True, help="output folder of the site")
    b.add_argument("--reported", help="paper figures file (default: the committed leaderboard/reported.json)")
    b.set_defaults(func=_run_leaderboard_build)


def _run_leaderboard_build(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.leaderboard.reported import load_reported
    from matbench.leaderboard.site import build_site

    summary = build_site([Path(d) for d in args.results], Path(args.out),
                         load_reported(Path(args.reported)) if args.reported else None)
    print(f"{summary.out / 'index.html'}: {summary.n_models} models, {summary.n_runs} results files, {summary.pages} pages")
    return 0


def _add_submit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="check a results file against its log and add it to the leaderboard",
                       description="Validate a results file (schema, size, per-item log sha256, metrics recomputed "
                       "from the log) and store it under a content-addressed name, or open a pull request on a "
                       "Hub dataset repository.")
    p.add_argument("results", help="a results file written by matbench eval (its .items.jsonl beside it)")
    p.add_argument("--to-hub", metavar="REPO_ID", help="open a pull request on this Hub dataset repository instead")
    p.add_argument("--submissions", help="submissions folder (default: leaderboard/submissions of this checkout)")
    p.set_defaults(func=_run_submit)


def _run_submit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.leaderboard.submit import SUBMISSIONS, open_hub_pull_request, store_submission, verify_submission

    run = verify_submission(Path(args.results))
    if args.to_hub:
        print(open_hub_pull_request(run, args.to_hub))
        return 0
    stored = store_submission(run, Path(args.submissions) if args.submissions else SUBMISSIONS)
    print(f"stored as {stored.address}: " + ", ".join(str(f) for f in stored.files))
    return 0


def _add_bench(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--attn-implementation", choices=["sdpa", "eager"])
    p.add_argument("--batch-pairs", type=int, help="discovery: pairs per engine batch")
    p.add_argument("--serving", default="auto", choices=["auto", "compact", "native"])
    p.add_argument("--output", help="write the record (JSON) to this file")
    p.set_defaults(func=_run_bench)


def _run_bench(args: argparse.Namespace) -> int:
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


def _add_generate(sub: argparse._SubParsersAction) -> None:
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
    _add_dialog_sources(p)
    p.set_defaults(func=_run_generate)


def _run_generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from matbench.data_gen import SUITES
    from matbench.data_gen.publish import push_to_hub, write_repo
    from matbench.results import git_revision

    if args.n_items is not None and args.n_items < 1:
        raise MatbenchError(f"--n-items must be at least 1 (got {args.n_items})")
    from matbench.data_gen.dialogs import DialogSources

    sources = DialogSources(args.locomo, args.realtalk)
    names = SUITES.names() if args.suite == "all" else [SUITES.get(args.suite).name]
    if args.suite == "all" and not (args.locomo or args.realtalk):
        names.remove("harvest")
        print("note: harvest left out (it is built from your dialog copies: add --locomo PATH --realtalk DIR)",
              file=sys.stderr)
    out = Path(args.out)
    for summary in write_repo(out, names, args.seed, args.n_items, git_revision(), sources):
        print(json.dumps(summary.as_dict()))
    if args.push_to_hub:
        print(push_to_hub(out, args.push_to_hub, args.revision))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="matbench",
        description="Measure semantic materialization in sparse KV-cache serving with donor pairs.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_eval(sub)
    _add_generate(sub)
    _add_scorecard(sub)
    _add_rescore(sub)
    _add_leaderboard(sub)
    _add_submit(sub)
    _add_bench(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except MatbenchError as exc:
        print(f"matbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("matbench: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        print(f"matbench: error: out of memory on the accelerator ({str(exc).splitlines()[0][:120]}); finished "
              "items are kept: run again with a smaller --batch-pairs (or --chunk-size for long prefills) to resume",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
