"""Random-weight models of real shapes, for performance work where weights cannot be downloaded.

Only the shape matters (layers, widths, heads, vocabulary, sliding windows): timings and memory
are those of the real checkpoint, answers are noise. The tokenizer comes from an offline model
(its ids all fall inside these vocabularies), so rendering and the position budget are real.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from matbench.errors import MatbenchError
from matbench.registry import Registry


@dataclass(frozen=True)
class Shape:
    model_type: str
    sizes: dict[str, Any] = field(default_factory=dict)
    tokenizer_from: str = "smollm2-135m"
    card_note: str = ""


SHAPES: Registry[Shape] = Registry("model shape")
SHAPES.register("qwen3-8b")(
    Shape(
        "qwen3",
        {
            "vocab_size": 151936,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "max_position_embeddings": 40960,
            "tie_word_embeddings": False,
        },
        card_note="Qwen/Qwen3-8B config.json sizes",
    )
)
SHAPES.register("gemma3-12b")(
    Shape(
        "gemma3_text",
        {
            "vocab_size": 262208,
            "hidden_size": 3840,
            "intermediate_size": 15360,
            "num_hidden_layers": 48,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "sliding_window": 1024,
            "max_position_embeddings": 131072,
        },
        tokenizer_from="gemma3-270m",
        card_note="google/gemma-3-12b-it text config sizes; 5 sliding-window layers per global layer",
    )
)
SHAPES.register("qwen3-tiny")(
    Shape(
        "qwen3",
        {
            "vocab_size": 49152,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 4096,
        },
        card_note="for tests of the benchmark itself",
    )
)


def shape_tokenizer(shape: Shape, tokenizer: str | None = None):
    """The tokenizer of `tokenizer` (a directory, or an offline alias), else the shape's default."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from matbench.models.loading import load_model

    source = tokenizer or shape.tokenizer_from
    if Path(source).is_dir():
        return AutoTokenizer.from_pretrained(source)
    return load_model(source, device="cpu", dtype="float32").tokenizer


def random_model(
    shape_name: str,
    device: str | None = None,
    dtype: str | None = None,
    attn_implementation: str | None = None,
    seed: int = 0,
    tokenizer: str | None = None,
    device_map: str | None = None,
    fused_kernels: str = "auto",
):
    """A `LoadedModel` with random weights of `shape_name`, built directly on the device;
    `device_map="auto"` then spreads its layers evenly over every visible GPU (accelerate)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from matbench.kernels.fused import resolve as resolve_fused
    from matbench.models.loading import (
        LoadedModel,
        check_device_map,
        default_attn,
        resolve_attn,
        resolve_device,
        resolve_dtype,
        with_fused_kernels,
    )
    from matbench.models.sources import ModelSource

    shape = SHAPES.get(shape_name)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    fuse = resolve_fused(fused_kernels, device)  # a bad setting fails before the model is built
    if device_map:
        check_device_map(device_map, device)  # before building the model, not after
    tok = shape_tokenizer(shape, tokenizer)
    if len(tok) > shape.sizes["vocab_size"]:
        raise MatbenchError(
            f"shape {shape_name}: the tokenizer has {len(tok)} ids, more than the shape's "
            f"vocabulary of {shape.sizes['vocab_size']}; pass a smaller --tokenizer"
        )
    config = AutoConfig.for_model(shape.model_type, **shape.sizes)
    config._attn_implementation = resolve_attn(attn_implementation or default_attn(config))
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype)).eval()
    if device_map:
        model = _spread(model)
        device = str(next(model.parameters()).device)
    return with_fused_kernels(
        LoadedModel(model, tok, ModelSource(f"random:{shape_name}", f"random:{shape_name}"), dtype, device), fuse
    )


def _spread(model):
    """The model's layers spread evenly over the visible GPUs (a balanced accelerate map)."""
    from accelerate import dispatch_model, infer_auto_device_map
    from accelerate.utils import get_balanced_memory

    no_split = getattr(model, "_no_split_modules", None) or []
    memory = get_balanced_memory(model, no_split_module_classes=no_split)
    return dispatch_model(model, infer_auto_device_map(model, max_memory=memory, no_split_module_classes=no_split))
