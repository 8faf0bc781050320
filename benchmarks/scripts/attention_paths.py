# One attention call of a suffix prefill after a contiguous past, at Qwen3-8B's head shape (32 query
# heads, 8 KV heads, head_dim 128, bf16): `sdpa_grouped` with the explicit [T, K] mask (the
# memory-efficient kernel, every block computed) against the mask left out (`causal=True` after a
# past: the flash kernel's lower-right causal path), timed with CUDA events, with their largest
# output difference. `python benchmarks/scripts/attention_paths.py --out OUT.json`
import argparse
import json

import torch

from matbench.bench.records import script_provenance
from matbench.kernels.attention import grouped_sdpa_forward

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--queries", type=int, nargs="+", default=[1024, 4096, 16384])
parser.add_argument("--past", type=int, nargs="+", default=[4096, 16384, 32768])
parser.add_argument("--repeats", type=int, default=5)
args = parser.parse_args()

heads, kv_heads, dim = 32, 8, 128


def timed(fn) -> float:
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / args.repeats


def measure(queries: int, past: int) -> dict:
    keys, scale, module = past + queries, dim**-0.5, torch.nn.Module()
    q = torch.randn(1, heads, queries, dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(1, kv_heads, keys, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    mask = torch.ones(queries, keys, dtype=torch.bool, device="cuda").tril(past)[None, None]
    explicit = grouped_sdpa_forward(module, q, k, v, mask, scaling=scale)[0]
    left_out = grouped_sdpa_forward(module, q, k, v, None, scaling=scale)[0]
    row = {
        "queries": queries,
        "past": past,
        "explicit_ms": round(timed(lambda: grouped_sdpa_forward(module, q, k, v, mask, scaling=scale)), 3),
        "causal_ms": round(timed(lambda: grouped_sdpa_forward(module, q, k, v, None, scaling=scale)), 3),
        "max_abs_diff": float((explicit.float() - left_out.float()).abs().max()),
    }
    # the attention FLOPs the causal mask needs (the triangle after the past), per second
    visible = queries * past + queries * (queries + 1) / 2
    row["causal_tflops"] = round(4 * visible * heads * dim / (row["causal_ms"] / 1e3) / 1e12, 1)
    row["speedup"] = round(row["explicit_ms"] / row["causal_ms"], 2)
    return row


rows = []
for queries in args.queries:
    for past in args.past:
        rows.append(measure(queries, past))
        print(rows[-1], flush=True)
out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "shape": "qwen3-8b heads", "rows": rows}
out.update(script_provenance("cuda"))
with open(args.out, "w") as f:
    json.dump(out, f, indent=1)
