"""Every time, size or speed the hand-written docs state comes from a benchmark record.

`FIGURES` declares each stated figure: the doc it is in, its text there (whitespace normalised,
the cited record included) and a function that builds that text from the record (or, for a
configured limit, from the code constant). A figure whose record changes, a doc sentence that
drifts from its record and a new figure with no entry here all fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from matbench.results.validate import MAX_LOG_BYTES, MAX_RESULTS_BYTES

ROOT = Path(__file__).resolve().parent.parent

# The hand-written docs held to their records (README.md, docs/cli.md, docs/suites/ and the
# generated or separately tested pages are not among them).
DOCS = (
    "docs/install.md",
    "docs/running.md",
    "docs/leaderboard.md",
    "docs/gates.md",
    "docs/protocol-notes.md",
    "docs/performance.md",
    "docs/audit.md",
    "docs/reproducing.md",
    "docs/concepts.md",
    "docs/index.md",
)

# A number with a unit of time, size or speed, a ratio ("2.05x", "1.3×", "3-11x") or a share ("52%").
FIGURE = re.compile(
    r"\d[\d,.]*k? ?(?:ms|s|min|h|seconds?|minutes?|hours?|KB|KiB|MB|MiB|GB|GiB|TB|TiB"
    r"|pairs/s|tok/s|tokens/s|requests/s|files/s|GFLOP/s|TFLOP/s)(?![\w/])"
    r"|\d[\d.]*(?:-\d[\d.]*)?[x×](?!\w)"
    r"|\d[\d.]*\s?%"
)

# Matches of FIGURE that are no time, size or speed, each with the text around it in its doc.
NOT_FIGURES = (
    # the confidence level of every interval matbench reports
    ("docs/running.md", "accuracy with its 95% CI"),
    ("docs/running.md", "item-level Wilson 95% CI"),
    ("docs/concepts.md", "bootstrap 95% CI"),
    # ratios of logit-gate readings (numerical error, not speed), from the committed logs; the
    # derivation is `logit_tolerance`'s docstring in matbench/engine/gates.py
    ("docs/gates.md", "float64 shrinks them 3-11x"),
    ("docs/gates.md", "the bound is 4x that worst reading"),
    ("docs/gates.md", "at least 4.7x below it"),
)


def normalised(text: str) -> str:
    return " ".join(text.split())


def doc_text(doc: str) -> str:
    return normalised((ROOT / doc).read_text(encoding="utf-8"))


def record(name: str) -> dict[str, Any]:
    """A benchmark record: it says what made it (command, machine, date, commit, hardware)."""
    data = json.loads((ROOT / "benchmarks" / name).read_text(encoding="utf-8"))
    for key in ("command", "machine", "recorded"):
        assert key in data, f"benchmarks/{name} has no {key!r}: not a record"
    return data


def value(name: str, *path: str) -> float:
    node: Any = record(name)
    for key in path:
        node = node[key]
    assert isinstance(node, int | float), f"benchmarks/{name} {'.'.join(path)} is {node!r}"
    return node


def cite(name: str) -> str:
    return f"`benchmarks/{name}`"


def fixed(x: float, places: int) -> str:
    """`x` to `places` decimals, halves rounded up as written (14.35 -> 14.4)."""
    return str(Decimal(repr(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def thousands(x: float) -> str:
    """28,536.0 -> '28.5k'."""
    return fixed(x / 1000, 1) + "k"


def context_k(name: str) -> str:
    tokens = int(value(name, "context_tokens"))
    assert tokens % 1024 == 0
    return f"{tokens // 1024}k"


def whole_mib(n_bytes: int) -> str:
    assert n_bytes % 2**20 == 0, n_bytes
    return f"{n_bytes // 2**20} MiB"


def ratio(numerator: str, denominator: str, path: tuple[str, ...]) -> float:
    return value(numerator, *path) / value(denominator, *path)


class Figure(NamedTuple):
    doc: str
    stated: str  # as the doc states it, whitespace normalised
    derive: Callable[[], str]  # the same text built from the record


SDPA_DISCOVERY = ("discovery-qwen3-8b-sdpa-grouped.json", "discovery-qwen3-8b-eager-gathered-serving.json")
SDPA_LONG = ("long-context-gemma3-12b-grouped.json", "long-context-gemma3-12b-eager.json")
FUSED_LONG = ("long-context-gemma3-12b-0443ee3.json", "long-context-gemma3-12b-fused.json")
GRAPHS_LONG = "long-context-gemma3-12b-decode-graphs.json"
GRAPHS_DISCOVERY = "discovery-qwen3-8b-decode-graphs-b32.json"
LEADERBOARD = "leaderboard-build-1000.json"
ATTENTION_PATHS = "gpu-attention-paths.json"

FIGURES = (
    Figure(
        "docs/running.md",
        "1.3× eager's discovery pairs/s at Qwen3-8B shape (`benchmarks/discovery-qwen3-8b-sdpa-grouped.json` "
        "against `benchmarks/discovery-qwen3-8b-eager-gathered-serving.json`)",
        lambda: (
            f"{fixed(ratio(*SDPA_DISCOVERY, ('engine', 'pairs_per_s')), 1)}× eager's discovery pairs/s at "
            f"Qwen3-8B shape ({cite(SDPA_DISCOVERY[0])} against {cite(SDPA_DISCOVERY[1])})"
        ),
    ),
    Figure(
        "docs/running.md",
        "2.0× eager's prefill tokens/s on a 32k Gemma-3-12B-shaped context "
        "(`benchmarks/long-context-gemma3-12b-grouped.json` against `benchmarks/long-context-gemma3-12b-eager.json`)",
        lambda: (
            f"{fixed(ratio(*SDPA_LONG, ('prefill', 'tokens_per_s')), 1)}× eager's prefill tokens/s on a "
            f"{context_k(SDPA_LONG[0])} Gemma-3-12B-shaped context ({cite(SDPA_LONG[0])} against {cite(SDPA_LONG[1])})"
        ),
    ),
    Figure(
        "docs/running.md",
        "attention call at Qwen3-8B's heads 3.1-5.0x faster (`benchmarks/gpu-attention-paths.json`)",
        lambda: (
            "attention call at Qwen3-8B's heads "
            f"{fixed(min(r['speedup'] for r in record(ATTENTION_PATHS)['rows']), 1)}-"
            f"{fixed(max(r['speedup'] for r in record(ATTENTION_PATHS)['rows']), 1)}x faster ({cite(ATTENTION_PATHS)})"
        ),
    ),
    Figure(
        "docs/running.md",
        "prefill of a 32k Gemma-3-12B-shaped context on an H200 goes from 5.7k to 6.2k tokens/s "
        "(`benchmarks/long-context-gemma3-12b-0443ee3.json`, the code of the commit before them, "
        "against `benchmarks/long-context-gemma3-12b-fused.json`, on one machine)",
        lambda: (
            f"prefill of a {context_k(FUSED_LONG[1])} Gemma-3-12B-shaped context on an "
            f"{record(FUSED_LONG[1])['gpu'].removeprefix('NVIDIA ')} goes from "
            f"{thousands(value(FUSED_LONG[0], 'prefill', 'tokens_per_s'))} to "
            f"{thousands(value(FUSED_LONG[1], 'prefill', 'tokens_per_s'))} tokens/s ({cite(FUSED_LONG[0])}, "
            f"the code of the commit before them, against {cite(FUSED_LONG[1])}, on one machine)"
        ),
    ),
    Figure(
        "docs/running.md",
        "2.05x the decoding tokens/s at a 32k Gemma-3-12B-shaped context "
        "(`benchmarks/long-context-gemma3-12b-decode-graphs.json`)",
        lambda: (
            f"{fixed(value(GRAPHS_LONG, 'decode_by_mode', 'graphs', 'tokens_per_s') / value(GRAPHS_LONG, 'decode_by_mode', 'eager', 'tokens_per_s'), 2)}x"
            f" the decoding tokens/s at a {context_k(GRAPHS_LONG)} Gemma-3-12B-shaped context ({cite(GRAPHS_LONG)})"
        ),
    ),
    Figure(
        "docs/running.md",
        "12.5 -> 14.4 pairs/s on discovery at Qwen3-8B shape (`benchmarks/discovery-qwen3-8b-decode-graphs-b32.json`)",
        lambda: (
            f"{fixed(value(GRAPHS_DISCOVERY, 'engine_by_decode', 'eager', 'pairs_per_s'), 1)} -> "
            f"{fixed(value(GRAPHS_DISCOVERY, 'engine_by_decode', 'graphs', 'pairs_per_s'), 1)} pairs/s on discovery "
            f"at Qwen3-8B shape ({cite(GRAPHS_DISCOVERY)})"
        ),
    ),
    Figure(
        "docs/protocol-notes.md",
        "58 GiB against 36 GiB at the peak of two serves of a 32k context at Gemma-3-12B shape, "
        "`benchmarks/long-context-gemma3-12b-decode-graphs.json`",
        lambda: (
            f"{fixed(value(GRAPHS_LONG, 'native_layout_peak_memory_gib_2_requests', 'literal'), 0)} GiB against "
            f"{fixed(value(GRAPHS_LONG, 'native_layout_peak_memory_gib_2_requests', 'gathered'), 0)} GiB at the peak "
            f"of two serves of a {context_k(GRAPHS_LONG)} context at Gemma-3-12B shape, {cite(GRAPHS_LONG)}"
        ),
    ),
    Figure(
        "docs/leaderboard.md",
        # `site_megabytes` is in units of 2**20 bytes (matbench/bench/leaderboard.py)
        "Built from 1,000 synthetic results files, the site is 132 MiB with copies and 11 MiB with links "
        "(`benchmarks/leaderboard-build-1000.json`)",
        lambda: (
            f"Built from {int(value(LEADERBOARD, 'n_results_files')):,} synthetic results files, the site is "
            f"{fixed(value(LEADERBOARD, 'sites', 'copy', 'site_megabytes'), 0)} MiB with copies and "
            f"{fixed(value(LEADERBOARD, 'sites', 'link', 'site_megabytes'), 0)} MiB with links ({cite(LEADERBOARD)})"
        ),
    ),
    Figure(
        "docs/leaderboard.md",
        # configured limits, not measurements: held to the constants `matbench submit` checks
        "limits (5 MiB; 200 MiB for the log, decompressed)",
        lambda: f"limits ({whole_mib(MAX_RESULTS_BYTES)}; {whole_mib(MAX_LOG_BYTES)} for the log, decompressed)",
    ),
)


@pytest.mark.parametrize("entry", FIGURES, ids=lambda f: f"{f.doc}: {f.stated[:40]}")
def test_stated_figure_is_in_its_doc_and_equals_its_record(entry: Figure) -> None:
    assert entry.stated == normalised(entry.stated), "write the stated text whitespace normalised"
    assert entry.stated in doc_text(entry.doc), f"{entry.doc} no longer states {entry.stated!r}"
    assert entry.derive() == entry.stated, f"{entry.doc} states {entry.stated!r}; its record gives {entry.derive()!r}"


def uncovered_figures(doc: str, text: str) -> list[str]:
    """The FIGURE matches in `text` that lie in no stated figure or listed non-figure of `doc`."""
    spans = []
    for covered in [f.stated for f in FIGURES if f.doc == doc] + [t for d, t in NOT_FIGURES if d == doc]:
        spans += [(m.start(), m.end()) for m in re.finditer(re.escape(covered), text)]
    return [
        m.group(0)
        for m in FIGURE.finditer(text)
        if not any(start <= m.start() and m.end() <= end for start, end in spans)
    ]


@pytest.mark.parametrize("doc", DOCS)
def test_every_figure_in_the_docs_is_backed_by_a_record(doc: str) -> None:
    text = doc_text(doc)
    missing = uncovered_figures(doc, text)
    assert not missing, (
        f"{doc} states {missing} with no entry in FIGURES: cite the benchmark record that measured each "
        "(and add it to FIGURES), or say it without the number"
    )


def test_the_figure_scan_finds_what_it_must() -> None:
    text = "decoding at 2.05x, 1.3× faster, 6.2k tokens/s, 85 s, 0.54 GB, 52.6% MFU, 11 min"
    found = uncovered_figures("docs/none.md", text)
    assert found == ["2.05x", "1.3×", "6.2k tokens/s", "85 s", "0.54 GB", "52.6%", "11 min"]
    assert uncovered_figures("docs/none.md", "2 × OLD, 32k tokens, 1e-3, v0.1.0, SPEC 2.3") == []


def test_every_listed_non_figure_is_still_in_its_doc() -> None:
    stale = [(doc, t) for doc, t in NOT_FIGURES if t not in doc_text(doc)]
    assert not stale, f"NOT_FIGURES entries no longer in their docs: {stale}"
