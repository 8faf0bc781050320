"""The paper's published figures (reported.json): shown as "reported" rows, never as measurements.

A figure names the declared metric it is comparable to (`metric`, with the `scale` it was
measured on, which must be that metric's, and the `readout` the paper read it with, under which
the metric must be valid) and is then shown in that metric's column, on a row of that readout;
a figure on another scale has a `name` instead and is shown as text on its suite page. `model`
is null where the paper does not name the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.protocol.metrics import Metric, plain_text
from matbench.protocol.readouts import READOUTS


@dataclass(frozen=True)
class ReportedFigure:
    model: str | None
    suite: str
    value: Any
    metric: Metric | None = None  # the declared metric it is comparable to, else None (text only)
    name: str | None = None
    note: str | None = None
    readout: str | None = None  # the paper's readout (matbench's name for it); required with a metric

    @property
    def label(self) -> str:
        return self.metric.label if self.metric else self.name or ""

    def text(self, value: Any = None) -> str:
        """The figure (or part of it, `value`) as its metric reads, with its note."""
        value = self.value if value is None else value
        shown = self.metric.text(value) if self.metric else plain_text(value)
        return shown + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Reported:
    source: str
    figures: tuple[ReportedFigure, ...]

    @property
    def models(self) -> list[str]:
        """Named models, in the order the file first names them."""
        return list(dict.fromkeys(f.model for f in self.figures if f.model))

    def of(self, model: str | None, suite: str | None = None, readout: str | None = "*") -> list[ReportedFigure]:
        """The figures of `model` (and `suite`, and `readout` unless "*")."""
        return [
            f
            for f in self.figures
            if f.model == model and (suite is None or f.suite == suite) and (readout == "*" or f.readout == readout)
        ]

    def rows(self, suite: str | None = None) -> list[tuple[str | None, str | None]]:
        """(model, readout) of each reported row, in the order the file first names them: a model's
        figures read with different readouts are different rows (never one column, two readouts)."""
        return list(dict.fromkeys((f.model, f.readout) for f in self.figures if suite is None or f.suite == suite))


def _figure(raw: dict[str, Any], where: str) -> ReportedFigure:
    suite = raw["suite"]
    if suite not in EVALUATORS:
        raise MatbenchError(f"{where} names an unknown suite {suite!r}; known: {', '.join(suites_in_order())}")
    metric = None
    if raw.get("metric") is not None:
        metric = EVALUATORS.get(suite).metric(raw["metric"])
        if raw.get("scale") != metric.scale.value:
            raise MatbenchError(
                f"{where}: a figure on scale {raw.get('scale')!r} is not comparable to {suite} "
                f"metric {metric.key!r} ({metric.scale.value}); give it a name instead of a metric"
            )
    elif not raw.get("name"):
        raise MatbenchError(f"{where}: a figure needs the declared metric it is comparable to, or a name")
    readout = raw.get("readout")
    if readout is not None and readout not in READOUTS:
        raise MatbenchError(
            f"{where}: unknown readout {readout!r}; matbench's readouts are {', '.join(READOUTS.names())}"
        )
    if metric is not None:
        if readout is None:
            raise MatbenchError(
                f"{where}: a figure in metric {metric.key!r}'s column must name the readout the paper read it with"
            )
        if not metric.valid_for(readout):
            raise MatbenchError(
                f"{where}: {suite} metric {metric.key!r} means nothing under the {readout} readout "
                f"(valid: {', '.join(metric.readouts or ())})"
            )
    return ReportedFigure(raw.get("model"), suite, raw["value"], metric, raw.get("name"), raw.get("note"), readout)


def load_reported(path: Path | None = None) -> Reported:
    """The committed figures (or `path`), checked: known suites, declared metrics, matching scales."""
    where = f"reported figures {path or 'reported.json'}"
    try:
        text = Path(path).read_text() if path else resources.files(__package__).joinpath("reported.json").read_text()
        data = json.loads(text)
        figures = tuple(_figure(raw, f"{where}, figure {k + 1}") for k, raw in enumerate(data["figures"]))
        source = data["source"]
    except OSError as exc:
        raise MatbenchError(f"{where} cannot be read ({first_line(exc)})") from None
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MatbenchError(f"{where} are malformed ({exc!r})") from None
    return Reported(source, figures)
