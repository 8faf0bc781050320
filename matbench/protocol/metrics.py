"""Declared metrics: what a suite's evaluator reports into the memory-contract scorecard, once.

Each evaluator declares its contract metrics as `Metric`s (where the value lives in its metrics,
what it means, on which scale, its chance level, which direction is better, how it reads). The
scorecard, `matbench report`, the leaderboard's tables and the paper's reported figures are
loops over these declarations; a reported paper figure names the declared metric it is
comparable to (same scale), or it is shown as text only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from matbench.errors import MatbenchError


class Scale(str, Enum):
    """What kind of number a metric is; figures are comparable only on the same scale."""

    ACCURACY = "accuracy"  # share of answers equal to the gold, against a chance level
    P_VALUE = "p-value"  # an exact test's two-sided p
    FOLLOW = "pair follow"  # donor pairs by outcome class, or follow:anti counts (SPEC 2.6)
    FOLLOW_RATE = "pair follow rate"  # follow pairs / all pairs
    SHIFT = "margin shift"  # donor margin shift, log-probability units (SPEC 2.7)
    DIFFERENCE = "difference"  # a difference of two rates of the same kind
    COUNT = "count"  # how many conditions (constructions, ...) meet a criterion
    CHECK = "check"  # a pass/fail condition of the run (control clean, ...)


class Direction(str, Enum):
    HIGHER = "higher"  # more materialization / more capability
    LOWER = "lower"
    ZERO = "zero"  # equivalence to zero is the finding (harvest)
    NONE = "none"  # descriptive


class Format(str, Enum):
    """How a value reads in a table cell."""

    NUMBER = "number"  # 0.123
    RATE_CI = "rate_ci"  # {"accuracy"|"mean": x, "ci": [lo, hi]} -> 0.934 [0.896, 0.958]
    SIGNED_CI = "signed_ci"  # {"mean": x, "ci": [lo, hi]} -> +0.012 [-0.003, +0.027]
    CLASSES = "classes"  # {"follow": f, "anti": a, ...} or [f, a] -> f:a
    COUNTS = "counts"  # {"W": 3, "U": 5, "N": 8} -> W 3 / U 5 / N 8
    P_VALUE = "p"  # 2.1e-06
    BOOL = "bool"  # yes / no
    MAPPING = "mapping"  # {name: value} -> name: value, ...


_MISSING = object()


@dataclass(frozen=True)
class Metric:
    """One contract metric of a suite.

    `key` names it in the scorecard; `path` is its dotted place in the evaluator's metrics;
    `readouts`, when given, are the only readouts under which it means what it says (exact
    three-digit recovery needs generation: the probe only chooses between the donors' first
    tokens). `overview` puts it in the leaderboard's one-row-per-model table (`overview_key`:
    only that entry of a mapping); `rank` makes it the overview's rank key (a FOLLOW metric:
    follow rate with its Wilson interval). `fields` name the value and interval keys of a
    RATE_CI / SIGNED_CI value. `optional`: absent in some runs by design (harvest without one of
    the corpora), shown as a dash. `in_scorecard=False`: read by the leaderboard's figures from
    the run itself (per-construction detail), not copied into the scorecard. `comprehension`: an
    accuracy with every event served, which says whether the model reads the question at all; at
    or below `chance` (any entry of a mapping) the run's follow counts say little about its cache,
    and the run ends with a warning (`matbench.results.verdicts`). `verdict`: the run's verdict reads
    it beside the rank and overview metrics (discovery's chain arm: the source's state two hops on),
    though the overview does not show it."""

    key: str
    path: str
    label: str
    description: str
    scale: Scale
    format: Format = Format.NUMBER
    direction: Direction = Direction.HIGHER
    chance: float | None = None
    readouts: tuple[str, ...] | None = None
    overview: bool = False
    overview_key: str | None = None
    rank: bool = False
    fields: tuple[str, str] = ("mean", "ci")
    optional: bool = False
    in_scorecard: bool = True
    comprehension: bool = False
    verdict: bool = False

    def valid_for(self, readout: str) -> bool:
        return self.readouts is None or readout in self.readouts

    def value(self, metrics: dict[str, Any], where: str = "metrics") -> Any:
        """The value at `path`; one line naming the metric and the missing key when it is absent
        (an older evaluator wrote the file: `matbench rescore` brings it up to date)."""
        value: Any = metrics
        for part in self.path.split("."):
            value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
            if value is _MISSING:
                if self.optional:
                    return None
                raise MatbenchError(
                    f"{where} lack metric {self.key!r} (no {part!r} on the way to {self.path}); "
                    "run matbench rescore on them"
                )
        return value

    def sort_key(self, value: Any) -> float | None:
        """The number a column of this metric sorts by (None when the value has none)."""
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, dict):
            for key in (self.fields[0], "accuracy", "mean", "follow", "W"):
                if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool):
                    return float(value[key])
        if isinstance(value, list) and value and isinstance(value[0], (int, float)):
            return float(value[0])
        return None

    def check(self, value: Any) -> None:
        """TypeError when `value` is not of the shape this metric's format reads."""
        shapes = {
            Format.NUMBER: (int, float),
            Format.P_VALUE: (int, float),
            Format.BOOL: (bool,),
            Format.RATE_CI: (dict,),
            Format.SIGNED_CI: (dict,),
            Format.COUNTS: (dict,),
            Format.MAPPING: (dict,),
            Format.CLASSES: (dict, list),
        }
        if not isinstance(value, shapes[self.format]) or (isinstance(value, bool) and self.format is not Format.BOOL):
            raise TypeError(f"{value!r} is not a {self.format.value} value")

    def text(self, value: Any) -> str:
        """`value` as a table cell reads it; a dash when absent; TypeError when of another shape."""
        if value is None:
            return "—"
        self.check(value)
        if self.format in (Format.RATE_CI, Format.SIGNED_CI) and isinstance(value, dict):
            number, ci = value[self.fields[0]], value.get(self.fields[1])
            sign = "+" if self.format is Format.SIGNED_CI else ""
            text = f"{number:{sign}.3f}" + (f" [{ci[0]:{sign}.3f}, {ci[1]:{sign}.3f}]" if ci else "")
            if "positive" in value and "negative" in value:  # a donor shift: how many pairs lean each way
                text += f" ({value['positive']}+:{value['negative']}−)"
            return text
        if self.format is Format.CLASSES:
            follow, anti = (value["follow"], value["anti"]) if isinstance(value, dict) else value
            return f"{follow}:{anti}"
        if self.format is Format.COUNTS and isinstance(value, dict):
            return " / ".join(f"{k} {v}" for k, v in value.items())
        if self.format is Format.P_VALUE and isinstance(value, (int, float)):
            return f"{value:.2g}"
        return plain_text(value)

    def describe(self) -> dict[str, Any]:
        """The declaration as JSON (the leaderboard's metric glossary)."""
        return {
            "key": self.key,
            "path": self.path,
            "label": self.label,
            "description": self.description,
            "scale": self.scale.value,
            "direction": self.direction.value,
            "chance": self.chance,
            "readouts": list(self.readouts) if self.readouts else None,
        }


def plain_text(value: Any) -> str:
    """Any metric value, readably: booleans as yes/no, floats to three places, mappings as k: v."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    if isinstance(value, dict):
        if "mean" in value and "ci" in value:
            return f"{value['mean']:+.3f} [{value['ci'][0]:+.3f}, {value['ci'][1]:+.3f}]"
        return ", ".join(f"{k}: {plain_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return (
            ":".join(plain_text(v) for v in value)
            if all(isinstance(v, int) for v in value)
            else ", ".join(map(plain_text, value))
        )
    return str(value)
