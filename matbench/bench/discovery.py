"""The naive reference path against the engine on the same discovery items."""

from __future__ import annotations

import time
from typing import Any

from matbench.bench.common import (
    BENCHMARKS,
    decode_label,
    decode_settings,
    gpu_name,
    load_for_bench,
    machine,
    peak_tflops,
    sync,
)
from matbench.engine.memory import peak_memory, reset_peak


@BENCHMARKS.register("discovery")
def discovery(
    n: int = 64,
    model: str | None = None,
    shape: str | None = None,
    naive_n: int = 8,
    device: str | None = None,
    dtype: str | None = None,
    batch_pairs: int | None = None,
    serving: str = "auto",
    attn_implementation: str | None = None,
    tokenizer: str | None = None,
    device_map: str | None = None,
    fused_kernels: str | None = None,
    decode_graphs: str | None = None,
) -> dict[str, Any]:
    """The naive reference path and the engine on the same discovery items, in one run.

    Engine: global prefill per pair (shared prefix), every arm x member of `batch_pairs` pairs
    served, probed and decoded (short readout) together. Naive: `matbench.naive` on the first
    `naive_n` of those pairs. Prefill time runs from a batch's `prepare_many` to its caches being
    ready on the device, and includes laying out the next batch meanwhile (as eval does: the CPU
    work overlaps the GPU's). Reports pairs/s of both and their ratio, prefill tokens/s and model
    FLOP utilisation (2 x parameters x tokens against the card's dense bf16 peak), peak memory,
    and the agreement of the two paths' outcome classes (probe and short) with the probe margin of
    every disagreement (near-ties explain bf16 flips). `decode_graphs` compare times the engine
    twice, decoding eagerly then from CUDA graphs, and reports both and their classes' agreement."""

    from matbench.data_gen import SUITES
    from matbench.engine.naive import naive_pair
    from matbench.engine.pair_engine import PairEngine

    loaded = load_for_bench(model, shape, device, dtype, attn_implementation, tokenizer, device_map, fused_kernels)
    device = loaded.device
    settings = decode_settings(decode_graphs, device, device_map)
    engine = PairEngine(loaded, serving=serving)
    pairs = SUITES.get("discovery").generate(0, n)
    group = batch_pairs or (8 if device.startswith("cuda") else 2)
    combos = [("probe", engine.serving), ("short", engine.serving)]
    n_params = sum(p.numel() for p in loaded.model.parameters())
    reset_peak(device)

    by_decode = {}
    for setting in settings:
        engine.runner.decode_graphs = setting
        by_decode[decode_label(engine.runner)] = _time_engine(engine, pairs, combos, group, device)
    timed = by_decode[decode_label(engine.runner)]  # the last: graphs when compared
    naive_items = pairs[: min(naive_n, n)]
    sync(device)
    started = time.perf_counter()
    naive_records = [naive_pair(engine, p, engine.serving) for p in naive_items]
    sync(device)
    naive_s = time.perf_counter() - started
    agreement = class_agreement(naive_items, timed["records"], naive_records, combos)
    peak = peak_tflops(device)
    decodes: dict[str, Any] = {}
    if len(by_decode) > 1:  # `--decode-graphs compare`: the eager run, then the graphs'
        eager, graphs = by_decode.values()
        decodes = {
            "engine_by_decode": {k: _engine_record(v, n, n_params, peak) for k, v in by_decode.items()},
            "decode_classes_agree": _same_classes(eager["records"], graphs["records"], combos),
        }
    return {
        "benchmark": "discovery",
        "model": loaded.source.name,
        "device_map": device_map,
        "gpus_used": sorted({str(p.device) for p in loaded.model.parameters()}),
        "n_parameters": n_params,
        "device": device,
        "gpu": gpu_name(device),
        "dtype": loaded.dtype,
        "attn_implementation": loaded.attn_implementation,
        "fused_kernels": loaded.fused_kernels,
        "serving": engine.serving,
        "batch_pairs": group,
        "n_pairs": n,
        "naive_pairs": len(naive_items),
        "decode": decode_label(engine.runner),
        "engine": _engine_record(timed, n, n_params, peak),
        **decodes,
        "naive": {"seconds": round(naive_s, 3), "pairs_per_s": round(len(naive_items) / naive_s, 3)},
        "speedup": round((n / timed["seconds"]) / (len(naive_items) / naive_s), 2),
        "class_agreement": agreement,
        "peak_memory_gib": round(peak_memory(device)[0], 2),
        "peak_bf16_tflops": peak,
        "machine": machine(),
    }


def _time_engine(engine: Any, pairs: list, combos: list, group: int, device: str) -> dict[str, Any]:
    """The engine over `pairs` after an untimed warm-up (kernels, allocator): seconds in all, in
    prefill and in scoring, prefill tokens (the shared prefix once per pair), and the records."""
    from matbench.engine.batches import BatchTimes, score_in_batches

    engine.score_many([(pairs[0], *engine.prepare(pairs[0]))], combos)
    engine.release_memory()  # the timed run prefills everything itself
    times, tokens, records = BatchTimes(), 0, []
    sync(device)
    started = time.perf_counter()
    for batch in score_in_batches(engine, pairs, combos, group, sync=lambda: sync(device), times=times):
        for (_, layout, _), scored in batch:
            records.append(scored)
            a, b = layout.members
            tokens += len(a.input_ids) + (len(b.input_ids) - layout.prefix_tokens if a != b else 0)
    return {
        "seconds": time.perf_counter() - started,
        "prefill_s": times.prefill_s,
        "score_s": times.score_s,
        "prefill_tokens": tokens,
        "records": records,
    }


def _engine_record(timed: dict[str, Any], n: int, n_params: int, peak: float | None) -> dict[str, Any]:
    prefill_s, tokens = timed["prefill_s"], timed["prefill_tokens"]
    return {
        "seconds": round(timed["seconds"], 3),
        "pairs_per_s": round(n / timed["seconds"], 3),
        "prefill_seconds": round(prefill_s, 3),
        "serve_probe_decode_seconds": round(timed["score_s"], 3),
        "serve_probe_decode_share": round(timed["score_s"] / timed["seconds"], 3),
        "prefill_tokens": tokens,
        "prefill_tokens_per_s": round(tokens / prefill_s, 1),
        "prefill_mfu": round(2 * n_params * tokens / prefill_s / (peak * 1e12), 4) if peak else None,
    }


def class_agreement(pairs: list, engine_records: list, naive_records: list, combos: list) -> dict[str, Any]:
    """Outcome classes of the engine and the naive path, probe and short, with the naive probe
    margins of every disagreement (near-ties explain low-precision flips)."""
    compared, flips = 0, []
    for pair, eng, nav in zip(pairs, engine_records, naive_records):
        for arm, n_arm in nav["arms"].items():
            probe, short = eng[combos[0]].arms[arm], eng[combos[1]].arms[arm]
            for key, got, ref in (
                ("probe", probe.outcome, n_arm["probe_class"]),
                ("short", short.outcome, n_arm["class"]),
            ):
                compared += 1
                if got != ref:
                    margins = [abs(x[0] - x[1]) if len(x) == 2 else None for x in n_arm["probe_logp"]]
                    flips.append(
                        {
                            "item": pair.item_id,
                            "arm": arm,
                            "readout": key,
                            "engine": got,
                            "naive": ref,
                            "naive_probe_margins": margins,
                        }
                    )
    agree = compared - len(flips)
    return {
        "compared": compared,
        "agree": agree,
        "rate": round(agree / compared, 4) if compared else None,
        "flips": flips,
    }


def _same_classes(first: list, second: list, combos: list) -> dict[str, int]:
    """How many (pair, combo, arm) outcome classes two engine runs share."""
    pairs = [
        (a[c].arms[arm].outcome, b[c].arms[arm].outcome)
        for a, b in zip(first, second)
        for c in combos
        for arm in a[c].arms
    ]
    return {"compared": len(pairs), "agree": sum(x == y for x, y in pairs)}
