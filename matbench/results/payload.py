"""A results file's payload from its records: one builder for `matbench eval` and `matbench merge`,
so that a merge of shards writes what one process writes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.protocol.records import PairRecord
from matbench.results.attempts import Totals
from matbench.results.files import file_sha256, write_json
from matbench.results.schema import SCHEMA_VERSION, validate_results
from matbench.results.selection import run_metrics


@dataclass(frozen=True)
class RunRecords:
    """What a results file is made of besides its records: the run's config and hash, the
    command, where it ran, its log and what its attempts spent."""

    config: dict[str, Any]
    config_hash: str
    invocation: dict[str, Any]
    environment: dict[str, Any]
    log: Path
    n_from_log: int
    spent: Totals
    merged: dict[str, Any] | None = None  # `matbench merge`: every shard's part


def write_payload(
    run: RunRecords, records: list[PairRecord], evaluator: Any, path: Path, source: str
) -> dict[str, Any]:
    """The results file at `path` from `records` (in suite order), validated before it is written."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "config": run.config,
        "config_hash": run.config_hash,
        "invocation": run.invocation,
        "environment": run.environment,
        "metrics": run_metrics(evaluator, records),
        "gates": gate_summary(records),
        "items": {
            "log": run.log.name,
            "sha256": file_sha256(run.log),
            "n_records": len(records),
            "n_from_log": run.n_from_log,
        },
        "wall_seconds": run.spent.wall_seconds,
        "resources": run.spent.resources(),
        **({"merged": run.merged} if run.merged is not None else {}),
    }
    validate_results(payload, source)  # never write a file the schema refuses
    write_json(path, payload)
    return payload


def gate_summary(records: list[PairRecord]) -> dict[str, dict[str, Any]]:
    """Per gate: items checked, passed, skipped (not applicable, e.g. gate B with sliding
    windows) and the worst |dlogit| among those compared."""
    summary: dict[str, dict[str, Any]] = {}
    for record in records:
        for g in record.gates or ():
            s = summary.setdefault(g.name, {"checked": 0, "passed": 0, "skipped": 0, "max_abs_diff": None})
            if g.max_abs_diff is None and g.passed:
                s["skipped"] += 1
                continue
            s["checked"] += 1
            s["passed"] += g.passed
            s["max_abs_diff"] = max(s["max_abs_diff"] or 0.0, g.max_abs_diff or 0.0)
    return summary
