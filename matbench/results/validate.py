"""Checks of a finished run: the one code path of `matbench validate` and `matbench submit`.

`check_run` is what every reader of a store needs before a number reaches a page: the results
schema, the size limits, and the log the run wrote (sha256 of its decompressed bytes).
`verify_run` adds what makes a hand-edited summary impossible to pass: the log holds exactly
the records the file claims, every record is keyed by the file's config hash, the gate summary
and the metrics recomputed from the log with the installed evaluator equal the file's (counts
exactly, floats to 1e-9 relative), and a run that says it evicted the source event served no arm a
donor-dependent or source row (else its numbers are no evidence of what it claims).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.protocol.records import PairRecord
from matbench.results.payload import gate_summary
from matbench.results.rescore import read_records, recompute_metrics, verified_log
from matbench.results.schema import ResultsFile, parse_results
from matbench.results.store import find_log, results_bytes, results_files

MAX_RESULTS_BYTES = 5 * 2**20  # a results file holds metrics only; the largest committed one is ~110 KB
MAX_LOG_BYTES = 200 * 2**20  # decompressed


@dataclass(frozen=True)
class Run:
    """One results file that passed `check_run`, and its per-item log. `sha256`: of the results in
    the store's serialization (`results_bytes`), the same for an eval output file and its stored
    copy; its first 16 digits are the run's address."""

    path: Path
    results: ResultsFile
    sha256: str

    @property
    def address(self) -> str:
        return self.sha256[:16]

    @property
    def log(self) -> Path:
        """The per-item log as found beside the results file (plain or `.gz`)."""
        return find_log(self.path.parent, self.results.items.log) or self.path.parent / self.results.items.log


def check_run(path: Path) -> Run:
    """A results file that passes the schema, whose log is the one the run wrote; else one line."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise MatbenchError(
            f"{path}: {size} bytes is over the {MAX_RESULTS_BYTES} byte limit "
            "for a results file; results hold metrics, the items go in the log"
        )
    payload, results = parse_results(path.read_bytes(), path)
    verified_log(path, results, max_bytes=MAX_LOG_BYTES)
    return Run(path, results, hashlib.sha256(results_bytes(payload)).hexdigest())


def first_mismatch(a: Any, b: Any, where: str = "metrics") -> str | None:
    """The first key where the recomputed `a` and the file's `b` differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}"
            found = first_mismatch(a[k], b[k], f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return where
        return next((m for i, (x, y) in enumerate(zip(a, b)) if (m := first_mismatch(x, y, f"{where}[{i}]"))), None)
    if isinstance(a, float) or isinstance(b, float):
        if (
            isinstance(a, bool)
            or isinstance(b, bool)
            or not isinstance(a, (int, float))
            or not isinstance(b, (int, float))
        ):
            return where
        return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else where
    return None if a == b and type(a) is type(b) else where


def verify_run(path: Path) -> Run:
    """The run of the results file `path` after every check; else one line saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise MatbenchError(f"{path} not found: pass a results file written by matbench eval")
    run = check_run(path)
    items = run.results.items
    records = read_records(run.log, items.n_records)  # check_run verified the log's sha256
    if len(records) != items.n_records or items.n_records != run.results.config.n_items:
        raise MatbenchError(
            f"{path}: the log holds {len(records)} usable records, the file claims "
            f"{items.n_records} of {run.results.config.n_items} items"
        )
    keys = {r.config_hash for r in records}
    if keys != {run.results.config_hash}:
        raise MatbenchError(
            f"{path}: its per-item log {run.log.name} holds records keyed {sorted(map(str, keys))}, "
            f"not the file's config hash {run.results.config_hash}; submit the log matbench eval wrote"
        )
    try:
        recomputed = recompute_metrics(run.results, records)
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise MatbenchError(
            f"{path}: its per-item log {run.log.name} lacks what the {run.results.config.suite} "
            f"evaluator reads ({type(exc).__name__}: {first_line(exc)}); submit the log matbench "
            "eval wrote"
        ) from None
    wrong = first_mismatch(recomputed, run.results.metrics)
    if wrong:
        raise MatbenchError(
            f"{path}: {wrong} does not match what its per-item log gives; submit the file "
            "matbench eval wrote (or run matbench rescore on it)"
        )
    leaked = source_served(records) if run.results.config.source_mode == "evicted" else None
    if leaked:
        raise MatbenchError(
            f"{path}: the run evicted the source event, yet {leaked}: its serving kept rows it "
            "claims to have evicted; rerun it with this matbench"
        )
    gates = first_mismatch(gate_summary(records), {k: v.model_dump() for k, v in run.results.gates.items()}, "gates")
    if gates:
        raise MatbenchError(
            f"{path}: {gates} does not match the gate results in its per-item log; submit the file matbench eval wrote"
        )
    return run


def source_served(records: list[PairRecord]) -> str | None:
    """Where a source-evicted run's serving still showed an arm its donor or source, else None."""
    for record in records:
        for name, arm in record.arms.items():
            selection = arm.selection
            if selection is None:
                continue
            if selection.donor_visible:
                return f"item {record.item_id} served arm {name} a donor-dependent row"
            if selection.source_kept and any(selection.source_kept):
                return f"item {record.item_id} kept a source row for arm {name}"
    return None


@dataclass(frozen=True)
class Verdict:
    """The outcome of `verify_run` on one results file: the run, or the one line it failed with."""

    path: Path
    run: Run | None
    error: str | None


def gates_passed(run: Run) -> str | None:
    """None when the run ran the faithfulness gates and every checked item passed; else why not."""
    if not run.results.config.check:
        return f"{run.path}: the run did not run the faithfulness gates (matbench eval --check)"
    failed = {name: f"{g.passed}/{g.checked}" for name, g in sorted(run.results.gates.items()) if g.passed != g.checked}
    return f"{run.path}: faithfulness gates failed on some items: {failed}" if failed else None


def validate_store(root: Path, require_gates: bool = False) -> Iterator[Verdict]:
    """`verify_run` on every results file under `root` (recursively), in path order; with
    `require_gates`, a run must also have run and passed the faithfulness gates."""
    root = Path(root)
    if not root.is_dir():
        raise MatbenchError(f"{root} is not a folder: pass a results store (or an eval output folder)")
    for path in results_files(root, recursive=True):
        try:
            run = verify_run(path)
        except MatbenchError as exc:
            yield Verdict(path, None, str(exc))
            continue
        yield Verdict(path, run, gates_passed(run) if require_gates else None)
