"""`matbench` command line: a short entry composing subcommands (one module each in
matbench/commands/).

Every user error is printed as one line (`matbench: error: ...`), never as a traceback.
"""

from __future__ import annotations

import argparse
import sys

from matbench.commands import (
    audit,
    bench,
    cache,
    export,
    generate,
    leaderboard,
    merge,
    policies,
    replicate,
    rescore,
    scorecard,
    show,
    store,
    submit,
    validate,
)
from matbench.commands import eval as eval_command
from matbench.errors import MatbenchError, is_out_of_memory
from matbench.plugins import load_plugins

COMMANDS = (
    eval_command,
    merge,
    audit,
    replicate,
    show,
    policies,
    generate,
    scorecard,
    rescore,
    leaderboard,
    submit,
    store,
    validate,
    export,
    cache,
    bench,
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an argument error is one line naming where the options are listed instead of
    the whole usage (subcommands' parsers are made of the same class)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="matbench",
        description="Measure semantic materialization in sparse KV-cache serving with donor pairs.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        load_plugins()  # before parsing: a plugin's readouts are choices of --readout
    except MatbenchError as exc:
        print(f"matbench: error: {exc}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given, for records
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
        # --chunk-size is part of the per-item log's key (it changes the rounding of every row), so
        # only the batch size and the memory cap are offered as ways to resume
        print(
            f"matbench: error: out of memory on the accelerator ({str(exc).splitlines()[0][:120]}); finished "
            "items are kept: run again with --batch-pairs 1 or a larger --memory-fraction to resume (a smaller "
            "--chunk-size lowers a long prefill's peak but starts a new per-item log: use another --output)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
