"""The faithfulness gates on the real offline models (SmolLM2-135M-Instruct, Gemma 3 270M,
Qwen2.5-Coder-0.5B-Instruct)."""

from __future__ import annotations

import pytest
import torch

from matbench.engine.gates import FLOAT32_TOL, gate_a, run_gates
from matbench.engine.pair_engine import PairEngine, probe_logits
from matbench.models.loading import load_model
from matbench.protocol.pairs import Arm, DonorPair

pytestmark = pytest.mark.slow


def _check_all(loaded, pairs):
    engine = PairEngine(loaded)
    for pair in pairs:
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        results = {g.name: g for g in run_gates(engine, pair, layout, caches, record)}
        assert all(g.passed for g in results.values()), results
        assert results["A"].max_abs_diff <= FLOAT32_TOL
        assert results["mask"].max_abs_diff == 0.0
        assert record.arms["control"].shift == 0.0
    return engine, results


def test_smollm2_gates(smollm2, pairs):
    engine, results = _check_all(smollm2, pairs[:2])
    assert engine.serving == "compact" and results["B"].max_abs_diff <= FLOAT32_TOL
    assert engine.renderer.chat and engine.renderer.bos_ids == []


def test_gemma3_gates(gemma3, pairs):
    engine, results = _check_all(gemma3, pairs[:2])
    assert engine.serving == "native" and results["B"].max_abs_diff is None
    # A base model: plain text, BOS placed once by hand.
    bos = gemma3.tokenizer.bos_token_id
    assert not engine.renderer.chat and engine.renderer.bos_ids == [bos]
    assert engine.renderer.header_ids()[0] == bos and engine.renderer.header_ids().count(bos) == 1


def test_qwen_coder_loads_as_an_instruct_qwen2_and_passes_gate_a(pairs):
    """The largest offline model (0.5B, assembled from six packages): one pair, gate A only, to
    keep it near a minute on 2 cores (the first run also dequantises it, about a minute more)."""
    loaded = load_model("qwen2.5-coder-0.5b", device="cpu", dtype="float32")
    config = loaded.text_config
    assert (config.model_type, config.num_hidden_layers) == ("qwen2", 24)
    assert loaded.tokenizer.chat_template and not loaded.has_sliding_layers
    engine = PairEngine(loaded)
    assert engine.serving == "compact" and engine.renderer.chat and engine.renderer.bos_ids == []
    layout, caches = engine.prepare(pairs[0])
    result = gate_a(engine, pairs[0], layout, caches)
    assert result.passed and result.max_abs_diff <= FLOAT32_TOL, result


def test_gemma3_compact_and_native_differ_only_beyond_the_window(gemma3, pairs):
    """SPEC 4: past the 512-token window compact slots over-expose far rows; within it they agree."""
    engine = PairEngine(gemma3)
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    assert layout.length > gemma3.text_config.sliding_window
    arm = pair.arm("root")
    native = probe_logits(engine, pair, caches, arm, serving="native")
    compact = probe_logits(engine, pair, caches, arm, serving="compact", query_position=layout.length)
    assert float((native - compact).abs().max()) > 0.5

    short = DonorPair(
        item_id="short",
        events=(
            "register KAPPA set to state ONLINE",
            "<donor>",
            "register BETA mirrors register GAMMA",
            "register THETA refreshed to 120",
        ),
        source=1,
        source_bodies=("register GAMMA set to state ONLINE", "register GAMMA set to state OFFLINE"),
        values=("ONLINE", "OFFLINE"),
        menu=("ONLINE", "OFFLINE"),
        arms=(Arm("root", (0, 2), "What state is register BETA in?"),),
    )
    layout, caches = engine.prepare(short)
    assert layout.length < gemma3.text_config.sliding_window
    native = probe_logits(engine, short, caches, short.arms[0], serving="native")
    compact = probe_logits(engine, short, caches, short.arms[0], serving="compact", query_position=layout.length)
    assert float((native - compact).abs().max()) <= FLOAT32_TOL
    assert gate_a(engine, short, layout, caches).passed


def test_gguf_conversion_cache_is_lossless(smollm2):
    """The dequantised-and-saved copy gives the logits of a direct GGUF load."""
    from transformers import AutoModelForCausalLM

    source = smollm2.source
    direct = AutoModelForCausalLM.from_pretrained(
        source.location, gguf_file=source.gguf_file, dtype=torch.float32
    ).eval()
    ids = torch.tensor([smollm2.tokenizer("register ALPHA mirrors register BETA\n").input_ids])
    with torch.inference_mode():
        a = direct(input_ids=ids).logits
        b = smollm2.model(input_ids=ids).logits
    assert torch.equal(a, b)


@pytest.mark.parametrize("variant", ["bin2", "digit3", "phrase"])
@pytest.mark.parametrize("model", ["smollm2", "gemma3"])
def test_access_encodings_on_the_offline_models(model, variant, request):
    """Real weights under every access encoding, read by one single-readout variant and both
    multi-readout ones (tests/test_access.py runs all five on the tiny models, compact and native):
    the gates pass; the isolated and text re-encodings serve bit-identical rows to both members,
    so their shifts are exactly 0."""
    from matbench.data_gen import SUITES

    loaded = request.getfixturevalue(model)
    engine = PairEngine(loaded)
    (pair,) = [p for p in SUITES.get("access").generate(0, 5) if p.variant == variant]
    layout, caches = engine.prepare(pair)
    record = engine.score(pair, layout, caches)
    assert all(g.passed for g in run_gates(engine, pair, layout, caches, record))
    assert any("/" in name for name in record.arms) == (variant != "bin2")  # the multi-readout arms
    for name, arm in record.arms.items():
        if name.startswith(("sel_ikv", "sel_txt", "control")):
            assert arm.shift == 0.0, name
