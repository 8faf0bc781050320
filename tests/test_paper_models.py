"""The paper's three headline families (SPEC 4): Qwen3, Gemma-4 and Ministral-3, as tiny random
checkpoints saved to disk, load through `load_model` and pass every faithfulness gate.

Ministral-3 is a `Mistral3ForConditionalGeneration` (not in the causal-LM auto mapping; loaded as
`AutoModelForImageTextToText`, as the paper does); Gemma-4 ships as a multimodal wrapper too
(Gemma-4-12B-it is `gemma4_unified`, the checkpoint transformers documents that config with; the
smaller ones `gemma4`). Both are served through their text inputs: the wrapper runs its language
model and lm_head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from matbench.engine.gates import FLOAT32_TOL, run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies.base import KeptRows, ServingPolicy
from matbench.engine.policies.recent import RecentTokens
from matbench.errors import MatbenchError
from matbench.models.loading import load_model
from tests.helpers import VOCAB

COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "initializer_range": 0.3,
}

# kind: (model_type of the checkpoint, class it loads as, model_type of its language model)
KINDS = {
    "qwen3": ("qwen3", "Qwen3ForCausalLM", "qwen3"),
    "gemma4-text": ("gemma4_text", "Gemma4ForCausalLM", "gemma4_text"),
    "gemma4": ("gemma4", "Gemma4ForConditionalGeneration", "gemma4_text"),
    "gemma4-unified": ("gemma4_unified", "Gemma4UnifiedForConditionalGeneration", "gemma4_unified_text"),
    "mistral3": ("mistral3", "Mistral3ForConditionalGeneration", "ministral3"),
    "mistral3-mistral": ("mistral3", "Mistral3ForConditionalGeneration", "mistral"),
}


def _require(*model_types: str) -> None:
    """Skip, naming the transformers version, where it lacks a model type (5.17 and 5.24 have them
    all; a newer 5.x that dropped one would say so here rather than fail obscurely)."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    missing = [t for t in model_types if t not in CONFIG_MAPPING_NAMES]
    if missing:
        pytest.skip(f"transformers {transformers.__version__} has no {', '.join(missing)}")


def _gemma4_text() -> dict:
    """Three sliding layers (window far shorter than a trajectory) and a global layer with its own
    head size, as in the real Gemma-4 (wider global heads), plus per-layer input embeddings."""
    return dict(
        num_hidden_layers=4,
        sliding_window=64,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        per_layer_config={"03": {"head_dim": 32}},
        hidden_size_per_layer_input=16,
        vocab_size_per_layer_input=VOCAB,
        **COMMON,
    )


def tiny_paper_config(kind: str):
    from transformers import AutoConfig

    model_type, _, text_type = KINDS[kind]
    _require(model_type, text_type)
    if kind == "qwen3":
        return AutoConfig.for_model("qwen3", num_hidden_layers=2, **COMMON)
    if kind == "gemma4-text":
        return AutoConfig.for_model("gemma4_text", **_gemma4_text())
    if kind == "gemma4":
        vision = {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "patch_size": 4,
            "position_embedding_size": 64,
        }
        return AutoConfig.for_model("gemma4", text_config=_gemma4_text(), vision_config=vision)
    if kind == "gemma4-unified":  # wider global heads through global_head_dim, no per-layer inputs
        text = dict(
            model_type="gemma4_unified_text",
            num_hidden_layers=4,
            sliding_window=64,
            layer_types=["sliding_attention"] * 3 + ["full_attention"],
            global_head_dim=32,
            **COMMON,
        )
        vision = {
            "patch_size": 4,
            "pooling_kernel_size": 2,
            "mm_embed_dim": 32,
            "mm_posemb_size": 16,
            "output_proj_dims": 64,
        }
        return AutoConfig.for_model("gemma4_unified", text_config=text, vision_config=vision)
    # Ministral-3: a Pixtral vision tower and an untied lm_head over a ministral3 (or mistral) decoder.
    vision = {
        "model_type": "pixtral",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "head_dim": 16,
        "image_size": 32,
        "patch_size": 8,
    }
    text = dict(model_type=text_type, num_hidden_layers=2, tie_word_embeddings=False, **COMMON)
    return AutoConfig.for_model("mistral3", text_config=text, vision_config=vision, tie_word_embeddings=False)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tokenizer):
    """kind -> a directory holding the tiny checkpoint and the SmolLM2 tokenizer (built once)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    made = {}

    def make(kind: str):
        if kind not in made:
            config = tiny_paper_config(kind)
            auto = (
                AutoModelForImageTextToText
                if KINDS[kind][1].endswith("ConditionalGeneration")
                else AutoModelForCausalLM
            )
            torch.manual_seed(1234)
            path = tmp_path_factory.mktemp(kind)
            auto.from_config(config).save_pretrained(path)
            tokenizer.save_pretrained(path)
            made[kind] = path
        return made[kind]

    return make


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_paper_families_load_and_pass_every_gate(kind, saved, pairs):
    loaded = load_model(str(saved(kind)), device="cpu", dtype="float32")
    _, class_name, text_type = KINDS[kind]
    assert type(loaded.model).__name__ == class_name and loaded.text_config.model_type == text_type
    assert loaded.attn_implementation == "sdpa_grouped"
    engine = PairEngine(loaded)
    assert engine.serving == ("native" if loaded.has_sliding_layers else "compact")
    layout, caches = engine.prepare(pairs[0])
    results = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, engine.score(pairs[0], layout, caches))}
    assert all(g.passed for g in results.values()), results
    assert results["A"].max_abs_diff <= FLOAT32_TOL and results["mask"].max_abs_diff == 0.0


def test_mistral3_is_outside_the_causal_lm_mapping():
    """Why the loader falls back to image-text-to-text (the error this used to give)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    _require("mistral3", "gemma4", "gemma4_unified")
    assert (
        "mistral3" not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and "mistral3" in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    )
    assert {"gemma4", "gemma4_text", "gemma4_unified"} <= set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


@pytest.mark.parametrize("kind", ["gemma4", "gemma4-unified", "mistral3"])
def test_a_wrapper_gives_the_logits_of_its_language_model_and_lm_head(kind, saved, tokenizer):
    """What the engine serves is the paper's `core` (`model.model.language_model`) and lm_head:
    the vision tower is idle for text inputs."""
    loaded = load_model(str(saved(kind)), device="cpu", dtype="float32")
    model = loaded.model
    ids = torch.tensor([tokenizer("register ALPHA mirrors register BETA\n").input_ids])
    with torch.inference_mode():
        wrapped = model(input_ids=ids).logits
        core = model.model.language_model(input_ids=ids).last_hidden_state
        direct = model.lm_head(core)
    assert model.get_decoder() is model.model.language_model
    assert torch.equal(wrapped, direct)


@dataclass(frozen=True)
class _OneHeadDrops(ServingPolicy):
    """recent:n, except that layer 1's KV head 0 drops the third-to-last kept row."""

    shape: tuple[int, int] = (2, 2)
    name = "one-head-drops"

    def keep(self, arm, member, cache, context=None):
        slots = RecentTokens(30).keep(arm, member, cache)
        heads = np.ones((*self.shape, len(slots)), dtype=bool)
        heads[1, 0, -3] = False
        return KeptRows(slots, heads)


def test_per_head_policies_hook_only_the_language_model(saved, pairs):
    """A per-head mask is set on the decoder's attention layers, not the vision tower's (which
    also have a layer index in Gemma-4): the head-mask gate runs and passes."""
    loaded = load_model(str(saved("gemma4")), device="cpu", dtype="float32")
    config = loaded.text_config
    engine = PairEngine(loaded, policy=_OneHeadDrops((config.num_hidden_layers, config.num_key_value_heads)))
    layout, caches = engine.prepare(pairs[0])
    record = engine.score(pairs[0], layout, caches)
    results = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, record)}
    assert all(g.passed for g in results.values()), results
    assert results["head_mask"].max_abs_diff == 0.0 and 0 < record.arms["root"].selection.head_kept_share < 1


@pytest.mark.parametrize(
    "text_type, message",
    [
        ("qwen3_next", "has no token-addressable KV cache"),
        ("mamba", "has no token-addressable KV cache"),
    ],
)
def test_a_wrapper_is_refused_on_its_language_model(tmp_path, text_type, message):
    """`check_servable` reads the text config: a wrapper around a linear-attention or state-space
    decoder is refused in one line, before any weights are read."""
    from transformers import AutoConfig

    _require("mistral3", text_type)
    AutoConfig.for_model("mistral3", text_config={"model_type": text_type}).save_pretrained(tmp_path)
    with pytest.raises(MatbenchError, match=message) as err:
        load_model(str(tmp_path), device="cpu")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", ["gemma4", "mistral3"])
def test_a_wrapper_reports_the_parameters_that_serve_text(kind, saved):
    """n_parameters counts the language model and lm_head (a tied weight once), not the idle
    vision tower and projector; for a causal LM that is every parameter."""
    loaded = load_model(str(saved(kind)), device="cpu", dtype="float32")
    model = loaded.model
    language = {id(p): p.numel() for p in model.model.language_model.parameters()}
    language.update({id(p): p.numel() for p in model.lm_head.parameters()})
    total = sum(p.numel() for p in model.parameters())
    vision = sum(
        p.numel()
        for name, p in model.named_parameters()
        if "vision" in name or "projector" in name or "embed_vision" in name
    )
    assert loaded.describe()["n_parameters"] == sum(language.values())
    assert vision > 0 and loaded.describe()["n_parameters"] == total - vision


def test_a_causal_lm_reports_every_parameter(tiny_llama):
    from matbench.models.loading import text_parameters

    assert text_parameters(tiny_llama.model) == sum(p.numel() for p in tiny_llama.model.parameters())


@pytest.mark.parametrize("kind", ["gemma4", "mistral3"])
def test_a_wrappers_chunked_reference_equals_its_plain_forward(kind, saved):
    """Gate A's reference under --chunk-size builds transformers' cache from the wrapper's config
    (its text config inside): the same last logits as one uncached forward."""
    from matbench.engine.runtime import ModelRunner

    loaded = load_model(str(saved(kind)), device="cpu", dtype="float32")
    runner = ModelRunner(loaded.model, loaded.text_config)
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 150))
    pos = torch.arange(150)[None]
    whole, chunked = runner.plain_forward(ids, pos), runner.plain_forward(ids, pos, 40)
    assert float((whole - chunked).abs().max()) <= 1e-4
