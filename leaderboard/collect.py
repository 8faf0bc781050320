"""Results files -> leaderboard entries: one per (model, revision), each with its scorecard.

Every file is validated against the results schema and its per-item log (sha256) before it can
reach a page; the same run found twice (in results/ and in submissions/) counts once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.result_schema import ResultsFile, read_results
from matbench.results import file_sha256
from matbench.scorecard import scorecard_of_runs

MAX_RESULTS_BYTES = 5 * 2**20  # a results file holds metrics only; the largest committed one is ~60 KB
MAX_LOG_BYTES = 200 * 2**20


@dataclass(frozen=True)
class Run:
    """One validated results file and its per-item log."""

    path: Path
    results: ResultsFile
    sha256: str

    @property
    def log(self) -> Path:
        return self.path.parent / self.results.items.log


@dataclass
class ModelEntry:
    """Every run of one model at one revision, and the scorecard built from them."""

    name: str
    revision: str
    runs: list[Run] = field(default_factory=list)
    scorecard: dict[str, Any] | None = None

    @property
    def slug(self) -> str:
        """A file name that cannot leave the output folder, unique per (name, revision)."""
        readable = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")[:48] or "model"
        return f"{readable}-{hashlib.sha256(f'{self.name}@{self.revision}'.encode()).hexdigest()[:8]}"


def check_run(path: Path) -> Run:
    """A results file that passes the schema, whose log is the one the run wrote; else one line."""
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise MatbenchError(f"{path}: {path.stat().st_size} bytes is over the {MAX_RESULTS_BYTES} byte limit "
                            "for a results file; results hold metrics, the items go in the log")
    results = read_results(path)
    log = path.parent / results.items.log
    if not log.is_file():
        raise MatbenchError(f"{path}: its per-item log {results.items.log} is missing; keep it beside the results file")
    if log.stat().st_size > MAX_LOG_BYTES:
        raise MatbenchError(f"{path}: per-item log {log.name} is over the {MAX_LOG_BYTES} byte limit")
    if file_sha256(log) != results.items.sha256:
        raise MatbenchError(f"{path}: per-item log {log.name} is not the one the run wrote (sha256 differs)")
    return Run(path, results, file_sha256(path))


def find_runs(roots: list[Path]) -> list[Run]:
    """Every results file under `roots` (recursively), validated, each distinct run once."""
    runs: dict[str, Run] = {}
    for root in roots:
        if not root.is_dir():
            raise MatbenchError(f"{root} is not a directory of results files")
        for path in sorted(root.rglob("*.json")):
            if path.name == "scorecard.json" or path.parent.name == "scorecards" or path.name.startswith("."):
                continue
            run = check_run(path)
            runs.setdefault(run.sha256, run)
    return sorted(runs.values(), key=lambda r: (r.results.config.model.model, r.results.config.suite, str(r.path)))


def model_revision(results: ResultsFile) -> str:
    m = results.config.model
    return m.commit_hash or m.revision or (f"gguf:{m.gguf_sha256}" if m.gguf_sha256 else "unversioned")


def group_models(runs: list[Run], home: Path) -> list[ModelEntry]:
    """One entry per (model, revision) with the scorecard of its largest probe runs."""
    entries: dict[tuple[str, str], ModelEntry] = {}
    for run in runs:
        key = (run.results.config.model.model, model_revision(run.results))
        entries.setdefault(key, ModelEntry(*key)).runs.append(run)
    for entry in entries.values():
        readouts = {r.results.config.readout for r in entry.runs}
        readout = "probe" if "probe" in readouts else sorted(readouts)[0]
        entry.scorecard = scorecard_of_runs([(r.path, r.results) for r in entry.runs], readout, home=home,
                                            where=f"runs of {entry.name}")
    return sorted(entries.values(), key=lambda e: (e.name, e.revision))
