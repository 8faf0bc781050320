"""Which models the protocol can serve sparsely: causal LMs whose every layer keeps per-token K/V."""

from __future__ import annotations

from typing import Any

from matbench.errors import MatbenchError

# model_type values whose layers keep no per-token K/V rows (or not in every layer).
NON_TOKEN_KV_TYPES = frozenset(
    [
        "mamba",
        "mamba2",
        "falcon_mamba",
        "rwkv",
        "rwkv5",
        "rwkv6",
        "rwkv7",
        "jamba",
        "zamba",
        "zamba2",
        "bamba",
        "qwen3_next",
        "qwen3_5",
        "qwen3_5_moe",
        "lfm2",
        "lfm2_moe",
        "granitemoehybrid",
        "recurrent_gemma",
        "xlstm",
        "nemotron_h",
        "falcon_h1",
        "minimax",
        "plamo2",
        "kimi_linear",
        "olmo_hybrid",
    ]
)
TOKEN_KV_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})


def check_servable(config: Any, name: str) -> None:
    """Refuse models the protocol cannot serve sparsely, with the reason in one line."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    model_type = getattr(config, "model_type", "?")
    text = config.get_text_config(decoder=True)
    text_type = getattr(text, "model_type", model_type)
    if model_type in NON_TOKEN_KV_TYPES or text_type in NON_TOKEN_KV_TYPES:
        raise MatbenchError(
            f"model {name!r} ({text_type}) has no token-addressable KV cache (state-space or "
            "linear-attention layers): sparse event serving cannot drop single events from it"
        )
    layer_types = getattr(text, "layer_types", None) or []
    odd = sorted(set(layer_types) - TOKEN_KV_LAYER_TYPES)
    if odd:
        raise MatbenchError(
            f"model {name!r} has layers of type {', '.join(odd)}: only full and sliding-window "
            "attention keep token-addressable KV rows, so it cannot be served sparsely"
        )
    if getattr(config, "is_encoder_decoder", False):
        raise MatbenchError(f"model {name!r} ({model_type}) is an encoder-decoder, not a causal LM")
    causal = model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    archs = getattr(config, "architectures", None) or []
    if archs and not any(a.endswith(("CausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in archs):
        causal = False
    if not causal:
        raise MatbenchError(
            f"model {name!r} ({model_type}, {', '.join(archs) or 'no architecture'}) is not a causal LM"
        )
