"""Serving policies' cost: scoring a member against prefilling it, and a policy's serving pass
against the oracle's (issue 16's `bench policies`; issue 17's target: at most 1.2x oracle serving).

On `n` discovery pairs, after one timed global prefill per batch: for every scoring policy at a
0.5 budget, the selection of both members of every pair (its scoring: for snapkv, tova, h2o,
pyramidkv, adakv and expected_attention an observation forward; then top-k, the donor
discipline and the records), and the whole probe pass of `PairEngine.score_many` under that
policy, against the same pass under the oracle. Each time is the sum over batches, device-
synchronised.
"""

from __future__ import annotations

import time
from typing import Any

from matbench.bench.common import BENCHMARKS, gpu_name, load_for_bench, machine, sync

POLICIES = (
    "random",
    "streaming_llm",
    "knorm",
    "keydiff",
    "snapkv",
    "tova",
    "h2o",
    "pyramidkv",
    "expected_attention",
    "adakv",
    "merging",
)


@BENCHMARKS.register("policies")
def policies_bench(
    model: str | None = None,
    shape: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    attn_implementation: str | None = None,
    tokenizer: str | None = None,
    fused_kernels: str | None = None,
    n: int = 8,
    batch_pairs: int = 8,
    serving: str = "auto",
) -> dict[str, Any]:
    """`n`: discovery pairs; `batch_pairs`: pairs prefilled and served together."""

    from matbench.data_gen import SUITES
    from matbench.engine.pair_engine import PairEngine
    from matbench.engine.policies import parse_policy
    from matbench.engine.policies.setting import PolicySetting

    loaded = load_for_bench(model, shape, device, dtype, attn_implementation, tokenizer, fused_kernels=fused_kernels)
    device = loaded.device
    engine = PairEngine(loaded, serving=serving)
    pairs = SUITES.get("discovery").generate(0, n)
    batches, prefill_s = [], 0.0
    for start in range(0, len(pairs), batch_pairs):
        sync(device)
        t0 = time.perf_counter()
        batches.append(engine.prepare_many(pairs[start : start + batch_pairs]))
        sync(device)
        prefill_s += time.perf_counter() - t0
    tokens = sum(len(m.input_ids) for batch in batches for _, layout, _ in batch for m in layout.members)

    def timed(fn) -> float:
        fn()  # warm-up (compiled kernels, the allocator)
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        return time.perf_counter() - t0

    def serve(setting: PolicySetting) -> None:
        for batch in batches:
            engine.score_many(batch, [("probe", engine.serving, *setting.key)])

    oracle_s = timed(lambda: serve(PolicySetting()))
    out: dict[str, Any] = {}
    for name in POLICIES:
        setting = PolicySetting(parse_policy(f"{name}@0.5"))
        select_s = timed(lambda s=setting: [engine.selections(p, lay, c, s, {}) for b in batches for p, lay, c in b])
        serve_s = timed(lambda s=setting: serve(s))
        out[name] = {
            "select_ms_per_pair": round(1000 * select_s / n, 2),
            "select_over_prefill": round(select_s / prefill_s, 3),
            "serve_ms_per_pair": round(1000 * serve_s / n, 2),
            "serve_over_oracle": round(serve_s / oracle_s, 3),
        }
    return {
        "benchmark": "policies",
        "model": loaded.source.name,
        "device": device,
        "gpu": gpu_name(device),
        "dtype": loaded.dtype,
        "attn_implementation": loaded.attn_implementation,
        "serving": engine.serving,
        "pairs": n,
        "batch_pairs": batch_pairs,
        "prefill_tokens": tokens,
        "budget": "0.5",
        "prefill_ms_per_pair": round(1000 * prefill_s / n, 2),
        "oracle_serve_ms_per_pair": round(1000 * oracle_s / n, 2),
        "policies": out,
        "machine": machine(),
    }
