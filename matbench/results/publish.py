"""A results store as a Hub dataset: the upload that publishes it, the download that reads it.

The store's folder is the dataset repository's tree (`matbench.results.store`), so publishing
is one commit adding every file under its own path, and a snapshot of the dataset is a store
that every reader (validate, leaderboard, report, rescore) takes as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line


def store_files(store: Path) -> list[Path]:
    """Every file of the store that is published: all but hidden files and folders, sorted."""
    store = Path(store)
    if not store.is_dir():
        raise MatbenchError(f"{store} is not a folder: pass a results store")
    return sorted(
        p
        for p in store.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(store).parts)
    )


def publish_operations(store: Path) -> list[Any]:
    """The commit operations that publish `store`: one `CommitOperationAdd` per file, at its path
    relative to the store."""
    from huggingface_hub import CommitOperationAdd

    return [
        CommitOperationAdd(path_in_repo=p.relative_to(store).as_posix(), path_or_fileobj=str(p))
        for p in store_files(store)
    ]


def publish_store(
    store: Path, repo_id: str, api: Any = None, revision: str | None = None, message: str = "matbench results store"
) -> str:
    """Upload every file of `store` to the Hub dataset `repo_id` (created when missing) in one
    commit; returns the commit's URL."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    operations = publish_operations(Path(store))
    api = api or HfApi()
    try:
        api.create_repo(repo_id=repo_id, repo_type="dataset", exist_ok=True)
        info = api.create_commit(
            repo_id=repo_id, repo_type="dataset", operations=operations, commit_message=message, revision=revision
        )
    except (HfHubHTTPError, OSError, ValueError) as exc:  # HTTP and network errors, a malformed repo id
        raise MatbenchError(
            f"could not publish {store} to the Hub dataset {repo_id}: {type(exc).__name__}: {first_line(exc)}"
        ) from None
    return str(getattr(info, "commit_url", None) or info)


def download_store(repo_id: str, revision: str | None = None) -> Path:
    """A local snapshot of the Hub dataset `repo_id` (the Hub cache's copy, fetched when missing)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision))
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise MatbenchError(
            f"could not download the Hub dataset {repo_id}: {type(exc).__name__}: "
            f"{first_line(exc)}; pass a local store folder instead"
        ) from None
