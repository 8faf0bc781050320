"""Where a batch's scoring time goes: `PairEngine.score_many` on 32 discovery pairs at Qwen3-8B
shape (random weights, bf16, `sdpa_grouped`, fused kernels), timed with the probe readout alone and
with probe + short, decoding eagerly and from CUDA graphs, then once under cProfile (host time by
function). Run on a GPU machine from outside the repository root, with matbench importable:

    python benchmarks/scripts/score_profile.py TOKENIZER_DIR   # e.g. SmolLM2's tokenizer files
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import torch

from matbench.data_gen import SUITES
from matbench.engine.pair_engine import PairEngine
from matbench.models.shapes import random_model


def main(tokenizer: str) -> None:
    loaded = random_model("qwen3-8b", "cuda", "bfloat16", "sdpa_grouped", tokenizer=tokenizer)
    engine = PairEngine(loaded)
    pairs = SUITES.get("discovery").generate(0, 33)
    combos = [("probe", engine.serving), ("short", engine.serving)]
    engine.score_many([(pairs[0], *engine.prepare(pairs[0]))], combos)  # warm-up: compiles, allocator
    items = engine.prepare_many(pairs[1:33])
    torch.cuda.synchronize()
    for graphs in (False, True):
        engine.runner.decode_graphs = graphs
        engine.score_many(items, combos)
        torch.cuda.synchronize()
        timed = {}
        for name, chosen in (("probe only", combos[:1]), ("probe+short", combos)):
            started = time.perf_counter()
            engine.score_many(items, chosen)
            torch.cuda.synchronize()
            timed[name] = time.perf_counter() - started
        print(f"graphs={graphs}: " + ", ".join(f"{k} {v:.3f} s" for k, v in timed.items()))
    profile = cProfile.Profile()
    profile.enable()
    engine.score_many(items, combos)
    torch.cuda.synchronize()
    profile.disable()
    for key, lines in (("cumulative", 28), ("tottime", 15)):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(key).print_stats(lines)
        print(out.getvalue())


if __name__ == "__main__":
    main(sys.argv[1])
