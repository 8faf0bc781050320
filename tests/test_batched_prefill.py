"""Batched global prefill equals the one-pair-at-a-time prefill: same rows, same positions."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from matbench.data_gen import SUITES
from matbench.engine.cache import prefill_pair
from matbench.engine.layout import layout_pair
from matbench.engine.prefill import prefill_pairs
from tests.helpers import engine_for


def _mixed_pairs():
    # Different prefix and suffix lengths in one batch (padding), and an item whose members are
    # identical (an unpaired update-style control would do; discovery's control arm is per arm).
    return (
        SUITES.get("discovery").generate(0, 2)
        + SUITES.get("trigger").generate(0, 2)
        + SUITES.get("landing").generate(0, 1)
    )


@pytest.mark.parametrize("chunk_size", [None, 64])
def test_batched_prefill_matches_per_pair_prefill(tiny, chunk_size):
    engine = engine_for(tiny)
    pairs = _mixed_pairs()
    layouts = [layout_pair(p, engine.renderer) for p in pairs]
    batched = prefill_pairs(engine.runner, layouts, chunk_size)
    for layout, got in zip(layouts, batched):
        ref = prefill_pair(engine.runner, layout, chunk_size)
        for m in (0, 1):
            assert torch.equal(got[m].positions, ref[m].positions)
            assert got[m].length == ref[m].length and got[m].event_spans == ref[m].event_spans
            for gk, rk in zip(got[m].keys + got[m].values, ref[m].keys + ref[m].values):
                assert gk.shape == rk.shape
                assert torch.allclose(gk, rk, atol=1e-5, rtol=1e-5)  # float32: batching only reorders sums


def test_identical_members_share_one_prefill(tiny_llama):
    engine = engine_for(tiny_llama)
    pair = SUITES.get("discovery").generate(0, 1)[0]
    layout = layout_pair(pair, engine.renderer)
    same = type(layout)(
        layout.pair,
        (layout.members[0], layout.members[0]),
        layout.budget,
        layout.length,
        len(layout.members[0].input_ids),
    )
    ((a, b),) = prefill_pairs(engine.runner, [same])
    assert a is b or all(torch.equal(x, y) for x, y in zip(a.keys, b.keys))


def test_engine_records_do_not_depend_on_batched_prefill(tiny):
    pairs = _mixed_pairs()
    one = engine_for(tiny)
    many = engine_for(tiny)
    ref = one.score_many([(p, *one.prepare(p)) for p in pairs], [("probe", one.serving)])
    got = many.score_many(many.prepare_many(pairs), [("probe", many.serving)])
    for r, g in zip(ref, got):
        for arm, entry in r[("probe", one.serving)].arms.items():
            other = g[("probe", many.serving)].arms[arm]
            assert (entry.outcome, entry.probe_answers) == (other.outcome, other.probe_answers)
            assert entry.shift == pytest.approx(other.shift, abs=1e-4)


def test_prefetched_layouts_are_used_once(tiny_llama, monkeypatch):
    from matbench.engine import pair_engine

    engine = engine_for(tiny_llama)
    pairs = SUITES.get("discovery").generate(0, 3)
    calls: list[list[str]] = []
    real = pair_engine.layout_pairs
    monkeypatch.setattr(
        pair_engine,
        "layout_pairs",
        lambda batch, renderer: calls.append([p.item_id for p in batch]) or real(batch, renderer),
    )
    prefetched = engine.prefetch_layouts(pairs)
    assert calls == [[p.item_id for p in pairs]]  # one batch
    first = [layout for _, layout, _ in engine.prepare_many(pairs)]
    assert first == prefetched and len(calls) == 1  # the CPU work done ahead is reused, not redone
    again = [layout for _, layout, _ in engine.prepare_many(pairs)]
    assert again == first and calls[1:] == calls[:1]  # and not kept forever: a second batch lays out anew
    engine.prefetch_layouts(pairs[:1])
    engine.prepare_many(pairs)
    assert calls[2:] == [[pairs[0].item_id], [p.item_id for p in pairs[1:]]]  # only what was not ahead


def test_the_gpu_batch_estimate_reads_prefetched_layouts(tiny_llama, monkeypatch):
    import torch

    from matbench.engine.memory import batch_pairs_for, choose_batch_pairs

    engine = engine_for(tiny_llama)
    pairs = SUITES.get("discovery").generate(0, 20)
    # The last pair's fillers are longer than any other pair's: the first 16 alone would miss it.
    last = pairs[-1]
    events = tuple(e if i == last.source else e + " after a long maintenance window" for i, e in enumerate(last.events))
    pairs[-1] = dataclasses.replace(last, events=events)
    assert choose_batch_pairs(tiny_llama, pairs, engine.prefetch_layouts) == 2  # the CPU: fixed
    gpu = type(tiny_llama)(tiny_llama.model, tiny_llama.tokenizer, tiny_llama.source, tiny_llama.dtype, "cuda")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (8 << 30, 16 << 30))
    seen = []
    chosen = choose_batch_pairs(gpu, pairs, lambda sample: seen.extend(sample) or engine.prefetch_layouts(sample))
    # a sample (the first 16 and the 4 of most text), laid out once and kept for prepare_many
    assert seen[:16] == pairs[:16] and pairs[-1] in seen and len(seen) == len(set(seen)) <= 20
    longest = max(len(m.input_ids) for m in engine.prefetch_layouts(pairs[-1:])[0].members)
    assert longest > max(len(m.input_ids) for lay in engine.prefetch_layouts(pairs[:19]) for m in lay.members)
    assert chosen == batch_pairs_for(
        8 << 30, tiny_llama.text_config, 4, longest, len(pairs[0].arms), tiny_llama.attn_implementation == "eager"
    )


@pytest.mark.parametrize("lone", [1, 2**40])
def test_suffixes_after_pasts_of_different_lengths(tiny_llama, lone, monkeypatch):
    """Under `sdpa_grouped`, suffixes after pasts of different lengths that attend over enough
    pairs run one length at a time on the causal path (two rows share a length: one forward for
    them); the rows equal those of one batched forward through explicit masks (eager)."""
    import copy

    from matbench.engine import prefill
    from matbench.engine.prefill import prefill_rows
    from matbench.engine.runtime import ModelRunner
    from matbench.models.loading import resolve_attn

    model = copy.deepcopy(tiny_llama.model)
    model.config._attn_implementation = resolve_attn("sdpa_grouped")
    grouped = ModelRunner(model, tiny_llama.text_config)
    grouped.causal_past = True  # as on a GPU; on the CPU the attention builds the causal mask in full
    eager = ModelRunner(tiny_llama.model, tiny_llama.text_config)
    torch.manual_seed(3)

    def rows(n, start=0):
        return tuple(torch.randint(5, 100, (n,)).tolist()), tuple(range(start, start + n))

    heads = [rows(n) for n in (9, 5, 9, 12)]
    past = prefill_rows(eager, heads)
    new = [rows(n, len(h[0])) for n, h in zip((7, 11, 3, 6), heads)]
    batches, causal = [], []
    real_batch, real_forward = prefill._prefill_batch, ModelRunner.forward
    monkeypatch.setattr(prefill, "LONE_ATTENTION", lone)
    monkeypatch.setattr(prefill, "_prefill_batch", lambda r, n, p, c: batches.append(len(n)) or real_batch(r, n, p, c))
    monkeypatch.setattr(
        ModelRunner, "forward", lambda s, *a, **k: causal.append(k["causal"]) or real_forward(s, *a, **k)
    )
    got = prefill_rows(grouped, new, past)
    if lone == 1:  # past lengths 9 (rows 0 and 2), 5 and 12: three forwards, each causal over slots
        assert sorted(batches) == [1, 1, 2] and causal == [True] * 3
    else:  # too little attention to pay for a forward of its own: one batch, explicit masks
        assert batches == [4] and causal == [False]
    monkeypatch.undo()
    ref = prefill_rows(eager, new, past)
    for g, r in zip(got, ref):
        assert torch.equal(g.positions, r.positions)
        for x, y in zip(g.keys + g.values, r.keys + r.values):
            assert torch.allclose(x, y, atol=1e-5)


def test_slot_causal_needs_unpadded_pasts_and_increasing_coordinates(tiny_llama):
    from matbench.engine.prefill import Rows, _slot_causal

    def past(n, start=0):
        return Rows([], [], torch.arange(start, start + n))

    assert _slot_causal([((1, 2), (5, 6)), ((1,), (9,))], [past(5), past(5, 3)])
    assert not _slot_causal([((1, 2), (5, 6)), ((1,), (9,))], [past(5), past(4)])  # a padded slot first
    assert _slot_causal([((1, 2), (5, 6)), ((), ())], [past(5), past(4)])  # no new tokens: nothing to see
    assert not _slot_causal([((1, 2), (4, 6))], [past(5)])  # coordinate 4 after 4
    assert not _slot_causal([((1, 2), (7, 6))], None)
    assert _slot_causal([((1, 2), (7, 9))], None)


def test_chunks_after_the_first_run_causal_and_equal_one_forward(tiny_llama, monkeypatch):
    """A chunked prefill of right-padded rows: with `causal_past`, every chunk after the first is
    causal over slots too (a row whose real tokens ended in an earlier chunk has only padded
    queries left), and the rows equal those of one explicit forward."""
    import copy

    from matbench.engine.prefill import prefill_rows
    from matbench.engine.runtime import ModelRunner
    from matbench.models.loading import resolve_attn

    model = copy.deepcopy(tiny_llama.model)
    model.config._attn_implementation = resolve_attn("sdpa_grouped")
    grouped = ModelRunner(model, tiny_llama.text_config)
    grouped.causal_past = True
    eager = ModelRunner(tiny_llama.model, tiny_llama.text_config)
    torch.manual_seed(4)
    new = [(tuple(torch.randint(5, 100, (n,)).tolist()), tuple(range(3, 3 + 2 * n, 2))) for n in (9, 5, 12)]
    causal = []
    real_forward = ModelRunner.forward
    monkeypatch.setattr(
        ModelRunner, "forward", lambda s, *a, **k: causal.append(k["causal"]) or real_forward(s, *a, **k)
    )
    got = prefill_rows(grouped, new, chunk_size=4)
    assert causal == [True, True, True]  # 12 tokens in chunks of 4
    monkeypatch.undo()
    ref = prefill_rows(eager, new)
    for g, r in zip(got, ref):
        assert torch.equal(g.positions, r.positions)
        for x, y in zip(g.keys + g.values, r.keys + r.values):
            assert torch.allclose(x, y, atol=1e-5)
