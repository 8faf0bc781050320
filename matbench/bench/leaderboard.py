"""The leaderboard site built from many synthetic results files, with evidence copied and linked."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from matbench.bench.common import BENCHMARKS, machine

# `--evidence link` needs a dataset to point at; nothing is fetched, so any well-formed id does
# (only its length enters the site's size).
BENCH_HUB = "org/matbench-results"


def _megabytes(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


@BENCHMARKS.register("leaderboard")
def leaderboard_build(n: int = 1000, source: str | None = None) -> dict[str, Any]:
    """Build the site from `n` synthetic results files (the SmolLM2 contract runs of the store
    under n/7 model names, stored as submissions): validation with log sha256 (once), then grouping,
    scorecards, pages, plots, downloads and evidence, once per evidence mode (copy: the files
    into the site; link: addresses in a Hub dataset); each phase timed on its own, each site
    measured on disk."""
    from matbench.leaderboard import synthetic
    from matbench.leaderboard.collect import find_runs
    from matbench.leaderboard.evidence import EvidencePlan, HubDataset
    from matbench.leaderboard.site import render_site

    sources = synthetic.sources(Path(source)) if source else synthetic.sources()
    plans = {"copy": EvidencePlan("copy"), "link": EvidencePlan("link", HubDataset(BENCH_HUB))}
    sites: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = Path(tmp) / "runs"
        synthetic.synthetic_runs(sources, runs_dir, n)
        started = time.perf_counter()
        validated = find_runs([runs_dir])
        validate_s = time.perf_counter() - started
        for mode, plan in plans.items():
            site_dir = Path(tmp) / f"site-{mode}"
            begun = time.perf_counter()
            summary = render_site(validated, site_dir, evidence=plan)
            render_s = time.perf_counter() - begun
            sites[mode] = {
                "render_seconds": round(render_s, 3),
                "site_megabytes": _megabytes(site_dir),
                "evidence_megabytes": _megabytes(site_dir / "evidence") if (site_dir / "evidence").exists() else 0.0,
                "files": sum(p.is_file() for p in site_dir.rglob("*")),
                "notes": list(summary.notes),
            }
    return {
        "benchmark": "leaderboard",
        "n_results_files": n,
        "n_models": summary.n_models,
        "pages": summary.pages,
        "validated": len(validated),
        "validate_seconds": round(validate_s, 3),
        "sites": sites,
        "files_per_second_copy": round(n / (validate_s + sites["copy"]["render_seconds"]), 1),
        "machine": machine(),
    }
