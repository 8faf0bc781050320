"""`--rope-yarn F` (the paper's position stress, llm_hf.py SPRAG_ROPE_FACTOR): YaRN on every RoPE a
model has, its own theta kept; results of its own, kept out of the scorecard."""

from __future__ import annotations

import json

import pytest

from matbench.cli import main
from matbench.errors import MatbenchError
from matbench.models.rope import with_yarn
from tests.helpers import tiny_config


def test_yarn_stretches_every_rope_and_keeps_each_theta():
    flat = with_yarn(tiny_config("llama"), 4.0, "tiny").rope_parameters
    assert flat == {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 2048}
    nested = with_yarn(tiny_config("gemma3"), 2.5, "tiny").rope_parameters
    assert {k: (v["rope_type"], v["factor"], v["rope_theta"]) for k, v in nested.items()} == {
        "sliding_attention": ("yarn", 2.5, 10000.0),
        "full_attention": ("yarn", 2.5, 1000000.0),
    }


def test_bad_factors_and_models_are_refused_in_one_line():
    with pytest.raises(MatbenchError, match=r"^--rope-yarn must be a factor above 1 \(got 1.0\)$"):
        with_yarn(tiny_config("llama"), 1.0, "tiny")
    config = tiny_config("llama")
    config.rope_parameters = {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}
    with pytest.raises(MatbenchError, match=r"already scales its RoPE \(linear\)"):
        with_yarn(config, 4.0, "tiny")
    config.rope_parameters = None
    with pytest.raises(MatbenchError, match=r"^--rope-yarn: model 'tiny' has no RoPE parameters to stretch$"):
        with_yarn(config, 4.0, "tiny")


def test_a_stretched_run_has_its_own_results_and_moves_the_logits(tiny_dir, tmp_path, capsys):
    from matbench.models.loading import load_model
    from matbench.results.schema import read_results

    loaded = load_model(str(tiny_dir), device="cpu", rope_yarn=4.0)
    assert loaded.model.model.rotary_emb.rope_type == "yarn"
    common = [
        "eval",
        "--model",
        str(tiny_dir),
        "--suite",
        "discovery",
        "--limit",
        "2",
        "--check",
        "--no-progress",
        "--device",
        "cpu",
        "--output",
        str(tmp_path),
    ]
    assert main(common) == 0 and main([*common, "--rope-yarn", "4"]) == 0
    plain = read_results(tmp_path / "discovery_probe_compact.json")
    stretched = read_results(tmp_path / "discovery_probe_compact_yarn4.json")
    assert plain.config.rope_yarn is None and stretched.config.rope_yarn == 4.0
    assert all(g.passed == g.checked for g in stretched.gates.values())
    logs = [
        [json.loads(line) for line in (tmp_path / f"{stem}.items.jsonl").read_text().splitlines()]
        for stem in ("discovery_probe_compact", "discovery_probe_compact_yarn4")
    ]
    assert len(logs[0]) == len(logs[1]) == 2 and logs[0][0]["arms"]["root"] != logs[1][0]["arms"]["root"]
    assert main([*common, "--rope-yarn", "0.5"]) == 2
    assert capsys.readouterr().err.strip().endswith("--rope-yarn must be a factor above 1 (got 0.5)")
