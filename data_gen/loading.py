"""Donor pairs of one config read from a dataset repository (Hub id or local directory)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from matbench.data_gen.base import SUITES
from matbench.errors import MatbenchError, first_line
from matbench.protocol.pairs import DonorPair


def load_pairs(
    dataset: str,
    suite: str,
    limit: int | None = None,
    revision: str | None = None,
    cache_dir: str | None = None,
    sources: Any = None,
) -> tuple[list[DonorPair], dict[str, Any]]:
    """Donor pairs of config `suite` from a dataset repository (Hub id or local directory);
    `sources` are the user's dialog copies that the harvest config's references are read from."""
    import tempfile

    import datasets
    from datasets import load_dataset

    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory(prefix="matbench-ds-") as scratch:
        # datasets 5.x keys the cache of a local folder by its base name and config, not by its
        # content: a regenerated (or another) folder of the same name would be served stale.
        # Local repositories are therefore read through a fresh, throw-away cache.
        if Path(dataset).is_dir() and cache_dir is None:
            cache_dir = scratch
        try:
            ds = load_dataset(dataset, suite, split="test", revision=revision, cache_dir=cache_dir)
        except Exception as exc:  # datasets raises FileNotFoundError, ValueError, DatasetNotFoundError...
            raise MatbenchError(f"could not load config {suite!r} of dataset {dataset!r}: {first_line(exc)}") from None
        all_rows = [dict(row) for row in ds]
        del ds
    rows = all_rows if limit is None else all_rows[:limit]
    if not rows:
        raise MatbenchError(f"config {suite!r} of dataset {dataset!r} has no rows")
    digest = hashlib.sha256()
    for row in all_rows:
        digest.update(str(row.get("content_hash", "")).encode())
    pairs = SUITES.get(suite).pairs_from_rows(rows, sources)
    info = {
        "dataset": dataset,
        "dataset_revision": revision,
        "config_content_hash": digest.hexdigest(),
        "suite_version": rows[0]["version"],
        "seed": rows[0]["seed"],
    }
    return pairs, info
