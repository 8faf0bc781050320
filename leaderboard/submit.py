"""`matbench submit`: one results file, checked against its per-item log, stored content-addressed.

A submission must pass the results schema and the size limits, its log must be the one the run
wrote (sha256), and the metrics recomputed from the log with the installed evaluator must equal
the file's (counts exactly, floats to 1e-9): a hand-edited summary cannot reach the leaderboard.
Stored as `submissions/<sha256 of the results file, 16 hex>/<file names as written>`; with
`--to-hub`, the same two files are opened as a pull request on a Hub dataset repository.
Nothing in a submission is executed or fetched.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.leaderboard.collect import Run, check_run
from matbench.results.rescore import read_records, recompute_metrics

SUBMISSIONS = Path(__file__).resolve().parent / "submissions"


def _mismatch(a: Any, b: Any, where: str = "metrics") -> str | None:
    """The first key where the recomputed metrics `a` and the file's `b` differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}"
            found = _mismatch(a[k], b[k], f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return where
        return next((m for i, (x, y) in enumerate(zip(a, b)) if (m := _mismatch(x, y, f"{where}[{i}]"))), None)
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return where
        return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else where
    return None if a == b and type(a) is type(b) else where


def verify_submission(path: Path) -> Run:
    """The validated run, or one line saying what is wrong with the submission."""
    path = Path(path)
    if not path.is_file():
        raise MatbenchError(f"{path} not found: pass a results file written by matbench eval")
    run = check_run(path)
    records = read_records(run.log, run.results.items.n_records)  # check_run verified the log's sha256
    if len(records) != run.results.items.n_records or run.results.items.n_records != run.results.config.n_items:
        raise MatbenchError(f"{path}: the log holds {len(records)} usable records, the file claims "
                            f"{run.results.items.n_records} of {run.results.config.n_items} items")
    try:
        recomputed = recompute_metrics(run.results, records)
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise MatbenchError(f"{path}: its per-item log {run.log.name} lacks what the {run.results.config.suite} "
                            f"evaluator reads ({type(exc).__name__}: {first_line(exc)}); submit the log matbench "
                            "eval wrote") from None
    wrong = _mismatch(recomputed, run.results.metrics)
    if wrong:
        raise MatbenchError(f"{path}: {wrong} does not match what its per-item log gives; submit the file "
                            "matbench eval wrote (or run matbench rescore on it)")
    return run


@dataclass(frozen=True)
class Stored:
    address: str
    files: tuple[Path, ...]


def store_submission(run: Run, submissions: Path = SUBMISSIONS) -> Stored:
    """Copy the results file and its log into submissions/<address>/ (idempotent)."""
    address = run.sha256[:16]
    folder = Path(submissions) / address
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for source in (run.path, run.log):
        target = folder / source.name  # names passed the schema's bare-file-name pattern
        shutil.copyfile(source, target)
        files.append(target)
    return Stored(address, tuple(files))


def open_hub_pull_request(run: Run, repo_id: str, api: Any = None) -> str:
    """Open a pull request adding the submission to a Hub dataset repository; returns its URL."""
    try:
        from huggingface_hub import CommitOperationAdd, HfApi
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:
        raise MatbenchError("--to-hub needs huggingface_hub: pip install huggingface_hub") from None

    api = api or HfApi()
    address = run.sha256[:16]
    operations = [CommitOperationAdd(path_in_repo=f"submissions/{address}/{p.name}", path_or_fileobj=str(p))
                  for p in (run.path, run.log)]
    model = run.results.config.model.model
    try:
        info = api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations, create_pr=True,
                                 commit_message=f"matbench submission: {model} {run.results.config.suite} ({address})")
    except (HfHubHTTPError, OSError, ValueError) as exc:  # HTTP and network errors, a malformed repo id
        raise MatbenchError(f"could not open a pull request on the Hub dataset {repo_id}: "
                            f"{type(exc).__name__}: {first_line(exc)}") from None
    return str(getattr(info, "pr_url", None) or info)
