# The faithfulness gates on a GPU with random weights of real shapes (float32 exact, bf16 argmax):
# `python benchmarks/scripts/gpu_gates.py OUT.json` with tokenizer folders at /tmp/tok/{smollm2,gemma}.
import sys, json, torch
from matbench.shapes import random_model
from matbench.engine import PairEngine
from matbench.gates import run_gates
from matbench.data_gen import SUITES
out = {}
for shape, tok, impl, dtype in [("qwen3-8b", "/tmp/tok/smollm2", "sdpa_grouped", "float32"),
                                ("qwen3-8b", "/tmp/tok/smollm2", "eager", "float32"),
                                ("gemma3-12b", "/tmp/tok/gemma", "sdpa_grouped", "float32"),
                                ("gemma3-12b", "/tmp/tok/gemma", "sdpa_grouped", "bfloat16")]:
    loaded = random_model(shape, "cuda", dtype, impl, tokenizer=tok)
    engine = PairEngine(loaded)
    res = []
    for pair in SUITES.get("discovery").generate(0, 3):
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        res.append({g.name: (g.passed, g.max_abs_diff) for g in run_gates(engine, pair, layout, caches, record)})
    key = f"{shape}/{impl}/{dtype}"
    out[key] = res
    print(key, json.dumps(res), flush=True)
    del engine, loaded; torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
