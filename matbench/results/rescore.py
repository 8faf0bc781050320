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
from matbench.errors import MatbenchError, first_line
from matbench.protocol.records import PairRecord
from matbench.results.files import file_sha256, write_json
from matbench.results.provenance import git_revision
from matbench.results.schema import (
    SCHEMA_VERSION,
    ResultsFile,
    parse_results,
    validate_results,
)

RESULTS_GLOB = "*_*_*.json"  # <suite>_<readout>_<serving>.json; scorecard.json does not match


def verified_log(path: Path, parsed: ResultsFile, max_bytes: int | None = None) -> Path:
    """The per-item log of the results file `path`, after checking it is there, at most
    `max_bytes` long (when given) and the one the run wrote (sha256); else one line."""
    log = path.parent / parsed.items.log
    if not log.is_file():
        raise MatbenchError(f"{path}: its per-item log {parsed.items.log} is missing; keep it beside the results file")
    if max_bytes is not None and log.stat().st_size > max_bytes:
        raise MatbenchError(f"{path}: per-item log {log.name} is over the {max_bytes} byte limit")
    if file_sha256(log) != parsed.items.sha256:
        raise MatbenchError(f"{path}: per-item log {log.name} is not the one the run wrote: it changed since "
                            "the run wrote it (sha256 differs); use the log the run wrote")
    return log


def log_records(path: Path, parsed: ResultsFile) -> list[PairRecord]:
    """The records behind the metrics of the results file `path`, after checking its log's sha256."""
    return read_records(verified_log(path, parsed), parsed.items.n_records)


def read_records(log: Path, n_records: int) -> list[PairRecord]:
    """The first `n_records` records of a log already checked, in item order; one line naming the
    log and the line when a line is not a JSON record of the per-item shape."""
    records = []
    try:
        lines = log.read_text().splitlines()
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

    return json.loads(json.dumps(run_metrics(EVALUATORS.get(suite)(suite=suite), records)))


def rescore_file(path: Path) -> dict[str, Any]:
    """The results payload of `path` with metrics recomputed; written back in place."""
    payload, parsed = parse_results(path.read_bytes(), path)  # read once; rewritten with new metrics
    payload["metrics"] = recompute_metrics(parsed, log_records(path, parsed))
    payload["rescored"] = {"matbench": __version__, "matbench_git": git_revision(),
                           "from_schema_version": parsed.schema_version}
    payload["schema_version"] = SCHEMA_VERSION
    validate_results(payload, f"rescored {path}")
    write_json(path, payload)
    return payload


def results_files(target: Path, recursive: bool = False) -> list[Path]:
    """`target` itself, or every results file in a directory (not the scorecard); in its
    subfolders too when `recursive`."""
    if target.is_dir():
        found = target.rglob(RESULTS_GLOB) if recursive else target.glob(RESULTS_GLOB)
        return sorted(p for p in found if p.name != "scorecard.json")
    if not target.exists():
        raise MatbenchError(f"{target} not found: pass a results file or an eval output directory")
    return [target]
