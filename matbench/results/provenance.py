"""The matbench git revision a run or a rescore came from."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _git(here: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


# What matbench installs from a checkout: only changes here make a run's code differ from HEAD.
# The results store (results/) is data and lies outside them: a rescore rewrites its files one by
# one, and the first must not mark the rest as run from a modified matbench.
CODE_PATHS = (":(top)matbench", ":(top)data_gen", ":(top)evaluators", ":(top)leaderboard", ":(top)pyproject.toml")


def git_revision(here: Path | None = None) -> str | None:
    """HEAD of the checkout matbench runs from, with "+dirty" when its tracked code differs from
    HEAD: a copied tree whose .git lags behind must not claim a commit it was not run from."""
    here = here or Path(__file__).resolve().parent
    head = _git(here, "rev-parse", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return None
    status = _git(here, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    dirty = status is None or status.returncode != 0 or bool(status.stdout.strip())
    revision: str = head.stdout.strip()
    return revision + ("+dirty" if dirty else "")
