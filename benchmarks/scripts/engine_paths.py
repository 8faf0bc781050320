# The GPU engine's shared prefixes and batched re-encodings against the one-pair path, on the pairs
# of one harvest dialog (its natural questions, then its injected items): every gate on the fast
# path (gate A checks the shared rows against a plain forward, the encodings gate the batched
# re-encodings), then both paths' outcome classes and probe log-probs compared, and their times.
# `python benchmarks/scripts/engine_paths.py --locomo locomo10.json --tokenizer DIR --out OUT.json [--natural N] [--injected N]`
# (random Qwen3-8B weights in bf16 on cuda by default; --shape, --dtype, --device, --attn to change).
import argparse
import json
import time

import torch

from matbench.bench.records import script_provenance
from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import DialogSources
from matbench.engine.batches import score_in_batches
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.models.shapes import random_model
from matbench.protocol.pairs import prefill_order

parser = argparse.ArgumentParser()
parser.add_argument("--locomo", required=True)
parser.add_argument("--tokenizer", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--shape", default="qwen3-8b")
parser.add_argument("--device", default="cuda")
parser.add_argument("--dtype", default="bfloat16")
parser.add_argument("--attn", default="sdpa_grouped")
parser.add_argument(
    "--natural", type=int, default=4, help="natural questions of the dialog (all its injected items run)"
)
parser.add_argument("--injected", type=int, default=None, help="injected items of the dialog (default: all)")
parser.add_argument("--batch-pairs", type=int, default=8)
args = parser.parse_args()

sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
loaded = random_model(args.shape, args.device, args.dtype, args.attn, tokenizer=args.tokenizer, fused_kernels="off")
pairs = prefill_order(SUITES.get("harvest").generate(0, None, DialogSources(args.locomo, None)), by_context=True)
dialog = pairs[0].variant.split("/")[2]
ours = [p for p in pairs if p.variant.split("/")[2] == dialog]
pairs = [p for p in ours if p.variant.startswith("natural")][: args.natural]
pairs += [p for p in ours if p.variant.startswith("injected")][: args.injected]
out = {"shape": args.shape, "dtype": args.dtype, "attn": args.attn, "dialog": dialog, "pairs": len(pairs)}
records = {}
for fast in (True, False):
    engine = PairEngine(loaded, share_prefixes=fast, batch_encodings=fast)
    start, gates, recs = time.perf_counter(), {}, []
    combos = [("probe", engine.serving)]
    for batch in score_in_batches(engine, pairs, combos, args.batch_pairs, sync=sync):
        for (pair, layout, caches), by_combo in batch:
            rec = by_combo[combos[0]]
            recs.append(rec)
            if fast:
                gates[pair.item_id] = [
                    (g.name, g.passed, g.max_abs_diff) for g in run_gates(engine, pair, layout, caches, rec)
                ]
                print(pair.item_id, pair.variant, gates[pair.item_id], flush=True)
    sync()
    name = "fast" if fast else "one_pair"
    out[f"{name}_seconds"] = round(time.perf_counter() - start, 2)  # the fast path's includes its gates
    if fast:
        out["gates"] = gates
    records[fast] = recs
arms = [(a.arms[k], b.arms[k]) for a, b in zip(records[True], records[False]) for k in a.arms]
out["arms"] = len(arms)
out["same_outcome"] = sum(x.outcome == y.outcome for x, y in arms)
out["max_abs_probe_logp_diff"] = max(
    abs(p - q) for x, y in arms for u, v in zip(x.probe_logp, y.probe_logp) for p, q in zip(u, v)
)
print(json.dumps({k: v for k, v in out.items() if k != "gates"}), flush=True)
out.update(script_provenance(args.device))
with open(args.out, "w") as fh:
    json.dump(out, fh, indent=1)
