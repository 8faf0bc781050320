"""Argument helpers shared by several commands."""

from __future__ import annotations

import argparse
import difflib

from matbench.errors import MatbenchError
from matbench.models.sources import OFFLINE_ALIASES


def add_model(p: argparse.ArgumentParser) -> None:
    """--model and --revision, as every command that loads a model (or its tokenizer) reads them."""
    p.add_argument(
        "--model",
        required=True,
        help=f"offline alias ({', '.join(OFFLINE_ALIASES)}), Hub id, local directory, or .gguf file",
    )
    p.add_argument("--revision", help="Hub revision (branch, tag or commit sha)")


def add_suite_rows(p: argparse.ArgumentParser) -> None:
    """Where a suite's rows come from: a dataset repository or the generator (--limit, --seed)."""
    p.add_argument(
        "--dataset",
        help="read the suite from a dataset repository (Hub id or directory made by "
        "`matbench generate`) instead of generating it in memory",
    )
    p.add_argument("--dataset-revision", help="dataset revision (tag or commit) on the Hub")
    p.add_argument("--limit", type=int, help="number of donor pairs (default: the suite's default size)")
    p.add_argument("--seed", type=int, help="suite seed of a generated suite (default: 0)")
    p.add_argument(
        "--template",
        default="orig",
        choices=("orig", "para"),
        help="surface wording: orig (the suite's), or para, the paper's untuned robustness surface "
        "(kv_frozen: <entry i>/event: system_poll()/result:, statements reworded; not for trigger, "
        "update, harvest)",
    )


def suite_seed(args: argparse.Namespace) -> int:
    """The generator's seed from `add_suite_rows`' options (0 by default); refused with --dataset."""
    if args.dataset and args.seed is not None:
        raise MatbenchError("--seed applies to generated suites; the rows of --dataset carry their own seed")
    return 0 if args.seed is None else args.seed


def add_dialog_sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--locomo", metavar="PATH", help="your copy of LoCoMo's locomo10.json (harvest suite)")
    p.add_argument("--realtalk", metavar="DIR", help="your folder of REALTALK's Chat_*.json (harvest suite)")


def choices(what: str, allowed: tuple[str, ...]):
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(t.strip() for t in text.split(",") if t.strip())
        if items == ("all",):
            return tuple(a for a in allowed if a != "auto")
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            close = difflib.get_close_matches(bad[0], allowed, n=1) if bad else []
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise argparse.ArgumentTypeError(
                f"unknown {what} {','.join(bad) or text!r}; {hint}choose from {', '.join(allowed)} or all"
            )
        return items

    return parse
