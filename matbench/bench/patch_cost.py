"""Patch against recompute (the paper's kv_timing.py): the time to the first answer token of an
out-of-band update served as an appended patch, against re-prefilling the whole log.

kv_timing's log at two scales (24 and 384 `reg_op()` steps after the header; with Qwen3-8B's
tokenizer about 0.7k and 9.2k tokens): decoy@0 "register D set to state OFFLINE", source@n/2
"register S set to state ONLINE", carrier@n-1 "register T mirrors register S", fillers between; the
patch is step n+1, `memory_patch()`: "register S set to state OFFLINE   [S version 2]"; the
question "What state is register T in now?" with the menu. After one global prefill (not timed: it
is paid once, at write time), three paths to the first answer token, each timed as the median of
`reps` runs after a warm-up (device-synchronised):

- reuse: gather the decoy's and carrier's rows, serve them (compactly, or natively at their own
  positions on a sliding-window model, as `matbench eval`'s `--serving auto` does), forward the question;
- patch: the same, forwarding the patch step and the question;
- recompute: one forward of the header, every step, the patch and the question from scratch.

The record names the model, device, dtype, attention implementation and serving mode, every token count, and
patch / recompute, the paper's ratio (77 ms against 1,033 ms at 9.2k tokens on one GPU).
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from matbench.bench.common import BENCHMARKS, gpu_name, load_for_bench, machine, sync
from matbench.data_gen.base import REGISTER_POOL
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

SCALES = (24, 384)  # kv_timing's n_events


def timing_pair(n_events: int, seed: int = 0) -> DonorPair:
    """kv_timing build_log's log as a pair (both members identical: nothing is compared)."""
    rng = random.Random(seed)
    decoy, source, target = rng.sample(REGISTER_POOL, 3)
    others = [x for x in REGISTER_POOL if x not in (decoy, source, target)]
    bodies = [f"register {rng.choice(others)} refreshed to {rng.randrange(100, 999)}" for _ in range(n_events)]
    m = n_events // 2
    bodies[0] = f"register {decoy} set to state OFFLINE"
    bodies[m] = f"register {source} set to state ONLINE"
    bodies[-1] = f"register {target} mirrors register {source}"
    patch = f"memory_patch(){TOOL_SEPARATOR}register {source} set to state OFFLINE   [{source} version 2]"
    question = f"What state is register {target} in now?"
    served = (0, n_events - 1)
    arms = (
        Arm("reuse", served, question),
        Arm("patch", served, question, appended=(patch,)),
        Arm("recompute", tuple(range(n_events)), question, uses_source=True, encoding="text", appended=(patch,)),
    )
    return DonorPair(
        item_id=f"patch-cost-{n_events}",
        events=tuple(bodies),
        source=m,
        source_bodies=(bodies[m],) * 2,
        values=("ONLINE", "ONLINE"),
        menu=("ONLINE", "OFFLINE"),
        arms=arms,
        paired=False,
        frame="tool_steps",
    )


def median_ms(fn, device: str, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        sync(device)
        started = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(engine: Any, pair: DonorPair, reps: int) -> dict[str, Any]:
    """The three paths' median times to the first answer token on one log, and its token counts."""
    import torch

    from matbench.engine.pair_engine import probe_logits

    layout, caches = engine.prepare(pair)  # the global prefill: write time, not timed
    reuse, patch, _ = pair.arms
    query = engine.query_ids(pair, reuse, engine.probe_readout)
    patched = engine.query_ids(pair, patch, engine.probe_readout)
    member = layout.members[0]
    full = list(member.input_ids) + list(patched)  # the log as one text, the patch and the question
    device = engine.loaded.device

    def serve(arm: Arm):
        return lambda: probe_logits(engine, pair, caches, arm, members=(0,), serving=engine.serving)

    def recompute() -> None:
        engine.runner.plain_forward(torch.tensor([full]), torch.tensor([list(range(len(full)))]))

    with torch.no_grad():
        times = {
            "reuse_ms": median_ms(serve(reuse), device, reps),
            "patch_ms": median_ms(serve(patch), device, reps),
            "recompute_ms": median_ms(recompute, device, reps),
        }
    served_rows = sum(hi - lo for lo, hi in (member.event_spans[i] for i in reuse.served))
    return {
        "context_tokens": layout.length,
        "served_rows": served_rows + member.header_span[1],
        "question_tokens": len(query),
        "patch_tokens": len(patched) - len(query),
        "recompute_tokens": len(full),
        **{k: round(v, 2) for k, v in times.items()},
        "patch_over_recompute": round(times["patch_ms"] / times["recompute_ms"], 4),
        "patch_overhead_ms": round(times["patch_ms"] - times["reuse_ms"], 2),
    }


@BENCHMARKS.register("patch-cost")
def patch_cost(
    model: str | None = None,
    shape: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    attn_implementation: str | None = None,
    tokenizer: str | None = None,
    fused_kernels: str | None = None,
    n: int = 5,
    events: int = SCALES[1],
    serving: str = "auto",
) -> dict[str, Any]:
    """`n`: measured repetitions per path (the median is kept; kv_timing: 5); `events`: steps of
    the long log (kv_timing: 384); `serving`: how the kept rows are served (auto: native where the
    model has sliding-window layers, as the protocol serves them, else compact)."""

    from matbench.engine.pair_engine import PairEngine

    loaded = load_for_bench(model, shape, device, dtype, attn_implementation, tokenizer, fused_kernels=fused_kernels)
    engine = PairEngine(loaded, serving=serving)
    scales = {f"N{n_events}": measure(engine, timing_pair(n_events), n) for n_events in (SCALES[0], events)}
    return {
        "benchmark": "patch-cost",
        "model": loaded.source.name,
        "device": loaded.device,
        "gpu": gpu_name(loaded.device),
        "dtype": loaded.dtype,
        "attn_implementation": loaded.attn_implementation,
        "serving": engine.serving,
        "repetitions": n,
        "scales": scales,
        "paper": {"patch_ms": 77, "recompute_ms": 1033, "context_tokens": 9200, "model": "Qwen3-8B"},
        "machine": machine(),
    }
