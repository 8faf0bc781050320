"""Shared fixtures: tiny random models of three architectures (float32) and the real offline models
(helpers that tests import live in tests/helpers.py).

No test touches the network: the Hub is switched off before transformers is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (`make pytest` runs one worker per core) each worker and the processes it
# starts get their share of the cores: torch's default of one thread per core in every worker
# would oversubscribe them.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault(
        "OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    )

import pytest

from matbench.data_gen import SUITES
from matbench.models.loading import LoadedModel, load_model
from matbench.models.sources import resolve_source
from tests.helpers import make_tiny, write_short_dialogs


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    source = resolve_source("smollm2-135m")
    return AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)


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


@pytest.fixture(scope="session")
def short_dialogs(tmp_path_factory) -> Path:
    """The real-dialog data cut to three sessions per conversation (tests/helpers.py)."""
    return write_short_dialogs(tmp_path_factory.mktemp("dialogs"))
