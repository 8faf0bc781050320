"""The paper's published figures (reported.json): shown as "reported" rows, never as measurements.

SPEC section 3 quotes them per suite; where it does not name the model (access, update, the
trigger comprehension range) they are shown on the suite page as the paper's reference, not
attached to a model row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line

SUITES = ("discovery", "trigger", "landing", "access", "programming", "harvest", "update")


@dataclass(frozen=True)
class ReportedModel:
    model: str
    figures: dict[str, Any]


@dataclass(frozen=True)
class Reported:
    source: str
    models: tuple[ReportedModel, ...]
    model_not_named: dict[str, Any]


def load_reported(path: Path | None = None) -> Reported:
    """The committed figures (or `path`), checked for shape: suites must be known ones."""
    try:
        text = Path(path).read_text() if path else resources.files(__package__).joinpath("reported.json").read_text()
        data = json.loads(text)
        models = tuple(ReportedModel(m["model"], m["figures"]) for m in data["models"])
        unnamed = data["model_not_named"]
        source = data["source"]
    except OSError as exc:
        raise MatbenchError(f"reported figures {path or 'reported.json'} cannot be read ({first_line(exc)})") from None
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MatbenchError(f"reported figures {path or 'reported.json'} are malformed ({exc!r})") from None
    for suite in [s for m in models for s in m.figures] + list(unnamed):
        if suite not in SUITES:
            raise MatbenchError(f"reported figures name an unknown suite {suite!r}; known: {', '.join(SUITES)}")
    return Reported(source, models, unnamed)
