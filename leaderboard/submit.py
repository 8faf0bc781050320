"""`matbench submit`: one results file, checked against its per-item log, added to a store.

A submission passes `matbench.results.validate.verify_run` (the checks `matbench validate`
runs over a whole store): the results schema and size limits, the log the run wrote (sha256),
and the metrics recomputed from the log with the installed evaluator equal to the file's, so a
hand-edited summary cannot reach the leaderboard. It is stored as a run folder of the store
(`matbench.results.store`): `submissions/<address>/<stem>.json` and its log compressed; with
`--to-hub`, the same two files are opened as a pull request on the store's Hub dataset.
Nothing in a submission is executed or fetched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.results.store import GZ, compress_log, read_log_bytes, results_bytes, store_run
from matbench.results.validate import Run, verify_run

SUBMISSIONS = "submissions"  # the store's folder of submitted runs
verify_submission = verify_run  # what a submission must pass: the store validator's checks


def submission_folder(run: Run) -> str:
    """The run folder of a submission, relative to the store root: `submissions/<address>`."""
    return f"{SUBMISSIONS}/{run.address}"


@dataclass(frozen=True)
class Stored:
    address: str
    files: tuple[Path, ...]


def store_submission(run: Run, store: Path) -> Stored:
    """Write the run into `store`/submissions/<address>/ (idempotent: the same bytes every time)."""
    files = store_run(run.path, Path(store) / submission_folder(run), json.loads(run.path.read_bytes()))
    return Stored(run.address, files)


def open_hub_pull_request(run: Run, repo_id: str, api: Any = None) -> str:
    """Open a pull request adding the submission to a Hub dataset repository; returns its URL."""
    try:
        from huggingface_hub import CommitOperationAdd, HfApi
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:
        raise MatbenchError("--to-hub needs huggingface_hub: pip install huggingface_hub") from None

    api = api or HfApi()
    folder = submission_folder(run)
    payload = json.loads(run.path.read_bytes())
    operations = [
        CommitOperationAdd(path_in_repo=f"{folder}/{run.path.name}", path_or_fileobj=results_bytes(payload)),
        CommitOperationAdd(
            path_in_repo=f"{folder}/{run.results.items.log}{GZ}", path_or_fileobj=compress_log(read_log_bytes(run.log))
        ),
    ]
    model = run.results.config.model.model
    try:
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="dataset",
            operations=operations,
            create_pr=True,
            commit_message=f"matbench submission: {model} {run.results.config.suite} ({run.address})",
        )
    except (HfHubHTTPError, OSError, ValueError) as exc:  # HTTP and network errors, a malformed repo id
        raise MatbenchError(
            f"could not open a pull request on the Hub dataset {repo_id}: {type(exc).__name__}: {first_line(exc)}"
        ) from None
    return str(getattr(info, "pr_url", None) or info)
