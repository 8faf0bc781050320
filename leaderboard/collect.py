"""Results files -> leaderboard entries: one per (model, revision), each with its scorecard.

Every file is validated against the results schema and its per-item log (sha256) before it can
reach a page; the same run found twice (an eval output file and its copy in a store) counts once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.results.schema import ResultsFile
from matbench.results.scorecard import scorecard_of_runs
from matbench.results.store import results_files
from matbench.results.validate import Run, check_run

__all__ = ["ModelEntry", "Run", "check_run", "find_runs", "group_models", "model_revision"]


@dataclass
class ModelEntry:
    """Every run of one model at one revision, and the scorecard built from them."""

    name: str
    revision: str
    runs: list[Run] = field(default_factory=list)
    # One scorecard per readout the model was run with; the primary (the probe where it exists)
    # feeds the overview, every one gets its row on the suite pages.
    scorecards: dict[str, dict[str, Any]] = field(default_factory=dict)
    shared_name: bool = False  # another revision of the same model is on the board

    @property
    def readout(self) -> str:
        """The primary readout: the probe (it works for every model) where the model has it."""
        return "probe" if "probe" in self.scorecards else min(self.scorecards)

    @property
    def scorecard(self) -> dict[str, Any]:
        return self.scorecards[self.readout]

    @property
    def label(self) -> str:
        """The model's name in figures; with its revision where several revisions share the name."""
        return f"{self.name} @{self.revision[:8]}" if self.shared_name else self.name

    @property
    def contract(self) -> dict[str, Any]:
        """The primary scorecard's per-suite contract entries (suites without a run are absent)."""
        return self.scorecard["contract"]

    def readouts(self) -> list[str]:
        """Readouts with a scorecard, the primary first."""
        return [self.readout, *sorted(r for r in self.scorecards if r != self.readout)]

    @property
    def slug(self) -> str:
        """A file name that cannot leave the output folder, unique per (name, revision)."""
        readable = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")[:48] or "model"
        return f"{readable}-{hashlib.sha256(f'{self.name}@{self.revision}'.encode()).hexdigest()[:8]}"


def find_runs(roots: list[Path]) -> list[Run]:
    """Every results file under `roots` (recursively), validated, each distinct run once."""
    runs: dict[str, Run] = {}
    for root in roots:
        if not root.is_dir():
            raise MatbenchError(f"{root} is not a directory of results files")
        for path in results_files(root, recursive=True):
            if path.parent.name == "scorecards" or path.name.startswith("."):  # scorecards/<model>.json
                continue
            run = check_run(path)
            runs.setdefault(run.sha256, run)
    return sorted(runs.values(), key=lambda r: (r.results.config.model.model, r.results.config.suite, str(r.path)))


def model_revision(results: ResultsFile) -> str:
    # A GGUF model's revision is its file's sha256 cut to the 24 digits files before schema 1.12
    # recorded, so its runs from before and after group as one model.
    m = results.config.model
    return m.commit_hash or m.revision or (f"gguf:{m.gguf_sha256[:24]}" if m.gguf_sha256 else "unversioned")


def group_models(runs: list[Run], home: Path) -> list[ModelEntry]:
    """One entry per (model, revision) with a scorecard per readout (of its largest runs)."""
    entries: dict[tuple[str, str], ModelEntry] = {}
    for run in runs:
        key = (run.results.config.model.model, model_revision(run.results))
        entries.setdefault(key, ModelEntry(*key)).runs.append(run)
    for entry in entries.values():
        for readout in sorted({r.results.config.readout for r in entry.runs}):
            entry.scorecards[readout] = scorecard_of_runs(
                [(r.path, r.results) for r in entry.runs], readout, home=home, where=f"runs of {entry.name}"
            )
        entry.shared_name = sum(name == entry.name for name, _ in entries) > 1
    return sorted(entries.values(), key=lambda e: (e.name, e.revision))
