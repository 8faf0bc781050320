"""Accelerator memory: how many donor pairs fit in a batch, and what a run used at its peak.

`batch_pairs_for` sizes a batch from the free GPU memory before the run starts, by the longest
member among the first pairs and the pairs of most text: per pair, the global-prefill caches of
both members, the served copies of every arm x member, and the largest transient of the prefill
forward (eager attention scores in float32, or the MLP activations). `prefill_chunk` splits a
prefill whose attention would not fit a fixed budget into chunks of queries.
It aims at half the free memory; the out-of-memory back-off in `matbench.evaluate` catches what
the estimate misses, without losing items.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from matbench.errors import MatbenchError

MAX_BATCH_PAIRS = 64
SHARE_OF_FREE = 0.5
# The most one prefill forward's attention transients (masks, and eager attention's scores) may
# take on a GPU; a longer prefill runs in chunks of queries (`prefill_chunk`). A fixed figure,
# not a share of free memory, so that a run chunks alike on any card.
ATTENTION_TRANSIENT_BYTES = 4 * 2**30
CHUNK_STEP = 256
T = TypeVar("T")


def kv_bytes_per_token(text_config: Any, dtype_bytes: int) -> int:
    """Keys and values of one token over every layer."""
    heads = text_config.num_attention_heads
    head_dim = getattr(text_config, "head_dim", None) or text_config.hidden_size // heads
    kv_heads = getattr(text_config, "num_key_value_heads", None) or heads
    return 2 * text_config.num_hidden_layers * kv_heads * head_dim * dtype_bytes


def pair_bytes(text_config: Any, dtype_bytes: int, member_tokens: int, arms: int, eager: bool) -> int:
    """Peak bytes one donor pair adds to a batch (an upper bound: every arm serves every row)."""
    kv = kv_bytes_per_token(text_config, dtype_bytes)
    caches = 2 * member_tokens * kv * 2  # both members, and the copy made while gathering real slots
    # Every arm x member; the query and decoded tokens are written into room kept after the rows
    # (runtime.ReservedLayer), not into a grown copy. Measured at Qwen3-8B shape, 8 pairs of 690
    # tokens: 1.31 GB per pair above the weights at the peak, this estimate 1.37 (benchmarks/
    # discovery-qwen3-8b-reserved-room.json; the batch takes only half the free memory).
    served = arms * 2 * member_tokens * kv
    hidden = text_config.hidden_size
    inter = getattr(text_config, "intermediate_size", 4 * hidden)
    activations = 2 * member_tokens * (4 * hidden + 3 * inter) * dtype_bytes
    if eager:  # both members' scores and masks, as `prefill_chunk` bounds them on a GPU
        whole = attention_transient(
            2, member_tokens, member_tokens, text_config.num_attention_heads, dtype_bytes, True, 1
        )
        activations += min(whole, ATTENTION_TRANSIENT_BYTES)
    return caches + served + activations


def attention_transient(
    rows: int, queries: int, keys: int, heads: int, dtype_bytes: int, eager: bool, masks: int
) -> int:
    """Bytes one forward's attention needs beyond its inputs and weights: per (row, query, key),
    each mask (boolean, with the temporary of its `&`; additive in the dtype under eager) and,
    under eager, every head's scores in the dtype, in float32 for the softmax and back."""
    per_mask = dtype_bytes + 2 if eager else 2
    per_element = masks * per_mask + (heads * (2 * dtype_bytes + 4) if eager else 0)
    return rows * queries * keys * per_element


def prefill_chunk(
    rows: int,
    width: int,
    past: int,
    heads: int,
    dtype_bytes: int,
    eager: bool,
    masks: int = 1,
    budget: int = ATTENTION_TRANSIENT_BYTES,
) -> int | None:
    """Queries per forward for a prefill of `rows` rows of `width` new tokens after `past` keys:
    None when the whole width fits `budget` at once, else the largest multiple of CHUNK_STEP that
    fits (at least CHUNK_STEP). Gemma-3's masks count twice (full and sliding)."""
    keys = past + width
    if attention_transient(rows, width, keys, heads, dtype_bytes, eager, masks) <= budget:
        return None
    per_query = attention_transient(rows, 1, keys, heads, dtype_bytes, eager, masks)
    chunk = max(CHUNK_STEP, budget // per_query // CHUNK_STEP * CHUNK_STEP)
    return chunk if chunk < width else None


def token_groups(items: Sequence[T], size: Callable[[T], int], budget: int) -> list[list[T]]:
    """Consecutive `items` batched while (items in the batch) x (the largest `size`) stays within
    `budget` tokens: what one forward of right-padded rows costs. An item over the budget alone
    is a batch of its own."""
    groups: list[list[T]] = []
    width = 0
    for item in items:
        n = size(item)
        if groups and (len(groups[-1]) + 1) * max(width, n) <= budget:
            groups[-1].append(item)
            width = max(width, n)
        else:
            groups.append([item])
            width = n
    return groups


def batch_pairs_for(
    free_bytes: int, text_config: Any, dtype_bytes: int, member_tokens: int, arms: int, eager: bool
) -> int:
    """Pairs per batch using about half of `free_bytes`, between 1 and MAX_BATCH_PAIRS."""
    per_pair = pair_bytes(text_config, dtype_bytes, member_tokens, arms, eager)
    return max(1, min(MAX_BATCH_PAIRS, int(free_bytes * SHARE_OF_FREE) // per_pair))


def usable_free(free: int, total: int, fraction: float | None, reserved: int) -> int:
    """Bytes this process may still take: the device's free memory, and under a per-process cap
    (`--memory-fraction`) no more than the cap less what the process already holds."""
    if fraction is None:
        return free
    return max(0, min(free, int(fraction * total) - reserved))


def check_memory_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise MatbenchError(f"--memory-fraction must be in (0, 1] (got {fraction})")


def cap_memory(device: str | None, fraction: float) -> None:
    """Cap this process at `fraction` of its GPU's memory (torch's per-process limit), so several
    runs can share one GPU: past the cap torch raises its out-of-memory error, which the batch
    loop answers by halving the batch, instead of one process's cache starving the others."""
    import torch

    from matbench.models.loading import resolve_device

    check_memory_fraction(fraction)
    device = resolve_device(device)
    if not device.startswith("cuda"):
        raise MatbenchError(f"--memory-fraction caps a GPU's memory; this run is on {device}: drop the option")
    # torch wants an index here: a bare "cuda" is the current device.
    index = torch.device(device).index
    torch.cuda.set_per_process_memory_fraction(float(fraction), torch.cuda.current_device() if index is None else index)


def choose_batch_pairs(loaded: Any, pairs: list, layouts: Any, fraction: float | None = None) -> int:
    """The batch for `pairs` on `loaded`'s device: from free memory on a GPU (within the process's
    cap `fraction`, if any), 2 on the CPU.
    `layouts(pairs)` lays out a sample (the engine's `prefetch_layouts`, which keeps them)."""
    import torch

    if not loaded.device.startswith("cuda") or not pairs:
        return 2
    # The first pairs, and those of the most text: a suite's items need not be alike in length
    # (harvest's dialogs run from 21k to 66k tokens, and the first 16 pairs share one dialog).
    longest_texts = heapq.nlargest(4, pairs, key=lambda p: sum(len(t) for t in p.member(0).texts()))
    sample = layouts(list(dict.fromkeys([*pairs[:16], *longest_texts])))
    longest = max(len(m.input_ids) for lay in sample for m in lay.members)
    arms = max(len(lay.pair.arms) for lay in sample)
    device = torch.device(loaded.device)
    free, total = torch.cuda.mem_get_info(device)
    free = usable_free(free, total, fraction, torch.cuda.memory_reserved(device))
    dtype_bytes = torch.finfo(getattr(torch, loaded.dtype)).bits // 8
    return batch_pairs_for(free, loaded.text_config, dtype_bytes, longest, arms, loaded.attn_implementation == "eager")


def reset_peak(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(torch.device(device))


def peak_memory(device: str) -> tuple[float, str]:
    """Peak memory in GiB and what it measures: allocated on the GPU, resident set size on the CPU."""
    import resource
    import sys

    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated(torch.device(device)) / 2**30, "gpu_allocated"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (2**30 if sys.platform == "darwin" else 2**20), "cpu_rss"
