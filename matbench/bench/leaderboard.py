"""The leaderboard site built from many synthetic results files."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from matbench.bench.common import BENCHMARKS, machine


@BENCHMARKS.register("leaderboard")
def leaderboard_build(n: int = 1000, source: str | None = None) -> dict[str, Any]:
    """Build the site from `n` synthetic results files (the committed SmolLM2 submissions under
    n/7 model names): validation with log sha256 (once), then grouping, scorecards, pages, plots,
    evidence; each phase timed on its own."""
    from matbench.leaderboard import synthetic
    from matbench.leaderboard.collect import find_runs
    from matbench.leaderboard.site import render_site
    from matbench.leaderboard.submit import SUBMISSIONS

    sources = synthetic.sources(Path(source) if source else SUBMISSIONS)
    with tempfile.TemporaryDirectory() as tmp:
        runs_dir, site_dir = Path(tmp) / "runs", Path(tmp) / "site"
        synthetic.synthetic_runs(sources, runs_dir, n)
        started = time.perf_counter()
        validated = find_runs([runs_dir])
        validate_s = time.perf_counter() - started
        summary = render_site(validated, site_dir)
        total_s = time.perf_counter() - started
        site_bytes = sum(p.stat().st_size for p in site_dir.rglob("*") if p.is_file())
    return {"benchmark": "leaderboard", "n_results_files": n, "n_models": summary.n_models, "pages": summary.pages,
            "validated": len(validated), "validate_seconds": round(validate_s, 3),
            "render_seconds": round(total_s - validate_s, 3), "build_seconds": round(total_s, 3),
            "files_per_second": round(n / total_s, 1), "site_megabytes": round(site_bytes / 2**20, 1),
            "machine": machine()}
