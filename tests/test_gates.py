"""Faithfulness gates (SPEC 2.4) on tiny float32 models, and the bugs each gate must catch."""

from __future__ import annotations

import pytest
import torch

from matbench.engine import serving
from matbench.engine.gates import (
    FLOAT32_TOL,
    compare_logits,
    control_gate,
    gate_a,
    gate_b,
    layout_gate,
    logit_tolerance,
    mask_gate,
    require,
    run_gates,
)
from matbench.engine.runtime import ModelRunner
from matbench.errors import GateFailure
from matbench.protocol.records import GateResult
from tests.helpers import engine_for


def _gates(loaded, pair, **kw):
    engine = engine_for(loaded, **kw)
    layout, caches = engine.prepare(pair)
    record = engine.score(pair, layout, caches)
    return engine, layout, caches, record


def _plant_query_off_by_one(monkeypatch) -> None:
    """Compact serving asks the query one position past where it belongs (gate A's planted bug)."""
    original = serving.serve_compact

    def off_by_one(runner, requests, query_position=None):
        start = int(max(r.cache.positions[r.cache.kept_slots(r.served)].max() for r in requests)) + 2
        return original(runner, requests, query_position=start)

    monkeypatch.setitem(serving.SERVING, "compact", off_by_one)


def test_all_gates_pass(tiny, pairs):
    for pair in pairs:
        engine, layout, caches, record = _gates(tiny, pair)
        results = {g.name: g for g in run_gates(engine, pair, layout, caches, record)}
        assert set(results) == {"A", "B", "mask", "layout", "control"}
        assert all(g.passed for g in results.values()), results
        assert results["A"].max_abs_diff <= FLOAT32_TOL
        assert results["mask"].max_abs_diff == 0.0
        assert results["layout"].max_abs_diff <= FLOAT32_TOL
        assert record.arms["control"].shift == 0.0


def test_gate_b_compares_for_full_attention_only(tiny_llama, tiny_gemma, pairs):
    engine, layout, caches, _ = _gates(tiny_llama, pairs[0])
    result = gate_b(engine, pairs[0], layout, caches)
    assert result.passed and result.max_abs_diff is not None and result.max_abs_diff <= FLOAT32_TOL
    engine, layout, caches, _ = _gates(tiny_gemma, pairs[0])
    assert gate_b(engine, pairs[0], layout, caches).max_abs_diff is None  # skipped, by design


def test_sliding_window_makes_compact_and_native_differ(tiny_gemma, pairs):
    """The window is measured in original positions natively and in slots when compacted."""
    from matbench.engine.pair_engine import probe_logits

    engine, layout, caches, _ = _gates(tiny_gemma, pairs[0])
    arm = pairs[0].arm("root")
    native = probe_logits(engine, pairs[0], caches, arm, serving="native")
    compact = probe_logits(engine, pairs[0], caches, arm, serving="compact", query_position=layout.length)
    assert float((native - compact).abs().max()) > 1e-2


# --- planted bugs: each gate must fail on the bug it guards against ---------------------------


def test_gate_a_catches_query_position_off_by_one(tiny_llama, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny_llama, pairs[0])
    _plant_query_off_by_one(monkeypatch)
    result = gate_a(engine, pairs[0], layout, caches)
    assert not result.passed and result.max_abs_diff > FLOAT32_TOL


def test_gate_a_catches_a_missing_sliding_window(tiny_gemma, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny_gemma, pairs[0])
    monkeypatch.setattr(engine.runner, "windows", [None] * len(engine.runner.windows))
    result = gate_a(engine, pairs[0], layout, caches)
    assert not result.passed


def test_mask_gate_catches_an_ignored_key_mask(tiny_llama, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny_llama, pairs[0])
    original = ModelRunner.build_masks

    def no_validity(self, query_coords, key_coords, key_valid):
        return original(self, query_coords, key_coords, torch.ones_like(key_valid))

    monkeypatch.setattr(ModelRunner, "build_masks", no_validity)
    result = mask_gate(engine, pairs[0], layout, caches)
    assert not result.passed and result.max_abs_diff > 1e-3


def test_gate_b_catches_native_rows_off_by_one(tiny_llama, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny_llama, pairs[0])
    original = serving.serve_native

    def shifted(runner, requests):
        from dataclasses import replace

        moved = [replace(r, served=tuple(min(i + 1, 23) for i in r.served)) for r in requests]
        return original(runner, moved)

    monkeypatch.setitem(serving.SERVING, "native", shifted)
    assert not gate_b(engine, pairs[0], layout, caches).passed


def test_layout_gate_catches_gathered_native_rows_at_slot_coordinates(tiny_gemma, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny_gemma, pairs[0])
    original = serving._serve

    def slot_coords(runner, requests, slots, coords, next_position, next_coord, valid=None, reserve=0, heads=None):
        if len(slots[0]) < requests[0].cache.length:  # the gathered layout, not the literal one
            coords = [torch.arange(len(c)) for c in coords]  # windows now measured in slots
        return original(runner, requests, slots, coords, next_position, next_coord, valid, reserve, heads)

    assert layout_gate(engine, pairs[0], layout, caches).passed
    monkeypatch.setattr(serving, "_serve", slot_coords)
    result = layout_gate(engine, pairs[0], layout, caches)
    assert not result.passed and result.max_abs_diff > 1e-2


def test_control_gate_catches_a_span_that_runs_into_the_source(tiny_llama, pairs, monkeypatch):
    from matbench.engine.cache import EventCache

    def spans_too_long(self, served):
        slots = list(range(*self.header_span))
        for i in sorted(served):
            end = self.event_spans[min(i + 1, len(self.event_spans) - 1)][1]
            slots.extend(range(self.event_spans[i][0], end))
        return torch.tensor(sorted(set(slots)), dtype=torch.long)

    monkeypatch.setattr(EventCache, "kept_slots", spans_too_long)
    *_, record = _gates(tiny_llama, pairs[0])
    assert not control_gate(record).passed


def test_control_gate_catches_a_non_causal_prefill_without_prefix_sharing(tiny_llama, pairs, monkeypatch):
    import dataclasses

    import matbench.engine.prefill as prefill_mod

    original_mask, original_prefill = ModelRunner.build_masks, prefill_mod.prefill_pairs

    def sees_the_future(self, query_coords, key_coords, key_valid):
        return original_mask(self, torch.full_like(query_coords, 10**6), key_coords, key_valid)

    def unshared(runner, layouts, chunk_size=None, store=None):  # members share only their first token
        return original_prefill(runner, [dataclasses.replace(lay, prefix_tokens=1) for lay in layouts], chunk_size)

    monkeypatch.setattr(ModelRunner, "build_masks", sees_the_future)
    monkeypatch.setattr(prefill_mod, "prefill_pairs", unshared)
    *_, record = _gates(tiny_llama, pairs[0])
    assert not control_gate(record).passed


def test_identity_gate_catches_a_missing_position_budget(tiny_llama, pairs, monkeypatch):
    import matbench.engine.layout as pairs_mod
    from matbench.engine.render import Renderer
    from matbench.errors import MatbenchError

    renderer = Renderer(tiny_llama.tokenizer)
    layout = pairs_mod.layout_pair(pairs[0], renderer)
    assert layout.members[0].positions != layout.members[1].positions  # ONLINE/OFFLINE differ in length
    broken = pairs_mod.MemberLayout(
        layout.members[0].input_ids,
        tuple(range(len(layout.members[0].input_ids))),
        layout.members[0].header_span,
        layout.members[0].event_spans,
    )
    bad = pairs_mod.PairLayout(
        layout.pair, (broken, layout.members[1]), layout.budget, layout.length, layout.prefix_tokens
    )
    with pytest.raises(MatbenchError, match="identity gate"):
        bad.check_identity()


# --- gate A's reference in chunks (long dialogs) ------------------------------------------------


@pytest.mark.parametrize("chunk", [17, 64, 100])
def test_chunked_reference_equals_the_plain_forward(tiny, chunk):
    """Chunks shorter than, equal to and longer than gemma3's 64-token window: the reference run
    through transformers' own cache gives the unchunked forward's logits, position gaps included."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 230))
    pos = torch.cat([torch.arange(0, 120), torch.arange(150, 260)])[None]  # one gap of 30
    runner = ModelRunner(tiny.model, tiny.model.config)
    whole = runner.plain_forward(ids, pos)
    chunked = runner.plain_forward(ids, pos, chunk)
    assert whole.shape == chunked.shape == (1, tiny.model.config.vocab_size)
    assert float((whole - chunked).abs().max()) <= 1e-4


def test_gate_a_under_a_chunk_size_uses_the_chunked_reference(tiny, pairs, monkeypatch):
    engine, layout, caches, _ = _gates(tiny, pairs[0], chunk_size=50)
    calls = []
    original = ModelRunner._plain_chunk

    def counting(self, input_ids, position_ids, start, end, cache):
        calls.append((start, end, cache is not None))
        return original(self, input_ids, position_ids, start, end, cache)

    monkeypatch.setattr(ModelRunner, "_plain_chunk", counting)
    result = gate_a(engine, pairs[0], layout, caches)
    assert result.passed and result.max_abs_diff <= FLOAT32_TOL, result
    # one chunked reference per member compared (a sliding model compares the gap-free one only)
    query = len(engine.query_ids(pairs[0], pairs[0].arms[0], engine.probe_readout))
    expected = []
    for member in layout.members:
        if not tiny.has_sliding_layers or member.positions[-1] - member.positions[0] + 1 == len(member.positions):
            n = len(member.input_ids) + query
            expected += [(start, min(start + 50, n), True) for start in range(0, n, 50)]
    assert expected and calls == expected


@pytest.mark.parametrize(
    ("attn", "dtype", "hint"),
    [
        ("sdpa", "float32", "; try --attn-implementation eager"),
        ("sdpa_grouped", "bfloat16", "; rerun with --dtype float32 (the gates' tolerances are float32's)"),
        ("eager", "bfloat16", "; rerun with --dtype float32 (the gates' tolerances are float32's)"),
        ("sdpa_grouped", "float32", "; try --attn-implementation eager"),
        ("eager", "float32", "; rerun with --dtype float64 to tell rounding from a fault"),
        ("eager", "float64", ""),
    ],
)
def test_require_hints_what_can_tell_rounding_from_a_fault(attn, dtype, hint):
    failed = GateResult("A", False, 2e-3, "max |dlogit| 2.00e-03 (tol 0.001)")
    with pytest.raises(GateFailure) as info:
        require([GateResult("mask", True, 0.0, "ok"), failed], "s-00002", attn, dtype)
    assert str(info.value) == "faithfulness gate A failed on s-00002: max |dlogit| 2.00e-03 (tol 0.001)" + hint
    require([GateResult("A", True, 1e-5, "ok")], "s-00002", attn, dtype)  # all passed: no error
    with pytest.raises(GateFailure) as info:  # the hints are for the logit gates only
        require(
            [GateResult("mask", False, 1.0, "max |dlogit| 1.00e+00 with noise in dropped rows")], "s-1", attn, dtype
        )
    assert str(info.value) == "faithfulness gate mask failed on s-1: max |dlogit| 1.00e+00 with noise in dropped rows"


def test_float64_tells_rounding_from_a_fault(tiny, pairs, monkeypatch):
    """--dtype float64: gate A's float32 |dlogit| (rounding, a few 1e-6 here) drops to exactly 0,
    on full-attention and sliding-window models alike, while a planted off-by-one still fails."""
    import copy

    from matbench.models.loading import LoadedModel

    wide = LoadedModel(copy.deepcopy(tiny.model).double(), tiny.tokenizer, tiny.source, "float64", "cpu")
    engine, layout, caches, _ = _gates(wide, pairs[0])
    assert engine.runner.dtype == torch.float64
    exact = gate_a(engine, pairs[0], layout, caches)
    assert exact.passed and exact.max_abs_diff == 0.0 and exact.detail.endswith(f"(tol {FLOAT32_TOL})")
    narrow, narrow_layout, narrow_caches, _ = _gates(tiny, pairs[0])
    assert gate_a(narrow, pairs[0], narrow_layout, narrow_caches).max_abs_diff > 0.0
    _plant_query_off_by_one(monkeypatch)
    fault64 = gate_a(engine, pairs[0], layout, caches)
    fault32 = gate_a(narrow, pairs[0], narrow_layout, narrow_caches)
    assert not fault64.passed and not fault32.passed
    # The criterion the README gives: rounding shrinks with the precision, a fault keeps its size.
    assert fault64.max_abs_diff == pytest.approx(fault32.max_abs_diff, rel=1e-3)


def test_the_gates_serve_several_arms_per_forward_with_the_same_logits(tiny_llama, pairs, monkeypatch):
    """probe_logits_arms batches arms up to the engine's token budget: fewer serves, the same
    per-arm logits as one arm at a time (the gates compare these)."""
    from matbench.engine.pair_engine import probe_logits, probe_logits_arms

    pair = pairs[0]
    engine, layout, caches, _ = _gates(tiny_llama, pair)
    arms = list(pair.arms)
    calls = []
    for mode in ("compact", "native"):
        original = serving.SERVING[mode]

        def counted(runner, requests, _original=original, _mode=mode, **kw):
            calls.append((_mode, len(requests)))
            return _original(runner, requests, **kw)

        monkeypatch.setitem(serving.SERVING, mode, counted)
    width = 2 * max(c.length for c in caches)
    engine.prefill_batch_tokens = 2 * width  # two arms (two members each) per forward
    batched = probe_logits_arms(engine, pair, caches, arms, serving="native", full_layout=True)
    assert [n for _, n in calls] == [4] * (len(arms) // 2) + [2] * (len(arms) % 2)
    single = [probe_logits(engine, pair, caches, arm, serving="native", full_layout=True) for arm in arms]
    assert len(batched) == len(single) == len(arms)
    for b, s in zip(batched, single):
        assert b.shape == s.shape == (2, s.shape[-1]) and torch.allclose(b, s, atol=1e-5)
    calls.clear()
    results = {g.name: g for g in run_gates(engine, pair, layout, caches)}
    assert all(g.passed for g in results.values()) and results["mask"].max_abs_diff == 0.0
    assert max(n for _, n in calls) == 4


def test_the_logit_tolerance_grows_past_1024_tokens_as_measured():
    """1e-3 up to 1,024 tokens, then (L/1024)^0.65: at SmolLM2's 39,784-token harvest dialog 4x the
    worst float32 rounding reading there (2.7e-3, which float64 shrinks 5x), while a fault of the
    planted off-by-one's size (~0.3) stays a failure at any length."""
    assert logit_tolerance(0) == logit_tolerance(1024) == FLOAT32_TOL
    assert logit_tolerance(4096) == pytest.approx(2.46e-3, rel=1e-2)
    assert logit_tolerance(39784) == pytest.approx(4 * 2.7e-3, rel=1e-2)
    assert logit_tolerance(1025) > FLOAT32_TOL and logit_tolerance(40000) < logit_tolerance(65536) < 0.02
    zero, rounding, fault = torch.zeros(1, 3), torch.tensor([[5e-3, 0, 0]]), torch.tensor([[0.3, 0, 0]])
    long = compare_logits("A", zero, rounding, True, length=40000)
    assert long.passed and long.detail == "max |dlogit| 5.00e-03 (tol 0.0108 at 40,000 tokens)"
    short = compare_logits("A", zero, rounding, True, length=700)
    assert not short.passed and short.detail == "max |dlogit| 5.00e-03 (tol 0.001)"
    assert not compare_logits("A", zero, fault, True, length=65536).passed


def _encoded_pair():
    from matbench.data_gen import SUITES

    return SUITES.get("var_tracking").generate(0, 1)[0]  # isolated, anchored and text arms


def test_encodings_gate_runs_where_encodings_are_batched_and_passes(tiny):
    from matbench.engine.gates import encodings_gate

    pair = _encoded_pair()
    one = engine_for(tiny, batch_encodings=False)
    layout, caches = one.prepare(pair)
    assert encodings_gate(one, pair, layout, caches) is None
    batched = engine_for(tiny, batch_encodings=True)
    result = encodings_gate(batched, pair, layout, caches)
    assert result is not None and result.passed and result.max_abs_diff is not None
    record = batched.score(pair, layout, caches)
    assert "encodings" in [g.name for g in run_gates(batched, pair, layout, caches, record)]


def test_encodings_gate_catches_a_re_encoding_one_position_late(tiny_llama, monkeypatch):
    from matbench.engine import encodings
    from matbench.engine.gates import encodings_gate

    original = encodings.prefill_rows
    shifted = []

    def late(runner, new, past=None, chunk_size=None):
        shifted.append(len(new))
        return original(runner, [(ids, tuple(p + 1 for p in pos)) for ids, pos in new], past, chunk_size)

    monkeypatch.setattr(encodings, "prefill_rows", late)
    pair = _encoded_pair()
    engine = engine_for(tiny_llama, batch_encodings=True)
    layout, caches = engine.prepare(pair)
    result = encodings_gate(engine, pair, layout, caches)
    assert shifted and result is not None and not result.passed


def test_a_layout_gate_failing_in_bfloat16_offers_float32():
    failed = GateResult("layout", False, 1.07, "max |dlogit| 1.07e+00; argmax flips 1 (near ties: 0)")
    with pytest.raises(GateFailure, match=r"gate layout failed on s-3: .*; rerun with --dtype float32 \(the gates'"):
        require([failed], "s-3", "sdpa_grouped", "bfloat16")
    with pytest.raises(GateFailure) as info:  # in float32 a layout failure is the layout's: no hint
        require([failed], "s-3", "sdpa_grouped", "float32")
    assert str(info.value).endswith("(near ties: 0)")
