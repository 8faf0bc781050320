"""Recompute the metrics of finished runs from their per-item logs with the installed evaluators.

Evaluators gain metrics over time (a new contrast, a new headline); the per-item log is the
evidence and holds everything they read, so a results file can be brought up to date without
loading the model again. The log must be the one the run wrote (its sha256 is checked); records,
config, environment and gate summaries stay those of the original run, and `rescored` says which
matbench recomputed the metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matbench import __version__
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.result_schema import SCHEMA_VERSION, read_results, validate_results
from matbench.results import file_sha256, git_revision, write_json


def log_records(path: Path, log_name: str, sha256: str, n_records: int) -> list[dict[str, Any]]:
    """The first `n_records` records of the run's log, in item order, after checking its sha256."""
    log = path.parent / log_name
    if not log.exists():
        raise MatbenchError(f"{path}: its per-item log {log_name} is missing; keep the log beside the results file")
    if file_sha256(log) != sha256:
        raise MatbenchError(f"{path}: per-item log {log_name} changed since the run wrote it (sha256 differs); "
                            "rescore only the log a run wrote")
    return read_records(log, n_records)


def read_records(log: Path, n_records: int) -> list[dict[str, Any]]:
    """The first `n_records` records of a log already checked, in item order."""
    records = sorted((json.loads(line) for line in log.read_text().splitlines() if line.strip()),
                     key=lambda r: r["item_id"])
    return records[:n_records]  # a larger earlier run under the same config may have logged more


def rescore_file(path: Path) -> dict[str, Any]:
    """The results payload of `path` with metrics recomputed; written back in place."""
    parsed = read_results(path)
    payload = json.loads(path.read_text())
    records = log_records(path, parsed.items.log, parsed.items.sha256, parsed.items.n_records)
    evaluator = EVALUATORS.get(parsed.config.suite)(suite=parsed.config.suite)
    payload["metrics"] = evaluator.summarize(records)
    payload["rescored"] = {"matbench": __version__, "matbench_git": git_revision(),
                           "from_schema_version": parsed.schema_version}
    payload["schema_version"] = SCHEMA_VERSION
    validate_results(payload, f"rescored {path}")
    write_json(path, payload)
    return payload


def results_files(target: Path) -> list[Path]:
    """`target` itself, or every results file in a directory (not the scorecard)."""
    if target.is_dir():
        return sorted(p for p in target.glob("*_*_*.json") if p.name != "scorecard.json")
    if not target.exists():
        raise MatbenchError(f"{target} not found: pass a results file or an eval output directory")
    return [target]
