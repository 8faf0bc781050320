"""`sdpa_grouped`: grouped-query attention through PyTorch SDPA without copying K/V per head.

transformers' `sdpa` (and `eager`) attention repeat every key/value head for the query heads that
share it (`repeat_kv`) whenever a mask is passed, which matbench always does: on an 8B model with
8 KV heads that is a 4x copy of the whole served cache in every layer of every decoding step.
Here the query heads of a group are folded into the query axis instead,

    query [B, H, T, D] -> [B, H_kv, G*T, D]   (query head h reads KV head h // G, as repeat_kv)
    mask  [B, 1, T, K] -> [B, 1, G*T, K]

so SDPA's memory-efficient kernel reads each KV head once and still takes an arbitrary mask.
The arithmetic is the same attention, so the faithfulness gates apply unchanged.
A forward whose mask is plain causal over the cache slots (no past, or a past of contiguous rows:
`ModelRunner.forward(causal=True)`) takes no mask at all: the causal kernels skip the blocks above
the diagonal, and after a past the flash kernel aligns the diagonal to the lower right
(`causal_lower_right`). `grouped_mask` is the mask function that leaves such a mask out.
cuDNN attention is left out on purpose: it builds an execution plan for every new shape, and
matbench's shapes change with every batch (on an H200 at Qwen3-8B shape, 8 pairs per batch,
prefill ran at 15.1k tokens/s with cuDNN and 20.8k without: benchmarks/discovery-qwen3-8b-sdpa-grouped-cudnn.json
and discovery-qwen3-8b-sdpa-grouped.json).
Registered with transformers under `NAME` (attention and mask interfaces) by `register()`.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.backends.cuda import SDPAParams, can_use_flash_attention
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from matbench.errors import MatbenchError

NAME = "sdpa_grouped"
_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]  # no cuDNN: see above


def grouped_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """query `[B, H, T, D]`, key/value `[B, H_kv, K, D]`, boolean mask `[B, 1, T, K]` or, per query
    head, `[B, H, T, K]` (True = visible), or None (causal, lower right). Returns `[B, T, H, D]`, as transformers' attention functions do."""
    if kwargs.get("softcap") is not None:
        raise MatbenchError(f"attention {NAME!r} has no logit soft-capping; use --attn-implementation eager")
    batch, heads, length, dim = query.shape
    kv_heads, kv_length = key.shape[1], key.shape[2]
    groups = heads // kv_heads
    if attention_mask is None and length == kv_length:
        # transformers skipped a purely causal mask (no past): the causal kernels read each KV head
        # for its query heads themselves and skip the blocks above the diagonal.
        with sdpa_kernel(_BACKENDS):
            out = F.scaled_dot_product_attention(
                query, key, value, dropout_p=0.0, scale=scaling, is_causal=True, enable_gqa=True
            )
        return out.transpose(1, 2).contiguous(), None
    if attention_mask is None and can_use_flash_attention(SDPAParams(query, key, value, None, 0.0, False, True)):
        # Causal after a past: the flash kernel's lower-right diagonal, without a [T, K] mask
        # (the memory-efficient kernel with a mask computes every block, the masked ones too).
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=causal_lower_right(length, kv_length), scale=scaling, enable_gqa=True
        )
        return out.transpose(1, 2).contiguous(), None
    if attention_mask is None:  # causal with a past, where flash does not apply (CPU, float32): explicit
        attention_mask = torch.ones(length, kv_length, dtype=torch.bool, device=query.device).tril(kv_length - length)
        attention_mask = attention_mask[None, None].expand(batch, 1, length, kv_length)
    if attention_mask.dtype != torch.bool:
        raise MatbenchError(f"attention {NAME!r} takes boolean masks (got {attention_mask.dtype})")
    folded = query.reshape(batch, kv_heads, groups * length, dim)
    if attention_mask.shape[1] == heads and heads > 1:  # per query head (a per-head selection): fold alike
        mask = attention_mask[..., :kv_length].reshape(batch, kv_heads, groups * length, kv_length)
    else:
        mask = (
            attention_mask[:, :1, None]
            .expand(batch, 1, groups, length, kv_length)
            .reshape(batch, 1, groups * length, kv_length)
        )
    with sdpa_kernel(_BACKENDS):
        out = F.scaled_dot_product_attention(folded, key, value, attn_mask=mask, dropout_p=0.0, scale=scaling)
    return out.reshape(batch, heads, length, dim).transpose(1, 2).contiguous(), None


def grouped_mask(**kwargs) -> torch.Tensor | None:
    """transformers' `sdpa_mask` (which transformers calls with keywords only), except that a
    causal mask without padding is left out after a past too (transformers' own skips it only
    without one): over the cache slots it is the lower-right causal mask, which
    `grouped_sdpa_forward` applies itself. A sliding window, a padding mask or any other mask
    function is built as `sdpa_mask` builds it."""
    from transformers.masking_utils import causal_mask_function, sdpa_mask

    plain = kwargs.get("mask_function", causal_mask_function) is causal_mask_function
    if kwargs.get("allow_is_causal_skip", True) and kwargs.get("attention_mask") is None and plain:
        return None
    return sdpa_mask(**kwargs)


@functools.cache
def register() -> str:
    """Make `NAME` a valid `attn_implementation` for transformers models; idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    AttentionInterface.register(NAME, grouped_sdpa_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, grouped_mask)
    return NAME
