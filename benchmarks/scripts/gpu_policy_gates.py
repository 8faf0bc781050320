# Serving policies on a GPU with random weights of a real shape (float32, so the gates are exact):
# every faithfulness gate under the oracle, under recent:64, and under a per-head variant of
# recent:64 (every other KV head of every layer also drops the oldest quarter of the window, so
# the head_mask gate runs), and what each policy's selection did.
# `python benchmarks/scripts/gpu_policy_gates.py TOKENIZER_DIR OUT.json`
import json
import sys
from dataclasses import dataclass

import numpy as np

from matbench.data_gen import SUITES
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies import parse_policy
from matbench.engine.policies.base import KeptRows, ServingPolicy
from matbench.engine.policies.recent import RecentTokens
from matbench.models.shapes import random_model


@dataclass(frozen=True)
class HalfHeadsShorter(ServingPolicy):
    """recent:n, where KV heads of odd index keep only the newest three quarters of the window."""

    n: int
    shape: tuple[int, int]
    name = "recent-by-head"

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.n}"

    def keep(self, arm, member, cache, context=None):
        slots = RecentTokens(self.n).keep(arm, member, cache)
        heads = np.ones((*self.shape, len(slots)), dtype=bool)
        header = member.header_span[1] - member.header_span[0]
        heads[:, 1::2, header : header + self.n // 4] = False
        return KeptRows(slots, heads)


tokenizer, out_path = sys.argv[1], sys.argv[2]
loaded = random_model("qwen3-8b", "cuda", "float32", "sdpa_grouped", tokenizer=tokenizer, fused_kernels="on")
out = {"model": "random:qwen3-8b", "dtype": "float32", "attn_implementation": "sdpa_grouped", "fused_kernels": True}
shape = (loaded.text_config.num_hidden_layers, loaded.text_config.num_key_value_heads)
for spec, policy in (
    ("oracle", parse_policy("oracle")),
    ("recent:64", parse_policy("recent:64")),
    ("recent-by-head:64", HalfHeadsShorter(64, shape)),
):
    engine = PairEngine(loaded, policy=policy)
    rows = []
    for pair in SUITES.get("discovery").generate(0, 8):
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        gates = run_gates(engine, pair, layout, caches, record)
        rows.append(
            {
                "item": pair.item_id,
                "gates": {g.name: [g.passed, g.max_abs_diff] for g in gates},
                "selection": {a: r.selection.to_json() for a, r in record.arms.items() if r.selection},
                "classes": {a: r.outcome for a, r in record.arms.items()},
            }
        )
    out[spec] = {"all_gates_pass": all(p for r in rows for p, _ in r["gates"].values()), "pairs": rows}
    print(spec, out[spec]["all_gates_pass"], flush=True)
with open(out_path, "w") as fh:
    json.dump(out, fh, indent=1)
