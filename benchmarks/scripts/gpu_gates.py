# The faithfulness gates on a GPU with random weights of real shapes (float32 exact, bf16 argmax),
# each shape first as transformers runs it and then with matbench's fused kernels (matbench.fused),
# plus how far the fused probe log-probs are from the unfused ones.
# `python benchmarks/scripts/gpu_gates.py OUT.json` with tokenizer folders at /tmp/tok/{smollm2,gemma}.
import json
import sys

import torch

from matbench.data_gen import SUITES
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.kernels import fused
from matbench.models.shapes import random_model

out = {}
for shape, tok, impl, dtype in [
    ("qwen3-8b", "/tmp/tok/smollm2", "sdpa_grouped", "float32"),
    ("qwen3-8b", "/tmp/tok/smollm2", "eager", "float32"),
    ("gemma3-12b", "/tmp/tok/gemma", "sdpa_grouped", "float32"),
    ("gemma3-12b", "/tmp/tok/gemma", "sdpa_grouped", "bfloat16"),
]:
    loaded = random_model(shape, "cuda", dtype, impl, tokenizer=tok, fused_kernels="off")
    probes = {}
    for kernels in ("unfused", "fused"):
        if kernels == "fused":
            fused.fuse(loaded.model)
            loaded.fused_kernels = True
        engine = PairEngine(loaded)
        res, probes[kernels] = [], []
        for pair in SUITES.get("discovery").generate(0, 3):
            layout, caches = engine.prepare(pair)
            record = engine.score(pair, layout, caches)
            res.append({g.name: (g.passed, g.max_abs_diff) for g in run_gates(engine, pair, layout, caches, record)})
            probes[kernels] += [(a.probe_logp, a.outcome) for a in record.arms.values()]
        key = f"{shape}/{impl}/{dtype}/{kernels}"
        out[key] = res
        print(key, json.dumps(res), flush=True)
        del engine
    diff = max(
        abs(x - y)
        for (u, _), (f, _) in zip(probes["unfused"], probes["fused"])
        for um, fm in zip(u, f)
        for x, y in zip(um, fm)
    )
    same = sum(uc == fc for (_, uc), (_, fc) in zip(probes["unfused"], probes["fused"]))
    out[f"{shape}/{impl}/{dtype}/fused-vs-unfused"] = {
        "max_abs_probe_logp_diff": diff,
        "same_class": same,
        "arms": len(probes["fused"]),
    }
    print(
        shape,
        impl,
        dtype,
        "fused vs unfused: max |d probe logp|",
        diff,
        "same class",
        same,
        "of",
        len(probes["fused"]),
        flush=True,
    )
    del loaded
    torch.cuda.empty_cache()
with open(sys.argv[1], "w") as fh:
    json.dump(out, fh, indent=1)
