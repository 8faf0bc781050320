"""`matbench bench`: performance measurements kept in benchmarks/, never timed tests.

Each benchmark is registered by name and returns a JSON-able record with the command, the
machine and the timings; `matbench bench NAME --output FILE` writes it.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.registry import Registry

BENCHMARKS: Registry[Callable[..., dict[str, Any]]] = Registry("benchmark")


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count()}


@BENCHMARKS.register("leaderboard")
def leaderboard_build(n: int = 1000, source: str | None = None) -> dict[str, Any]:
    """Build the site from `n` synthetic results files (the committed SmolLM2 submissions under
    n/7 model names): validation with log sha256, grouping, scorecards, pages, plots, evidence."""
    import json

    from matbench.leaderboard.collect import find_runs
    from matbench.leaderboard.site import build_site
    from matbench.leaderboard.synthetic import synthetic_runs

    root = Path(source) if source else Path(__file__).resolve().parent.parent / "leaderboard" / "submissions"
    sources = [p for p in sorted(root.glob("*/*.json"))
               if json.loads(p.read_text())["config"]["model"]["model"] == "smollm2-135m"]
    if not sources:
        raise MatbenchError(f"no smollm2-135m results files under {root} to synthesize from")
    with tempfile.TemporaryDirectory() as tmp:
        runs_dir, site_dir = Path(tmp) / "runs", Path(tmp) / "site"
        synthetic_runs(sources, runs_dir, n)
        started = time.perf_counter()
        validated = find_runs([runs_dir])
        validate_s = time.perf_counter() - started
        summary = build_site([runs_dir], site_dir)
        total_s = time.perf_counter() - started
        site_bytes = sum(p.stat().st_size for p in site_dir.rglob("*") if p.is_file())
    return {"benchmark": "leaderboard", "n_results_files": n, "n_models": summary.n_models, "pages": summary.pages,
            "validated": len(validated), "validate_seconds": round(validate_s, 3), "build_seconds": round(total_s, 3),
            "files_per_second": round(n / total_s, 1), "site_megabytes": round(site_bytes / 2**20, 1),
            "machine": machine()}
