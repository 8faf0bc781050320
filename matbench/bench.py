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


# Dense bf16 peak of the cards we measure on (vendor datasheets); MFU is reported against these.
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}


def _peak_tflops(device: str) -> float | None:
    import torch

    if not device.startswith("cuda"):
        return None
    name = torch.cuda.get_device_name(torch.device(device))
    return next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def _peak_memory(device: str) -> float:
    """Peak memory in GiB: allocated on the GPU, resident set size on the CPU."""
    import resource

    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated(torch.device(device)) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


@BENCHMARKS.register("discovery")
def discovery(n: int = 64, model: str | None = None, shape: str | None = None, naive_n: int = 8,
              device: str | None = None, dtype: str | None = None, batch_pairs: int | None = None,
              serving: str = "auto", attn_implementation: str | None = None,
              tokenizer: str | None = None) -> dict[str, Any]:
    """The naive reference path and the engine on the same discovery items, in one run.

    Engine: global prefill per pair (shared prefix), every arm x member of `batch_pairs` pairs
    served, probed and decoded (short readout) together. Naive: `matbench.naive` on the first
    `naive_n` of those pairs. Reports pairs/s of both and their ratio, prefill tokens/s and model
    FLOP utilisation (2 x parameters x tokens against the card's dense bf16 peak), peak memory,
    and the agreement of the two paths' outcome classes (probe and short) with the probe margin of
    every disagreement (near-ties explain bf16 flips)."""
    import torch

    from matbench.data_gen import SUITES
    from matbench.engine import PairEngine
    from matbench.models import load_model
    from matbench.naive import naive_pair
    from matbench.shapes import random_model

    if (model is None) == (shape is None):
        raise MatbenchError("pass exactly one of --model NAME or --random-weights SHAPE")
    loaded = (random_model(shape, device, dtype, attn_implementation, tokenizer=tokenizer) if shape else
              load_model(model, device=device, dtype=dtype, attn_implementation=attn_implementation))
    device = loaded.device
    engine = PairEngine(loaded, serving=serving)
    pairs = SUITES.get("discovery").generate(0, n)
    group = batch_pairs or (8 if device.startswith("cuda") else 2)
    combos = [("probe", engine.serving), ("short", engine.serving)]
    n_params = sum(p.numel() for p in loaded.model.parameters())
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(torch.device(device))

    # Warm-up (kernels, allocator), not timed.
    engine.score_many([(pairs[0], *engine.prepare(pairs[0]))], combos)
    engine.release_memory()  # the timed run prefills everything itself
    prefill_s = serve_s = 0.0
    prefill_tokens = 0
    engine_records = []
    _sync(device)
    started = time.perf_counter()
    for start in range(0, n, group):
        chunk = pairs[start:start + group]
        t0 = time.perf_counter()
        items = engine.prepare_many(chunk)
        _sync(device)
        t1 = time.perf_counter()
        engine_records += engine.score_many(items, combos)
        _sync(device)
        prefill_s += t1 - t0
        serve_s += time.perf_counter() - t1
        for _, layout, _ in items:
            a, b = layout.members
            prefill_tokens += len(a.input_ids) + (len(b.input_ids) - layout.prefix_tokens if a != b else 0)
    engine_s = time.perf_counter() - started

    naive_items = pairs[:min(naive_n, n)]
    _sync(device)
    started = time.perf_counter()
    naive_records = [naive_pair(engine, p, engine.serving) for p in naive_items]
    _sync(device)
    naive_s = time.perf_counter() - started

    compared = disagree = 0
    flips = []
    for pair, eng, nav in zip(naive_items, engine_records, naive_records):
        for arm, n_arm in nav["arms"].items():
            probe, short = eng[combos[0]]["arms"][arm], eng[combos[1]]["arms"][arm]
            for key, got, ref in (("probe", probe["class"], n_arm["probe_class"]), ("short", short["class"], n_arm["class"])):
                compared += 1
                if got != ref:
                    disagree += 1
                    margins = [abs(x[0] - x[1]) if len(x) == 2 else None for x in n_arm["probe_logp"]]
                    flips.append({"item": pair.item_id, "arm": arm, "readout": key, "engine": got, "naive": ref,
                                  "naive_probe_margins": margins})
    peak = _peak_tflops(device)
    return {
        "benchmark": "discovery", "model": loaded.source.name, "n_parameters": n_params, "device": device,
        "gpu": torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None,
        "dtype": loaded.dtype, "attn_implementation": loaded.attn_implementation, "serving": engine.serving,
        "batch_pairs": group, "n_pairs": n, "naive_pairs": len(naive_items),
        "engine": {"seconds": round(engine_s, 3), "pairs_per_s": round(n / engine_s, 3),
                   "prefill_seconds": round(prefill_s, 3), "serve_probe_decode_seconds": round(serve_s, 3),
                   "prefill_tokens": prefill_tokens, "prefill_tokens_per_s": round(prefill_tokens / prefill_s, 1),
                   "prefill_mfu": round(2 * n_params * prefill_tokens / prefill_s / (peak * 1e12), 4) if peak else None},
        "naive": {"seconds": round(naive_s, 3), "pairs_per_s": round(len(naive_items) / naive_s, 3)},
        "speedup": round((n / engine_s) / (len(naive_items) / naive_s), 2),
        "class_agreement": {"compared": compared, "agree": compared - disagree,
                            "rate": round((compared - disagree) / compared, 4) if compared else None, "flips": flips},
        "peak_memory_gib": round(_peak_memory(device), 2), "peak_bf16_tflops": peak, "machine": machine(),
    }
