"""Helpers for the leaderboard tests: the fixture store's runs, hostile and synthetic runs."""

from __future__ import annotations

import gzip
from pathlib import Path

from matbench.leaderboard import synthetic
from matbench.results.store import results_files
from tests.store_fixtures import STORE

# Markup that must stay text, a path that must pick no folder, and a spreadsheet formula that the
# CSV downloads must hold as text (behind an apostrophe).
HOSTILE = '=HYPERLINK("http://x")<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">../../etc'

__all__ = ["HOSTILE", "STORE", "copy_run", "fixture_runs", "synthetic_runs"]


def fixture_runs() -> list[Path]:
    """Every results file of the fixture store, sorted."""
    return results_files(STORE, recursive=True)


def copy_run(results: Path, dest: Path, model: str | None = None, revision: str | None = None) -> Path:
    """A stored run copied into `dest` as `matbench eval` writes it (its log plain), optionally
    under another model name or revision."""
    target = synthetic.copy_run(results, dest, model, revision)
    for packed in dest.glob("*.items.jsonl.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    return target


def synthetic_runs(root: Path, n: int) -> list[Path]:
    return synthetic.synthetic_runs(synthetic.sources(STORE), root, n)
