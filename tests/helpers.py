"""Helpers the tests import: tiny models from configs, engines, gated scoring, the real-dialog data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from matbench.engine.pair_engine import PairEngine
from matbench.models.loading import LoadedModel
from matbench.models.sources import ModelSource
from matbench.protocol.records import PairRecord

VOCAB = 49152  # the SmolLM2 tokenizer's, used by every tiny model


def tiny_config(kind: str):
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen3Config

    common = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "initializer_range": 0.3,
    }
    if kind == "llama":
        cfg = LlamaConfig(num_hidden_layers=2, **common)
    elif kind == "qwen3":  # QK-norm
        cfg = Qwen3Config(num_hidden_layers=2, head_dim=16, **common)
    elif kind == "gemma3":  # sliding window far shorter than a trajectory (~690 tokens)
        cfg = Gemma3TextConfig(
            num_hidden_layers=4,
            head_dim=16,
            sliding_window=64,
            layer_types=["sliding_attention"] * 3 + ["full_attention"],
            **common,
        )
    else:
        raise ValueError(kind)
    cfg._attn_implementation = "sdpa"
    return cfg


def make_tiny(kind: str, tokenizer) -> LoadedModel:
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1234)
    model = AutoModelForCausalLM.from_config(tiny_config(kind)).eval()
    return LoadedModel(model, tokenizer, ModelSource(f"tiny-{kind}", f"tiny-{kind}"), "float32", "cpu")


def engine_for(loaded: LoadedModel, **kw) -> PairEngine:
    return PairEngine(loaded, **kw)


def gated_records(loaded: LoadedModel, pairs, **kw) -> list[PairRecord]:
    """Score `pairs` on `loaded`, asserting every faithfulness gate on each; the per-item records."""
    from matbench.engine.gates import run_gates

    engine = engine_for(loaded, **kw)
    records = []
    for pair in pairs:
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        results = run_gates(engine, pair, layout, caches, record)
        assert all(g.passed for g in results), (pair.item_id, pair.variant, results)
        records.append(record)
    return records


def shared_data() -> Path:
    """The real-dialog data (LoCoMo, REALTALK), outside the clone: MATBENCH_SHARED_DATA (CI sets it),
    else ../shared/data beside the clone. Missing, a test that reads it fails in one line: it
    never skips, so CI cannot pass without the data."""
    path = Path(os.environ.get("MATBENCH_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
    if not (path / "locomo" / "locomo10.json").is_file() or not (path / "realtalk").is_dir():
        pytest.fail(
            f"real-dialog data not found at {path} (locomo/locomo10.json, realtalk/): set "
            "MATBENCH_SHARED_DATA=DIR or put ../shared/data beside the clone",
            pytrace=False,
        )
    return path


def dialog_sources():
    from matbench.data_gen.dialogs import DialogSources

    data = shared_data()
    return DialogSources(str(data / "locomo" / "locomo10.json"), str(data / "realtalk"))
