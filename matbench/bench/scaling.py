"""Several GPUs against one, side by side in one `torchrun` launch.

Rank 0 first runs every pair alone (the one-GPU time); then every rank runs its block of the
same pairs at once (`matbench.distributed.Shard.block`, as `matbench eval` shards them); the
records are gathered and the outcome classes of the two runs compared item by item.
"""

from __future__ import annotations

import time
from typing import Any

from matbench.bench.common import BENCHMARKS, load_for_bench, machine, sync
from matbench.engine.memory import peak_memory
from matbench.errors import MatbenchError


@BENCHMARKS.register("scaling")
def scaling(
    n: int = 128,
    model: str | None = None,
    shape: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    batch_pairs: int | None = None,
    serving: str = "auto",
    attn_implementation: str | None = None,
    tokenizer: str | None = None,
    fused_kernels: str | None = None,
) -> dict[str, Any] | None:
    """Discovery pairs/s on one process and on all, their ratio, and class agreement."""
    from matbench.data_gen import SUITES
    from matbench.engine.pair_engine import PairEngine
    from matbench.run.distributed import Shard

    shard = Shard.from_env()
    if not shard.active:
        raise MatbenchError(
            "scaling compares one process with several: launch it as "
            "torchrun --nproc-per-node N -m matbench bench scaling ..."
        )
    shard.start()
    try:
        loaded = load_for_bench(
            model, shape, shard.device(device), dtype, attn_implementation, tokenizer, fused_kernels=fused_kernels
        )
        device = loaded.device
        engine = PairEngine(loaded, serving=serving)
        pairs = SUITES.get("discovery").generate(0, n)
        group = batch_pairs or (8 if device.startswith("cuda") else 2)
        combos = [("probe", engine.serving), ("short", engine.serving)]

        one_s, one, all_s, gathered = _time_one_and_all(engine, pairs, combos, group, device, shard)
        if not shard.is_main:
            return None
        together = [r for records, _ in gathered for r in records]
        return {
            "benchmark": "scaling",
            "model": loaded.source.name,
            "device": device,
            "dtype": loaded.dtype,
            "attn_implementation": loaded.attn_implementation,
            "fused_kernels": loaded.fused_kernels,
            "serving": engine.serving,
            "batch_pairs": group,
            "n_pairs": n,
            "processes": shard.world_size,
            "one": {"seconds": round(one_s, 3), "pairs_per_s": round(n / one_s, 3)},
            "all": {
                "seconds": round(all_s, 3),
                "pairs_per_s": round(n / all_s, 3),
                "pairs_per_rank": [len(records) for records, _ in gathered],
            },
            "speedup": round(one_s / all_s, 3),
            "efficiency": round(one_s / all_s / shard.world_size, 3),
            "class_agreement": _agreement(one, together, combos),
            "peak_memory_gib_per_rank": [mem for _, mem in gathered],
            "machine": machine(),
        }
    finally:
        shard.stop()


def _time_one_and_all(engine: Any, pairs: list, combos: list, group: int, device: str, shard: Any) -> tuple:
    """Rank 0 alone over every pair, then every rank over its block, each after an untimed warm-up;
    (one-process seconds, its records, all-process seconds, [(records, peak GiB)] per rank)."""
    import torch.distributed as dist

    from matbench.engine.batches import score_in_batches

    def run(items: list) -> list[dict]:
        records = [r for batch in score_in_batches(engine, items, combos, group) for _, r in batch]
        sync(device)
        return records

    run(pairs[:group])  # warm-up on every rank, not timed
    engine.release_memory()
    shard.barrier()
    one_s, one = None, None
    if shard.is_main:
        started = time.perf_counter()
        one = run(pairs)
        one_s = time.perf_counter() - started
        engine.release_memory()
    shard.barrier()
    started = time.perf_counter()
    mine = run(shard.block(pairs))
    shard.barrier()
    all_s = time.perf_counter() - started
    gathered: list = [None] * shard.world_size
    dist.all_gather_object(gathered, (mine, round(peak_memory(device)[0], 2)))
    return one_s, one, all_s, gathered


def _agreement(one: list, together: list, combos: list) -> dict[str, Any]:
    """Outcome classes of one process against all, per readout and arm, with the probe margins of
    every flip."""
    compared, flips = 0, []
    for a, b in zip(one, together):
        for combo in combos:
            for arm, entry in a[combo].arms.items():
                compared += 1
                other = b[combo].arms[arm]
                if entry.outcome != other.outcome:
                    margins = [abs(x[0] - x[1]) if len(x) == 2 else None for x in entry.probe_logp]
                    flips.append(
                        {
                            "item": a[combo].item_id,
                            "arm": arm,
                            "readout": combo[0],
                            "one": entry.outcome,
                            "all": other.outcome,
                            "probe_margins": margins,
                        }
                    )
    agree = compared - len(flips)
    return {
        "compared": compared,
        "agree": agree,
        "rate": round(agree / compared, 4) if compared else None,
        "flips": flips,
    }
