"""Write the docs pages that come from the code, so they cannot drift from it: the CLI reference
(every parser's `--help`), the readouts and a page per suite (its description, sizes, readouts, contract metrics
and the first arm of its first item as `matbench show` renders it for SmolLM2-135M).

    python docs/generate.py           # rewrite docs/cli.md, readouts.md, errors.md, kvpress.md, suites/
    python docs/generate.py --check   # exit 1 naming each page that differs from the code's
`tests/test_docs.py` holds the committed pages equal to these.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SHOW_MODEL = "smollm2-135m"
WIDTH = "100"  # argparse wraps help to $COLUMNS: fixed, so the page is the same on every terminal


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            found += list(action.choices.items())
    return found


def cli_page() -> str:
    from matbench.cli import build_parser

    os.environ["COLUMNS"] = WIDTH
    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Every `matbench` command's `--help`, generated from its parser by `python docs/generate.py`.",
        "",
    ]

    def walk(prefix: str, p: argparse.ArgumentParser, depth: int) -> None:
        lines.extend([f"{'#' * depth} `{prefix}`", "", "```text", p.format_help().rstrip(), "```", ""])
        for name, child in _subparsers(p):
            walk(f"{prefix} {name}", child, min(depth + 1, 4))

    for name, child in _subparsers(parser):
        walk(f"matbench {name}", child, 2)
    return "\n".join(lines)


def _first_arm(text: str) -> str:
    """`matbench show` output cut before its second arm: the item's header and one arm."""
    parts = text.split("\n=== arm ")
    return parts[0] + ("\n=== arm " + parts[1] if len(parts) > 1 else "")


def suite_page(name: str) -> str:
    import importlib

    from matbench.cli import main
    from matbench.data_gen import SUITES
    from matbench.evaluators import EVALUATORS
    from matbench.protocol.pairs import SERVING_MODES
    from matbench.protocol.readouts import READOUTS

    suite = SUITES.get(name)
    module = importlib.import_module(type(suite).__module__)
    doc = (module.__doc__ or "").strip()
    if name.startswith("harvest"):  # rows over the user's copies of LoCoMo and REALTALK
        example = [
            "No example is rendered here: the items are text of LoCoMo (CC BY-NC 4.0) and REALTALK (no",
            "license), which matbench never republishes. With your copies,",
            f"`matbench show --model {SHOW_MODEL} --suite {name} --locomo locomo10.json --realtalk DIR`",
            "prints one.",
        ]
    else:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["show", "--model", SHOW_MODEL, "--suite", name])
        if code != 0:
            raise SystemExit(f"matbench show --suite {name} failed ({code})")
        example = [
            f"The first item's first arm as `matbench show --model {SHOW_MODEL} --suite {name}` prints it:",
            "",
            "```text",
            _first_arm(out.getvalue()).rstrip(),
            "```",
        ]
    metrics = [m for m in EVALUATORS.get(name).contract if m.in_scorecard]
    lines = [
        f"# {name}",
        "",
        doc,
        "",
        (
            f"- version {suite.version}, {suite.default_n or 'every qualifying'} items by default "
            f"(`matbench eval --suite {name}`)"
        ),
        (
            f"- readouts: {', '.join(suite.readouts or READOUTS.names())}; "
            f"serving: {', '.join(suite.servings or SERVING_MODES)}"
        ),
        "",
        "## Contract metrics",
        "",
        "| metric | what it is |",
        "|---|---|",
        *(f"| `{m.key}` | {m.description} |" for m in metrics),
        "",
        "## An example pair",
        "",
        *example,
        "",
    ]
    return "\n".join(lines)


def suites_index(names: list[str]) -> str:
    from matbench.data_gen import SUITES

    rows = [f"| [{n}]({n}.md) | {SUITES.get(n).summary} |" for n in names]
    return "\n".join(
        [
            "# Suites",
            "",
            "Every suite, generated from its generator. `matbench eval --suite NAME` runs one;",
            "[Suites as datasets](../datasets.md) says how they are published.",
            "",
            "| suite | what it asks |",
            "|---|---|",
            *rows,
            "",
        ]
    )


def readouts_page() -> str:
    """Every registered readout from its declaration (`matbench.protocol.readouts`)."""
    from matbench.protocol.readouts import READOUTS

    lines = [
        "# Readouts",
        "",
        "How an answer is read (`--readout`, SPEC 2.5), generated from the readouts' declarations in",
        "`matbench/protocol/readouts.py` by `python docs/generate.py`. The query ends with the suffix after the",
        "question (`{menu}` is the menu, e.g. `ONLINE or OFFLINE`; `{trace}` the suite's trace instruction).",
        "Generating readouts read their text twice: with matbench's parse (whole menu words, echoed register",
        "names skipped) and with the paper's looser one (upper-cased substrings), reported under `paper_parse`.",
        "Several readouts share one global prefill per pair; the donor margin shift always comes from the probe.",
        "",
        "| readout | query suffix | new tokens | answer | what it reads |",
        "|---|---|---|---|---|",
    ]
    for name in READOUTS.names():
        r = READOUTS.get(name)
        answer = "likeliest menu word" if not r.max_new_tokens else f"{r.pick} menu word"
        lines.append(
            f"| `{name}` | `{r.suffix_template}` | {r.max_new_tokens or 'none'} | {answer} | {r.description} |"
        )
    return "\n".join(lines) + "\n"


def errors_page() -> str:
    """The first mistakes and what matbench answers, from `benchmarks/cpu-error-lines.json`
    (`benchmarks/scripts/error_lines.py`)."""
    import json

    record = json.loads((DOCS.parent / "benchmarks" / "cpu-error-lines.json").read_text())
    made = record["recorded"]
    lines = [
        "# Errors a new user meets",
        "",
        "Each mistake below is answered in one line on standard error before any model loads (exit status 2;",
        "the report skips a scorecard and goes on). The checks of options, names, policies and paths run",
        "before torch is imported, in a fraction of a second; the report, submit and leaderboard read the",
        "files first. The lines and times (median of three runs,",
        f"{made['hardware']}, commit {made['commit']}, {made['date']}, no network) are the record",
        f"`benchmarks/cpu-error-lines.json`, made by `{record['command']}`; this page is generated from it.",
        "",
        "| mistake | command | what matbench prints | exit | seconds |",
        "|---|---|---|---|---|",
    ]
    for row in record["mistakes"]:
        line = row["line"].replace("|", "\\|")
        lines.append(f"| {row['mistake']} | `{row['command']}` | {line} | {row['exit']} | {row['seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def kvpress_page() -> str:
    """Every press of the installed kvpress and how the audit drives it (`kvpress_calls.press_table`)."""
    from importlib.metadata import version

    from matbench.engine.policies.kvpress_calls import press_table

    rows = press_table()
    how = {
        "scored": "scored: its `score`, matbench keeps the top rows per layer and KV head",
        "hooked": "its own forward hook: the rows it leaves or does not mask",
        "refused": "refused",
    }
    lines = [
        "# kvpress presses in the audit",
        "",
        "Any press of [kvpress](https://github.com/NVIDIA/kvpress) that chooses which rows to keep is a serving",
        "policy: `--policy 'kvpress:PRESS(key=value, ...)@BUDGET'`, a wrapper with its inner press",
        "(`'kvpress:AdaKVPress(press=SnapKVPress(window_size=32))@0.5'`), a chain as a list",
        "(`'kvpress:ComposedPress(presses=[StreamingLLMPress(compression_ratio=0.25), KnormPress(compression_ratio=0.5)])'`).",
        "A plain scorer is scored (one scoring serves every budget, and `--source-mode evicted` spends the",
        "budget around the banned rows); every other press runs through its own forward hook on each layer,",
        "and the rows it leaves in the cache, or does not mask, are the rows served (a hooked press takes",
        "`--source-mode natural` only). Tests hold each supported press's rows equal to the rows kvpress's own",
        "hook keeps in a plain prefill, per layer and KV head (`tests/test_kvpress_policies.py`). A press that",
        "changes rows, compresses while decoding, downloads per-model data or runs forward passes of its own",
        "is refused by name when the policy is parsed, before any model loads, with the reason below.",
        "",
        f"This page is generated from kvpress {version('kvpress')} by `python docs/generate.py`.",
        "",
        "| press | how matbench drives it | budget or reason |",
        "|---|---|---|",
    ]
    for row in rows:
        note = row.note or ("`@BUDGET` or `compression_ratio=`" if row.how != "refused" else "")
        lines.append(f"| `{row.name}` | {how[row.how]} | {note} |")
    return "\n".join(lines) + "\n"


def pages() -> dict[Path, str]:
    from matbench.evaluators.base import suites_in_order
    from matbench.models.gguf import one_gguf_parse
    from matbench.models.sources import resolve_source

    names = list(suites_in_order())
    found = {
        DOCS / "cli.md": cli_page(),
        DOCS / "readouts.md": readouts_page(),
        DOCS / "errors.md": errors_page(),
        DOCS / "kvpress.md": kvpress_page(),
        DOCS / "suites" / "index.md": suites_index(names),
    }
    # every suite page renders through SHOW_MODEL's GGUF file: parse it once for all of them
    with one_gguf_parse(resolve_source(SHOW_MODEL)):
        for name in names:
            found[DOCS / "suites" / f"{name}.md"] = suite_page(name)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    stale = []
    for path, text in pages().items():
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in stale:
        print(f"{path} differs from what the code gives: run python docs/generate.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
