"""Every arm of a results file as one table: classes, sign-test p, accuracy and donor shift with CIs.

`matbench eval` ends with it (as lm-evaluation-harness ends with its task table) and
`python -m matbench.results.report` prints it under each suite's summary. The arms sit at different
depths of the metrics block (`arms`; `by_variant.<variant>.arms`; harvest's
`natural.<dataset>.arms`), so the table walks the block for every `arms` mapping instead of
naming each suite's layout: a suite with a new layout is covered without a change here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matbench.results.selection_table import selection_table
from matbench.results.verdicts import run_verdict, run_warnings

if TYPE_CHECKING:
    from matbench.results.schema import ResultsFile

CLASSES = ("follow", "anti", "const", "other")


@dataclass(frozen=True)
class ArmRow:
    """One arm's numbers; None where its suite does not measure them (harvest: no donor pairs)."""

    group: str  # where in the metrics block: "" (the arms), a variant, "locomo", "locomo/w1/contains"
    arm: str
    n: int | None
    classes: tuple[int, ...] | None  # follow, anti, const, other
    p: float | None  # exact sign test, follow vs anti
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    shift: float | None  # donor margin shift, mean over pairs
    shift_ci: tuple[float, float] | None
    shift_p: float | None  # Wilcoxon signed-rank

    @classmethod
    def from_metrics(cls, group: str, arm: str, m: Mapping[str, Any]) -> ArmRow:
        shift = m.get("donor_shift") or {}
        classes = m.get("classes")
        accuracy = m.get("menu_accuracy", m.get("accuracy", m.get("mean")))
        ci = m.get("menu_accuracy_ci", m.get("ci"))
        return cls(
            group,
            arm,
            m.get("n_pairs"),
            tuple(classes[c] for c in CLASSES) if classes else None,
            m.get("follow_anti_p"),
            accuracy,
            tuple(ci) if ci else None,
            shift.get("mean"),
            tuple(shift["ci"]) if shift.get("ci") else None,
            shift.get("wilcoxon_p"),
        )


def arm_rows(metrics: Mapping[str, Any], reading: str | None = None) -> list[ArmRow]:
    """Every arm in a results file's metrics block, groups in the file's order, arms by name. `reading`: of harvest_freeform's
    several readings, the one the run's headline uses (the others would triple the table)."""
    reading = reading or metrics.get("reading")
    return [ArmRow.from_metrics(group, arm, m) for group, arm, m in _walk(metrics, (), reading)]


def _walk(
    block: Mapping[str, Any], path: tuple[str, ...], reading: str | None
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    for key, value in block.items():
        if not isinstance(value, Mapping) or key in ("headline", "selection"):
            continue  # the headline repeats the arms; selection is the eviction audit's own table
        if path and path[-1] == "readings" and reading and key != reading:
            continue
        if key == "arms":
            group = "/".join(p for p in path if p not in ("by_variant", "by_window", "readings"))
            # by name: a results file on disk has its keys sorted, the payload in memory not yet
            yield from ((group, arm, value[arm]) for arm in sorted(value) if isinstance(value[arm], Mapping))
        else:
            yield from _walk(value, (*path, key), reading)


def _with_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return ""
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def _shift(row: ArmRow) -> str:
    if row.shift is None:
        return ""
    ci = f" [{row.shift_ci[0]:+.3f}, {row.shift_ci[1]:+.3f}]" if row.shift_ci else ""
    return f"{row.shift:+.3f}{ci}"


def arm_table(rows: list[ArmRow]) -> list[str]:
    """Markdown lines: group, arm, pairs, follow/anti/const/other, p, accuracy [95% CI], donor shift
    [95% CI], Wilcoxon p. The group column only when some arm has one."""
    grouped = any(r.group for r in rows)
    head = [
        *(["group"] if grouped else []),
        "arm",
        "n",
        "follow/anti/const/other",
        "p (follow vs anti)",
        "accuracy [95% CI]",
        "donor shift [95% CI]",
        "shift p",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            *([r.group] if grouped else []),
            r.arm,
            "" if r.n is None else str(r.n),
            "/".join(map(str, r.classes)) if r.classes else "",
            "" if r.p is None else f"{r.p:.3g}",
            _with_ci(r.accuracy, r.accuracy_ci),
            _shift(r),
            "" if r.shift_p is None else f"{r.shift_p:.3g}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def wrapped(text: str, width: int = 100) -> list[str]:
    """A sentence of the end of a run as terminal lines: words kept whole, later lines indented."""
    if not text:
        return []
    return textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def run_summary(results: ResultsFile, folder: Path | None = None) -> list[str]:
    """A results file as lines: suite, readout, serving and departures from the protocol, model,
    items and gates; the arms table; a policy run's selection table; the suite's verdict and the
    run's warnings (`matbench.results.verdicts`); with `folder`, the paths of the results file
    and its log."""
    c = results.config
    gates = ", ".join(f"{g} {v.passed}/{v.checked}" for g, v in sorted(results.gates.items()) if v.checked)
    lines = [
        " · ".join(
            [
                c.suite,
                c.readout,
                ", ".join([c.serving, *c.variants]),
                c.model.model,
                c.model.dtype,
                f"{c.n_items} items",
                *([f"gates {gates}"] if gates else []),
            ]
        ),
        "",
        *arm_table(arm_rows(results.metrics)),
    ]
    if results.metrics.get("selection"):
        lines += ["", f"what {c.policy} kept:", "", *selection_table(results.metrics["selection"])]
    found = run_verdict(results)
    if found:
        lines += ["", *wrapped(f"{c.suite} asks: {found.question}" if found.question else ""), *wrapped(found.line())]
    lines += [part for w in run_warnings(results) for part in wrapped(f"warning: {w}")]
    if folder is not None:
        log = results.items.log
        lines += ["", f"results: {folder / log.replace('.items.jsonl', '.json')}", f"items:   {folder / log}"]
    return lines
