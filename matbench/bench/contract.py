"""The whole memory contract as a user runs it: `matbench eval --suite all` with the defaults
(default readouts and serving, every contract suite, harvest on the user's dialog copies), one
model loaded once, timed per suite with its peak memory.

The record answers "how long does the contract take on this card, and does it fit": per suite
its pairs, wall seconds, pairs per second and peak memory (allocated on the GPU, the process's
resident set on the CPU), then the model's load, the scorecard and the total. Nothing is tuned:
batch sizes come from the memory model, as they do for `matbench eval`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from matbench.bench.common import BENCHMARKS, gpu_name, machine


@BENCHMARKS.register("contract")
def contract_bench(
    model: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    attn_implementation: str | None = None,
    locomo: str | None = None,
    realtalk: str | None = None,
    results: str | None = None,
    n: int | None = None,
) -> dict[str, Any]:
    """`model`: a checkpoint (alias, Hub id, directory); `locomo`/`realtalk`: the dialog copies
    (harvest is left out without them, as `eval --suite all` does); `results`: keep the run's
    results there (default: a temporary folder); `n`: the first n pairs of each suite (`--limit`;
    default: every pair)."""
    from matbench.engine.memory import peak_memory, reset_peak
    from matbench.errors import MatbenchError
    from matbench.run.config import EvalConfig
    from matbench.run.distributed import Shard
    from matbench.run.evaluate import contract_suites, load_eval_model, run_eval, write_scorecard
    from matbench.run.preflight import preflight

    if model is None:
        raise MatbenchError("bench contract runs a checkpoint: pass --model (an alias, a Hub id or a directory)")
    if results and Path(results).exists() and any(Path(results).iterdir()):
        raise MatbenchError(
            f"--results {results} already holds files: a suite found there resumes from its logs and would "
            "be timed at their speed; pass an empty or new folder"
        )
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(results or scratch)
        cfg = EvalConfig(
            model=model,
            suite="all",
            output=str(out),
            device=device,
            dtype=dtype,
            attn_implementation=attn_implementation,
            locomo=locomo,
            realtalk=realtalk,
            limit=n,
        )
        preflight(cfg)  # a mistyped option or a missing dialog copy fails before the weights load
        started = time.perf_counter()
        loaded = load_eval_model(cfg, Shard())
        load_s = time.perf_counter() - started
        suites = []
        for name in contract_suites(cfg):
            reset_peak(loaded.device)
            t0 = time.perf_counter()
            payloads = run_eval(replace(cfg, suite=name), loaded=loaded)
            seconds = time.perf_counter() - t0
            peak, kind = peak_memory(loaded.device)
            pairs = payloads[0]["config"]["n_items"]
            suites.append(
                {
                    "suite": name,
                    "pairs": pairs,
                    "results_files": len(payloads),
                    "wall_s": round(seconds, 2),
                    "pairs_per_s": round(pairs / seconds, 2),
                    "peak_memory_gib": round(peak, 2),
                }
            )
            print(f"{name}: {pairs} pairs in {seconds:.1f} s, peak {peak:.1f} GiB", flush=True)
        scorecard_s = None
        if n is None:  # a scorecard needs every suite whole
            t0 = time.perf_counter()
            write_scorecard(cfg)
            scorecard_s = round(time.perf_counter() - t0, 2)
        total = time.perf_counter() - started
    return {
        "benchmark": "contract",
        "machine": {**machine(), "device": loaded.device, "gpu": gpu_name(loaded.device)},
        "model": loaded.describe(),
        "limit": n,
        "peak_memory_kind": kind,
        "load_s": round(load_s, 2),
        "suites": suites,
        "scorecard_s": scorecard_s,
        "pairs": sum(s["pairs"] for s in suites),
        "wall_s": round(total, 2),
        "peak_memory_gib": max(s["peak_memory_gib"] for s in suites),
    }
