"""A policy run's selection metrics as one table (the `selection` block of its results file,
`matbench.results.selection`): what the policy kept, beside what the kept rows carried.

Per governed arm: pairs; leak (the two donor members were served different rows, so a follow
could come from the selection rather than the cache state); source kept (the policy kept the
source's own rows in member A); donor visible (the served rows include a row that states the
donor); kept tokens; follow rate and donor shift over every pair, with 95% CIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAD = (
    "arm",
    "n",
    "leak",
    "source kept",
    "donor visible",
    "kept tokens",
    "follow rate [95% CI]",
    "donor shift [95% CI]",
)


def _rate(block: Mapping[str, Any] | None) -> str:
    return "" if not block else f"{block['rate']:.3f}"


def _rate_ci(block: Mapping[str, Any] | None) -> str:
    return "" if not block else f"{block['rate']:.3f} [{block['ci'][0]:.3f}, {block['ci'][1]:.3f}]"


def _shift(block: Mapping[str, Any] | None) -> str:
    return "" if not block else f"{block['mean']:+.3f} [{block['ci'][0]:+.3f}, {block['ci'][1]:+.3f}]"


def selection_table(selection: Mapping[str, Any]) -> list[str]:
    """Markdown lines, one row per governed arm, in the block's order."""
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for arm, block in selection.items():
        every = block["materialization"]["all"] or {}
        cells = [
            arm,
            str(block["n_pairs"]),
            _rate(block["members_differ"]),
            _rate(block.get("source_kept", {}).get("a")),
            _rate(block["donor_visible"]),
            f"{block['kept_tokens_mean']:.1f}",
            _rate_ci(every.get("follow_rate")),
            _shift(every.get("shift")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
