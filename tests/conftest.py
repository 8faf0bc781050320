"""Shared fixtures: tiny random models of three architectures (float32) and the real offline models.

No test touches the network: the Hub is switched off before transformers is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
import torch  # noqa: E402

from matbench.data_gen import SUITES  # noqa: E402
from matbench.engine.pair_engine import PairEngine  # noqa: E402
from matbench.models.loading import LoadedModel, ModelSource, load_model, resolve_source  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data beside the clone
VOCAB = 49152  # the SmolLM2 tokenizer's, used by every tiny model


def tiny_config(kind: str):
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen3Config

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, initializer_range=0.3)
    if kind == "llama":
        cfg = LlamaConfig(num_hidden_layers=2, **common)
    elif kind == "qwen3":  # QK-norm
        cfg = Qwen3Config(num_hidden_layers=2, head_dim=16, **common)
    elif kind == "gemma3":  # sliding window far shorter than a trajectory (~690 tokens)
        cfg = Gemma3TextConfig(num_hidden_layers=4, head_dim=16, sliding_window=64,
                               layer_types=["sliding_attention"] * 3 + ["full_attention"], **common)
    else:
        raise ValueError(kind)
    cfg._attn_implementation = "sdpa"
    return cfg


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    source = resolve_source("smollm2-135m")
    return AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)


def make_tiny(kind: str, tokenizer) -> LoadedModel:
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1234)
    model = AutoModelForCausalLM.from_config(tiny_config(kind)).eval()
    return LoadedModel(model, tokenizer, ModelSource(f"tiny-{kind}", f"tiny-{kind}"), "float32", "cpu")


@pytest.fixture(scope="session", params=["llama", "qwen3", "gemma3"])
def tiny(request, tokenizer) -> LoadedModel:
    return make_tiny(request.param, tokenizer)


@pytest.fixture(scope="session")
def tiny_llama(tokenizer) -> LoadedModel:
    return make_tiny("llama", tokenizer)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory, tiny_llama) -> Path:
    """The tiny Llama saved as a model directory (for the CLI)."""
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_llama.model.save_pretrained(path)
    tiny_llama.tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_gemma(tokenizer) -> LoadedModel:
    return make_tiny("gemma3", tokenizer)


@pytest.fixture(scope="session")
def pairs():
    return SUITES.get("discovery").generate(seed=0, n=3)


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    return load_model("smollm2-135m", device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def gemma3() -> LoadedModel:
    return load_model("gemma3-270m", device="cpu", dtype="float32")


def engine_for(loaded: LoadedModel, **kw) -> PairEngine:
    return PairEngine(loaded, **kw)


def gated_records(loaded: LoadedModel, pairs, **kw) -> list[dict]:
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


def dialog_sources():
    from matbench.data_gen.dialogs import DialogSources

    return DialogSources(str(SHARED_DATA / "locomo" / "locomo10.json"), str(SHARED_DATA / "realtalk"))
