# The attention default on a GPU, decided on real weights: each model through `sdpa_grouped` and
# through eager (every other setting its device default: fused kernels and graph decoding on
# CUDA), every faithfulness gate on every pair, then both paths' outcome classes and probe
# log-probs compared arm by arm, and their times.
# `python benchmarks/scripts/default_attention.py --out OUT.json [--models A B ...] [--n 64]`
# (the offline aliases by default; --device cpu runs the same comparison on the CPU).
import argparse
import json
import time

import torch

from matbench.bench.records import script_provenance
from matbench.data_gen import SUITES
from matbench.engine.batches import score_in_batches
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.models.loading import load_model

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"])
parser.add_argument("--attn", nargs=2, default=["sdpa_grouped", "eager"], help="candidate, then reference")
parser.add_argument("--suite", default="discovery")
parser.add_argument("--readout", default="probe", help="short where a tokenizer cannot tell the probe's answers apart")
parser.add_argument("--n", type=int, default=64)
parser.add_argument("--batch-pairs", type=int, default=32)
parser.add_argument("--device", default="cuda")
parser.add_argument("--dtype", default=None, help="default: the device's (bfloat16 on CUDA, float32 on the CPU)")
args = parser.parse_args()

sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
pairs = SUITES.get(args.suite).generate(0, args.n)
out = {"suite": args.suite, "pairs": len(pairs), "device": args.device, "models": {}}
out.update(script_provenance(args.device))
if args.device.startswith("cuda"):
    out["gpu"] = torch.cuda.get_device_name()


def run(model: str, attn: str) -> tuple[dict, list]:
    loaded = load_model(model, device=args.device, dtype=args.dtype, attn_implementation=attn, progress=False)
    engine = PairEngine(loaded)
    combos = [(args.readout, engine.serving)]
    failed, worst, records = [], {}, []
    start = time.perf_counter()
    for batch in score_in_batches(engine, pairs, combos, args.batch_pairs, sync=sync):
        for (pair, layout, caches), by_combo in batch:
            records.append(by_combo[combos[0]])
            for gate in run_gates(engine, pair, layout, caches, records[-1]):
                if gate.max_abs_diff is not None:  # None: the gate does not apply to the pair (skipped)
                    worst[gate.name] = max(worst.get(gate.name, 0.0), gate.max_abs_diff)
                if not gate.passed:
                    failed.append([pair.item_id, gate.name, gate.max_abs_diff])
    sync()
    summary = {
        "describe": loaded.describe(),
        "seconds_with_gates": round(time.perf_counter() - start, 2),
        "gates_failed": failed,
        "gate_max_abs_diff": worst,
    }
    del engine, loaded
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return summary, records


for model in args.models:
    by_attn, records = {}, {}
    for attn in args.attn:
        by_attn[attn], records[attn] = run(model, attn)
        print(model, attn, json.dumps({k: v for k, v in by_attn[attn].items() if k != "describe"}), flush=True)
    candidate, reference = (records[a] for a in args.attn)
    arms = [(a.arms[k], b.arms[k]) for a, b in zip(candidate, reference) for k in a.arms]
    by_attn["arms"] = len(arms)
    by_attn["same_outcome"] = sum(x.outcome == y.outcome for x, y in arms)
    by_attn["max_abs_probe_logp_diff"] = max(
        (abs(p - q) for x, y in arms for u, v in zip(x.probe_logp, y.probe_logp) for p, q in zip(u, v)),
        default=None,
    )
    out["models"][model] = by_attn
    print(model, "same outcome", by_attn["same_outcome"], "of", len(arms), flush=True)
    with open(args.out, "w") as fh:  # after each model: a run stopped early keeps the models it finished
        json.dump(out, fh, indent=1)
