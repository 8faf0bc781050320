"""Memory-aware batching: the per-pair estimate and the batch it gives; peak memory in results."""

from __future__ import annotations

import json

from matbench.engine.memory import (
    MAX_BATCH_PAIRS,
    batch_pairs_for,
    kv_bytes_per_token,
    pair_bytes,
)


def _qwen3_8b():
    from transformers import AutoConfig

    from matbench.models.shapes import SHAPES

    shape = SHAPES.get("qwen3-8b")
    return AutoConfig.for_model(shape.model_type, **shape.sizes)


def test_kv_bytes_follow_the_architecture():
    config = _qwen3_8b()
    # 36 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes: Qwen3-8B's well-known 144 KiB per token.
    assert kv_bytes_per_token(config, 2) == 147456 == 144 * 1024
    assert kv_bytes_per_token(config, 4) == 2 * kv_bytes_per_token(config, 2)


def test_batch_grows_with_free_memory_and_stays_within_bounds():
    config = _qwen3_8b()
    per_pair = pair_bytes(config, 2, 600, 4, eager=True)
    assert per_pair > pair_bytes(config, 2, 600, 4, eager=False) > pair_bytes(config, 2, 300, 4, eager=False)
    assert batch_pairs_for(20 * per_pair, config, 2, 600, 4, True) > batch_pairs_for(
        10 * per_pair, config, 2, 600, 4, True
    )
    assert batch_pairs_for(per_pair, config, 2, 600, 4, True) == 1  # never below one pair
    assert batch_pairs_for(10**15, config, 2, 600, 4, True) == MAX_BATCH_PAIRS


def test_results_report_peak_memory_and_batching(tmp_path, tiny_dir):
    from matbench.cli import main

    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--device",
                "cpu",
                "--limit",
                "2",
                "--no-progress",
                "--output",
                str(tmp_path),
            ]
        )
        == 0
    )
    payload = json.loads((tmp_path / "discovery_probe_compact.json").read_text())
    resources = payload["resources"]
    from matbench.results.schema import SCHEMA_VERSION

    assert payload["schema_version"] == SCHEMA_VERSION  # written at the current version (resources: 1.2 on)
    assert resources["memory_kind"] == "cpu_rss" and resources["peak_memory_gib"] > 0.1
    assert (resources["batch_pairs"], resources["batch_pairs_chosen_from_memory"], resources["processes"]) == (
        2,
        False,
        1,
    )


def test_the_estimate_covers_the_rows_a_pair_really_holds(tiny_llama):
    """The per-pair estimate bounds what the engine allocates for a pair's K/V: both members'
    prefilled caches and every arm x member's served cache (with its room for the query)."""
    from matbench.data_gen import SUITES
    from matbench.engine.serving import serve_compact
    from tests.helpers import engine_for

    engine = engine_for(tiny_llama)
    pair = SUITES.get("discovery").generate(0, 1)[0]
    layout, caches = engine.prepare(pair)
    held = sum(t.numel() * t.element_size() for c in caches for t in (*c.keys, *c.values))
    batch, _ = serve_compact(engine.runner, engine.requests(pair, caches, engine.probe_readout))
    served = sum(t.numel() * t.element_size() for layer in batch.cache.layers for t in (layer.keys, layer.values))
    longest = max(len(m.input_ids) for m in layout.members)
    estimate = pair_bytes(tiny_llama.text_config, 4, longest, len(pair.arms), eager=False)
    assert held + served <= estimate
    assert held > 0 and served > 0


def test_a_memory_cap_bounds_the_free_memory_a_batch_is_sized_from():
    from matbench.engine.memory import usable_free

    gib = 2**30
    assert usable_free(100 * gib, 140 * gib, None, 5 * gib) == 100 * gib  # no cap: the device's free memory
    assert usable_free(100 * gib, 140 * gib, 0.25, 5 * gib) == 30 * gib  # 35 GiB cap less the 5 held
    assert usable_free(10 * gib, 140 * gib, 0.25, 5 * gib) == 10 * gib  # others took the rest first
    assert usable_free(100 * gib, 140 * gib, 0.25, 40 * gib) == 0  # already past the cap


def test_the_batch_is_sized_within_the_cap(monkeypatch, tiny_llama, pairs):
    """choose_batch_pairs reads the device's memory and sizes the batch from the capped share."""
    from dataclasses import replace

    import torch

    from matbench.engine.memory import choose_batch_pairs
    from tests.helpers import engine_for

    gib = 2**30
    seen = []
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: seen.append(device) or (100 * gib, 140 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: 5 * gib)
    engine = engine_for(tiny_llama)
    on_gpu = replace(tiny_llama, device="cuda:0")
    capped = choose_batch_pairs(on_gpu, pairs, engine.prefetch_layouts, fraction=0.0005)  # 70 MiB cap
    assert seen == [torch.device("cuda:0")]
    layouts = engine.prefetch_layouts(pairs)
    longest = max(len(m.input_ids) for lay in layouts for m in lay.members)
    arms = max(len(lay.pair.arms) for lay in layouts)
    assert capped == batch_pairs_for(0, tiny_llama.text_config, 4, longest, arms, False) == 1
    assert (
        choose_batch_pairs(on_gpu, pairs, engine.prefetch_layouts)
        == batch_pairs_for(100 * gib, tiny_llama.text_config, 4, longest, arms, False)
        == MAX_BATCH_PAIRS
    )


def test_the_cap_is_set_on_the_device_index(monkeypatch):
    """torch's set_per_process_memory_fraction refuses a bare torch.device("cuda"): the cap goes to
    the current device's index for "cuda", or to N for "cuda:N", as a float."""
    import torch

    from matbench.engine.memory import cap_memory

    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d: calls.append((f, d)))
    cap_memory("cuda", 0.3)
    cap_memory(None, 1)
    cap_memory("cuda:2", 0.25)
    assert calls == [(0.3, 0), (1.0, 0), (0.25, 2)]
    assert all(isinstance(f, float) and isinstance(d, int) for f, d in calls)
