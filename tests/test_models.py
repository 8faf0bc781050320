"""Model families beyond the three tiny defaults: a multimodal wrapper, eager attention."""

from __future__ import annotations

import pytest
import torch

from matbench.engine.gates import run_gates
from matbench.models.loading import LoadedModel
from matbench.models.servable import check_servable
from matbench.models.sources import ModelSource
from tests.helpers import engine_for, tiny_config


def _gates_pass(loaded, pair):
    engine = engine_for(loaded)
    layout, caches = engine.prepare(pair)
    record = engine.score(pair, layout, caches)
    results = run_gates(engine, pair, layout, caches, record)
    assert all(g.passed for g in results), results
    return engine


def test_multimodal_wrapper_is_served_through_its_language_model(tokenizer, pairs):
    from transformers import AutoModelForCausalLM, Gemma3Config, SiglipVisionConfig

    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, image_size=28, patch_size=14)
    cfg = Gemma3Config(text_config=tiny_config("gemma3").to_dict(), vision_config=vision.to_dict(), mm_tokens_per_image=4)
    cfg._attn_implementation = "sdpa"
    check_servable(cfg, "tiny-gemma3-mm")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    assert type(model).__name__ == "Gemma3ForConditionalGeneration"
    loaded = LoadedModel(model, tokenizer, ModelSource("mm", "mm"), "float32", "cpu")
    assert loaded.has_sliding_layers
    engine = _gates_pass(loaded, pairs[0])
    assert engine.serving == "native"


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_gates_pass_with_eager_attention(tokenizer, pairs, kind):
    from transformers import AutoModelForCausalLM

    cfg = tiny_config(kind)
    cfg._attn_implementation = "eager"
    torch.manual_seed(1234)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    loaded = LoadedModel(model, tokenizer, ModelSource(kind, kind), "float32", "cpu")
    assert loaded.attn_implementation == "eager"
    _gates_pass(loaded, pairs[0])


def test_flash_attention_is_refused(tiny_llama):
    from matbench.engine.runtime import ModelRunner
    from matbench.errors import MatbenchError

    model = tiny_llama.model
    original = model.config._attn_implementation
    model.config._attn_implementation = "flash_attention_2"
    try:
        with pytest.raises(MatbenchError, match="takes no arbitrary masks"):
            ModelRunner(model, tiny_llama.text_config)
    finally:
        model.config._attn_implementation = original


def test_bfloat16_gates_compare_argmax_and_report_near_ties(tokenizer, pairs):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1234)
    model = AutoModelForCausalLM.from_config(tiny_config("llama")).eval().to(torch.bfloat16)
    loaded = LoadedModel(model, tokenizer, ModelSource("bf16", "bf16"), "bfloat16", "cpu")
    engine = engine_for(loaded)
    layout, caches = engine.prepare(pairs[0])
    results = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, engine.score(pairs[0], layout, caches))}
    assert results["A"].passed and "argmax flips" in results["A"].detail
    assert results["mask"].max_abs_diff == 0.0 and results["control"].passed
