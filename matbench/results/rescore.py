"""Recompute the metrics of finished runs from their per-item logs with the installed evaluators.

Evaluators gain metrics over time (a new contrast, a new headline); the per-item log is the
evidence and holds everything they read, so a results file can be brought up to date without
loading the model again. The log must be the one the run wrote (its sha256 is checked); records,
config, environment and gate summaries stay those of the original run, and `rescored` says which
matbench recomputed the metrics.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from matbench import __version__
from matbench.errors import MatbenchError, first_line
from matbench.protocol.records import PairRecord
from matbench.results.files import write_json
from matbench.results.provenance import git_revision
from matbench.results.schema import (
    SCHEMA_VERSION,
    ResultsFile,
    parse_results,
    validate_results,
)
from matbench.results.store import find_log, read_log_bytes, results_bytes, results_files

__all__ = ["log_records", "read_records", "recompute_metrics", "rescore_file", "results_files", "verified_log"]


def verified_log(path: Path, parsed: ResultsFile, max_bytes: int | None = None) -> Path:
    """The per-item log of the results file `path` (plain or `.gz`), after checking it is there,
    at most `max_bytes` long decompressed (when given) and the one the run wrote (sha256 of the
    decompressed bytes); else one line."""
    log = find_log(path.parent, parsed.items.log)
    if log is None:
        raise MatbenchError(f"{path}: its per-item log {parsed.items.log} is missing; keep it beside the results file")
    try:
        data = read_log_bytes(log, max_bytes)
    except MatbenchError as exc:
        raise MatbenchError(f"{path}: {exc}") from None
    if hashlib.sha256(data).hexdigest() != parsed.items.sha256:
        raise MatbenchError(
            f"{path}: per-item log {log.name} is not the one the run wrote: it changed since "
            "the run wrote it (sha256 differs); use the log the run wrote"
        )
    return log


def log_records(path: Path, parsed: ResultsFile) -> list[PairRecord]:
    """The records behind the metrics of the results file `path`, after checking its log's sha256."""
    return read_records(verified_log(path, parsed), parsed.items.n_records)


def read_records(log: Path, n_records: int) -> list[PairRecord]:
    """The first `n_records` records of a log already checked, in item order; one line naming the
    log and the line when a line is not a JSON record of the per-item shape."""
    records = []
    try:
        lines = read_log_bytes(log).decode().splitlines()
    except UnicodeDecodeError as exc:
        raise MatbenchError(f"per-item log {log} is not UTF-8 text ({first_line(exc)})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise MatbenchError(f"per-item log {log}: line {number} is not JSON ({first_line(exc)})") from None
        records.append(PairRecord.from_json(data, f"per-item log {log}, line {number}"))
    records.sort(key=lambda r: r.item_id)
    return records[:n_records]  # a larger earlier run under the same config may have logged more


def recompute_metrics(parsed: ResultsFile, records: list[PairRecord]) -> dict[str, Any]:
    """The metrics the installed evaluator of the run's suite gives on `records`, as JSON holds them."""
    from matbench.evaluators import EVALUATORS

    suite = parsed.config.suite
    from matbench.results.selection import run_metrics

    metrics: dict[str, Any] = json.loads(json.dumps(run_metrics(EVALUATORS.get(suite)(suite=suite), records)))
    return metrics


def rescore_file(path: Path) -> dict[str, Any]:
    """The results payload of `path` with metrics recomputed; written back in place."""
    data = path.read_bytes()  # read once; rewritten with new metrics
    payload, parsed = parse_results(data, path)
    stored = data == results_bytes(payload)  # a store's one-line file stays one line
    payload["metrics"] = recompute_metrics(parsed, log_records(path, parsed))
    payload["rescored"] = {
        "matbench": __version__,
        "matbench_git": git_revision(),
        "from_schema_version": parsed.schema_version,
    }
    payload["schema_version"] = SCHEMA_VERSION
    validate_results(payload, f"rescored {path}")
    if stored:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(results_bytes(payload))
        tmp.replace(path)
    else:
        write_json(path, payload)
    return payload
