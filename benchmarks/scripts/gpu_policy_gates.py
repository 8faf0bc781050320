# Serving policies on a GPU with random weights of a real shape (float32, so the gates are exact):
# every faithfulness gate under the oracle and under recent:64, and what the policy's selection did.
# `python benchmarks/scripts/gpu_policy_gates.py TOKENIZER_DIR OUT.json`
import json
import sys

from matbench.data_gen import SUITES
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies import parse_policy
from matbench.models.shapes import random_model

tokenizer, out_path = sys.argv[1], sys.argv[2]
loaded = random_model("qwen3-8b", "cuda", "float32", "sdpa_grouped", tokenizer=tokenizer, fused_kernels="on")
out = {"model": "random:qwen3-8b", "dtype": "float32", "attn_implementation": "sdpa_grouped", "fused_kernels": True}
for spec in ("oracle", "recent:64"):
    engine = PairEngine(loaded, policy=parse_policy(spec))
    rows = []
    for pair in SUITES.get("discovery").generate(0, 8):
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        gates = run_gates(engine, pair, layout, caches, record)
        rows.append({"item": pair.item_id, "gates": {g.name: [g.passed, g.max_abs_diff] for g in gates},
                     "selection": {a: r.selection.to_json() for a, r in record.arms.items() if r.selection},
                     "classes": {a: r.outcome for a, r in record.arms.items()}})
    out[spec] = {"all_gates_pass": all(p for r in rows for p, _ in r["gates"].values()), "pairs": rows}
    print(spec, out[spec]["all_gates_pass"], flush=True)
with open(out_path, "w") as fh:
    json.dump(out, fh, indent=1)
