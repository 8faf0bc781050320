"""Helpers for the leaderboard tests: the committed submissions, hostile and synthetic runs."""

from __future__ import annotations

import json
from pathlib import Path

from matbench.leaderboard import synthetic
from matbench.leaderboard.synthetic import copy_run

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "leaderboard" / "submissions"
HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">../../etc"

__all__ = ["HOSTILE", "SUBMISSIONS", "committed_runs", "copy_run", "synthetic_runs"]


def committed_runs() -> list[Path]:
    return sorted(SUBMISSIONS.glob("*/*.json"))


def synthetic_runs(root: Path, n: int) -> list[Path]:
    sources = [p for p in committed_runs() if json.loads(p.read_text())["config"]["model"]["model"] == "smollm2-135m"]
    return synthetic.synthetic_runs(sources, root, n)
