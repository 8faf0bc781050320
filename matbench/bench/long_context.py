"""The harvest geometry: one long context prefilled in chunks, then many sparse native serves.

A `context`-token trajectory (random token ids: only the shapes matter for time and memory) is
prefilled in `chunk_size` chunks into one cache with every row kept (sliding-window layers
included). Then `requests` requests each serve the header and 4 of its 512-token events (the
harvest suite's top-4 carrier turns), natively at position L: probe forward and 12 greedy tokens.
Reports prefill tokens/s and dense MFU, serving and decoding times, and peak memory of each
phase; and, on the same 2 requests, the peak memory of the literal native layout (all L positions,
dropped rows masked) against the gathered one the engine serves.
"""

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
from matbench.errors import MatbenchError

HEADER, EVENT, SERVED, QUERY, NEW_TOKENS = 256, 512, 4, 48, 12


@BENCHMARKS.register("long-context")
def long_context(
    context: int = 32768,
    chunk_size: int = 4096,
    requests: int = 8,
    model: str | None = None,
    shape: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    serving: str = "auto",
    attn_implementation: str | None = None,
    tokenizer: str | None = None,
    fused_kernels: str | None = None,
    decode_graphs: str | None = None,
) -> dict[str, Any]:
    import torch

    from matbench.engine.pair_engine import PairEngine
    from matbench.engine.serving import SERVING, ServeRequest

    if context < HEADER + SERVED * EVENT or chunk_size < 1 or requests < 1:
        raise MatbenchError(
            f"--context must be at least {HEADER + SERVED * EVENT} tokens, --chunk-size and --requests at least 1"
        )
    loaded = load_for_bench(model, shape, device, dtype, attn_implementation, tokenizer, fused_kernels=fused_kernels)
    device = loaded.device
    settings = decode_settings(decode_graphs, device)
    engine = PairEngine(loaded, serving=serving)
    runner = engine.runner
    gen = torch.Generator().manual_seed(0)
    vocab = min(len(loaded.tokenizer), loaded.text_config.vocab_size)
    ids = torch.randint(1000, vocab, (context,), generator=gen).tolist()
    spans = [(lo, min(lo + EVENT, context)) for lo in range(HEADER, context, EVENT)]
    n_params = sum(p.numel() for p in loaded.model.parameters())
    prefill_s, prefill_peak, cache = _time_prefill(runner, ids, spans, chunk_size, device)
    # Request k serves 4 events spread over the context (as carrier turns are), each its own.
    served = [
        tuple(sorted({(k + j * len(spans) // SERVED) % len(spans) for j in range(SERVED)})) for k in range(requests)
    ]
    query = tuple(torch.randint(1000, vocab, (QUERY,), generator=gen).tolist())
    reqs = [ServeRequest(cache, s, query) for s in served]
    decodes, serving_times = {}, None
    for setting in settings:  # decoding eagerly, then from CUDA graphs, when compared
        runner.decode_graphs = setting
        # serving and its memory once (the first setting); the layouts' peaks need not be measured again
        timed = _time_serving(
            runner, SERVING[engine.serving], reqs, device, native=engine.serving == "native" and serving_times is None
        )
        serving_times = serving_times or timed
        decode_s, tokens = timed[1], timed[4]
        decodes[decode_label(runner)] = {
            "seconds": round(decode_s, 3),
            "new_tokens": NEW_TOKENS,
            "tokens_per_s": round(requests * NEW_TOKENS / decode_s, 1),
            "tokens": tokens,
        }
    assert serving_times is not None  # decode_settings gives at least one setting
    serve_s, _, serve_peak, layouts, _ = serving_times
    peak = peak_tflops(device)
    kept = HEADER + SERVED * EVENT
    return {
        "benchmark": "long-context",
        "model": loaded.source.name,
        "n_parameters": n_params,
        "device": device,
        "gpu": gpu_name(device),
        "dtype": loaded.dtype,
        "attn_implementation": loaded.attn_implementation,
        "fused_kernels": loaded.fused_kernels,
        "serving": engine.serving,
        "context_tokens": context,
        "chunk_size": chunk_size,
        "requests": requests,
        "kept_rows_per_request": kept,
        "prefill": {
            "seconds": round(prefill_s, 3),
            "tokens_per_s": round(context / prefill_s, 1),
            "dense_mfu": round(2 * n_params * context / prefill_s / (peak * 1e12), 4) if peak else None,
            "peak_memory_gib": round(prefill_peak, 2),
        },
        "serve_probe": {"seconds": round(serve_s, 3), "requests_per_s": round(requests / serve_s, 2)},
        "decode": {k: v for k, v in decodes[decode_label(runner)].items() if k != "tokens"}
        | {"mode": decode_label(runner)},
        **(
            {
                "decode_by_mode": {k: {x: y for x, y in v.items() if x != "tokens"} for k, v in decodes.items()},
                "decode_same_tokens": len({str(v["tokens"]) for v in decodes.values()}) == 1,
            }
            if len(decodes) > 1
            else {}
        ),
        "serving_peak_memory_gib": round(serve_peak, 2),
        "native_layout_peak_memory_gib_2_requests": layouts or None,
        "peak_bf16_tflops": peak,
        "machine": machine(),
    }


def _reset(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    reset_peak(device)


def _time_prefill(runner: Any, ids: list[int], spans: list, chunk_size: int, device: str) -> tuple:
    """The chunked global prefill of the whole context after a one-chunk warm-up: (seconds, peak
    GiB, its EventCache)."""
    from matbench.engine.cache import EventCache
    from matbench.engine.prefill import prefill_rows

    context = len(ids)
    prefill_rows(runner, [(tuple(ids[:chunk_size]), tuple(range(min(chunk_size, context))))])  # warm-up
    _reset(device)
    sync(device)
    started = time.perf_counter()
    rows = prefill_rows(runner, [(tuple(ids), tuple(range(context)))], chunk_size=chunk_size)[0]
    sync(device)
    seconds = time.perf_counter() - started
    cache = EventCache(tuple(rows.keys), tuple(rows.values), rows.positions, (0, HEADER), tuple(spans), context)
    return seconds, peak_memory(device)[0], cache


def _time_serving(runner: Any, serve: Any, reqs: list, device: str, native: bool) -> tuple:
    """Serving (with the probe) and greedy decoding of every request together after a warm-up:
    (serve seconds, decode seconds, peak GiB, and for native serving the peak of two requests in
    the gathered and in the literal layout)."""
    from matbench.engine.decode import greedy_decode

    def serve_and_decode(batch_reqs: list, **kw) -> tuple[float, float, list]:
        sync(device)
        t0 = time.perf_counter()
        batch, first = serve(runner, batch_reqs, reserve=NEW_TOKENS, **kw)
        sync(device)
        t1 = time.perf_counter()
        tokens = greedy_decode(runner, batch, first, NEW_TOKENS, stop_ids=set())
        sync(device)
        return t1 - t0, time.perf_counter() - t1, tokens

    serve_and_decode(reqs[:1])  # warm-up
    _reset(device)
    serve_s, decode_s, tokens = serve_and_decode(reqs)
    serve_peak = peak_memory(device)[0]
    layouts = {}
    for name, kw in (("gathered", {}), ("literal", {"full_layout": True})) if native else ():
        _reset(device)
        serve_and_decode(reqs[:2], **kw)
        layouts[name] = round(peak_memory(device)[0], 2)
    return serve_s, decode_s, serve_peak, layouts, tokens
