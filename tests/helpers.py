"""Helpers the tests import: tiny models from configs, engines, gated scoring, the real-dialog data."""

from __future__ import annotations

import os
import re
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


_SESSION_KEY = re.compile(r"(?:events_)?session_(\d+)(?:_date_time)?")
_EVIDENCE = re.compile(r"D(\d+):\d+")


def _first_sessions(record: dict, qa: list[dict], sessions: int) -> tuple[dict, list[dict]]:
    kept = {k: v for k, v in record.items() if not ((m := _SESSION_KEY.fullmatch(k)) and int(m.group(1)) > sessions)}

    def within(q: dict) -> bool:
        return all(
            (m := _EVIDENCE.fullmatch(str(e).strip())) and int(m.group(1)) <= sessions for e in q.get("evidence") or []
        )

    return kept, [q for q in qa if within(q)]


def write_short_dialogs(root: Path, sessions: int = 3) -> Path:
    """The real-dialog data cut to each conversation's first `sessions` sessions, with the QAs whose
    evidence lies in them, in the original layout (root/locomo/locomo10.json, root/realtalk/). The
    loaders, selection and hydration are the real ones; a history is ~3.5k tokens instead of
    20-70k, so an end-to-end run of a tiny model takes seconds. Parity with the paper's rows is
    tested on the whole data."""
    import json

    data = shared_data()
    (root / "locomo").mkdir(parents=True)
    (root / "realtalk").mkdir()
    samples = json.loads((data / "locomo" / "locomo10.json").read_text())
    for sample in samples:
        sample["conversation"], sample["qa"] = _first_sessions(sample["conversation"], sample["qa"], sessions)
    (root / "locomo" / "locomo10.json").write_text(json.dumps(samples))
    for path in sorted((data / "realtalk").glob("Chat_*.json")):
        chat = json.loads(path.read_text())
        chat, chat["qa"] = _first_sessions(chat, chat["qa"], sessions)
        (root / "realtalk" / path.name).write_text(json.dumps(chat))
    return root


def dialog_args(root: Path) -> list[str]:
    """The CLI's --locomo and --realtalk options for the data under `root`."""
    return ["--locomo", str(root / "locomo" / "locomo10.json"), "--realtalk", str(root / "realtalk")]


def dialog_sources():
    from matbench.data_gen.dialogs import DialogSources

    data = shared_data()
    return DialogSources(str(data / "locomo" / "locomo10.json"), str(data / "realtalk"))
