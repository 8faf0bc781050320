"""Helpers for the leaderboard tests: the committed submissions, hostile and synthetic runs."""

from __future__ import annotations

from pathlib import Path

from matbench.leaderboard import synthetic
from matbench.leaderboard.synthetic import copy_run

# The runs of the store as `matbench submit` stored them before the store existed: plain logs,
# indented results, one folder per run under its former address.
SUBMISSIONS = Path(__file__).resolve().parents[1] / "leaderboard" / "submissions"

# Markup that must stay text, a path that must pick no folder, and a spreadsheet formula that the
# CSV downloads must hold as text (behind an apostrophe).
HOSTILE = '=HYPERLINK("http://x")<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">../../etc'

__all__ = ["HOSTILE", "SUBMISSIONS", "committed_runs", "copy_run", "synthetic_runs"]


def committed_runs() -> list[Path]:
    return sorted(SUBMISSIONS.glob("*/*.json"))


def synthetic_runs(root: Path, n: int) -> list[Path]:
    return synthetic.synthetic_runs(synthetic.sources(SUBMISSIONS), root, n)
