"""Members that begin with a member prefilled before compute only what follows it
(`matbench.engine.prefixes`): the forwards see the suffix alone, and the rows equal a prefill of
the whole member."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from matbench.data_gen import SUITES
from matbench.engine.layout import layout_pair
from matbench.engine.prefixes import MIN_SHARED_TOKENS, Prefilled, PrefixStore, shared_length
from matbench.engine.runtime import ModelRunner
from matbench.protocol.pairs import prefill_order
from tests.helpers import engine_for


def _arrays(ids, positions=None):
    ids = np.asarray(ids, dtype=np.int64)
    return ids, np.asarray(positions if positions is not None else range(len(ids)), dtype=np.int64)


def test_shared_length_counts_equal_ids_at_equal_positions():
    a = _arrays([5, 6, 7, 8])
    assert shared_length(a, _arrays([5, 6, 7, 8, 9])) == 4
    assert shared_length(a, _arrays([5, 6, 0, 8])) == 2
    assert shared_length(a, _arrays([5, 6, 7, 8], [0, 1, 3, 4])) == 2  # same ids, a position gap
    assert shared_length(a, _arrays([1])) == 0


def test_the_store_reuses_only_long_shared_prefixes_and_keeps_the_last_entries():
    n = MIN_SHARED_TOKENS
    store = PrefixStore(keep=2)
    store.add(Prefilled(*_arrays(range(2 * n)), rows=None))  # type: ignore[arg-type]
    assert store.best(*_arrays(list(range(n)) + [-1] * (n + 1)))[1] == 0  # under half of the member
    assert store.best(*_arrays(list(range(n - 1)) + [-1]))[1] == 0  # under MIN_SHARED_TOKENS
    entry, shared = store.best(*_arrays(list(range(n)) + [-1] * n))
    assert shared == n and entry is store.entries[0]
    for k in range(3):
        store.add(Prefilled(*_arrays([k]), rows=None))  # type: ignore[arg-type]
    store.trim()
    assert [int(e.ids[0]) for e in store.entries] == [1, 2]


def _widths(monkeypatch) -> list[int]:
    seen: list[int] = []
    forward = ModelRunner.forward

    def counting(self, ids, *args, **kw):
        seen.append(int(ids.shape[1]))
        return forward(self, ids, *args, **kw)

    monkeypatch.setattr(ModelRunner, "forward", counting)
    return seen


def test_a_member_with_an_event_appended_prefills_only_that_event(tiny_llama, monkeypatch):
    pair = SUITES.get("discovery").generate(0, 1)[0]
    longer = dataclasses.replace(pair, item_id="longer", events=pair.events + ("A note appended later.\n",))
    shared = engine_for(tiny_llama, share_prefixes=True)
    ((_, first, first_caches),) = shared.prepare_many([pair])
    widths = _widths(monkeypatch)
    ((_, layout, caches),) = shared.prepare_many([longer])
    a, b = layout.members
    appended = len(a.input_ids) - len(first.members[0].input_ids)
    assert appended > 0
    # member A: the appended event after A's rows; member B: from the source on, after A's prefix
    assert widths == [appended, len(b.input_ids) - layout.prefix_tokens]
    monkeypatch.undo()
    whole = engine_for(tiny_llama, share_prefixes=False)
    ((_, _, ref),) = whole.prepare_many([longer])
    for m in (0, 1):
        assert torch.equal(caches[m].positions, ref[m].positions)
        for got, want in zip(caches[m].keys + caches[m].values, ref[m].keys + ref[m].values):
            assert got.shape == want.shape
            assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    # the first member's rows before the appended event are the earlier member's own tensors' values
    n = len(first.members[0].input_ids)
    assert torch.equal(caches[0].keys[0][:, :, :n], first_caches[0].keys[0])


def test_after_a_batch_the_last_pairs_first_member_is_still_there_to_start_from(tiny_llama, monkeypatch):
    first, pair = SUITES.get("discovery").generate(0, 2)
    longer = dataclasses.replace(pair, item_id="longer", events=pair.events + ("A note appended later.\n",))
    engine = engine_for(tiny_llama, share_prefixes=True)
    engine.prepare_many([first, pair])  # two pairs: four members stored, two kept
    widths = _widths(monkeypatch)
    ((_, layout, _),) = engine.prepare_many([longer])
    # A after the earlier A's rows, not after a second member's rows up to its source
    appended = len(layout.members[0].input_ids) - len(layout_pair(pair, engine.renderer).members[0].input_ids)
    assert widths == [appended, len(layout.members[1].input_ids) - layout.prefix_tokens]


def test_a_batch_waits_a_round_for_a_prefix_another_item_of_it_computes(tiny_llama, monkeypatch):
    pair = SUITES.get("discovery").generate(0, 1)[0]
    longer = dataclasses.replace(pair, item_id="longer", events=pair.events + ("A note appended later.\n",))
    engine = engine_for(tiny_llama, share_prefixes=True)
    widths = _widths(monkeypatch)
    (_, short, _), (_, long, _) = engine.prepare_many([pair, longer])
    appended = len(long.members[0].input_ids) - len(short.members[0].input_ids)
    suffix = [len(lay.members[1].input_ids) - lay.prefix_tokens for lay in (short, long)]
    # round one: the short pair whole (A, then B's suffix); round two: the appended event, B's suffix
    assert widths == [len(short.members[0].input_ids), suffix[0], appended, suffix[1]]


def test_without_sharing_every_member_is_prefilled_whole(tiny_llama, monkeypatch):
    pair = SUITES.get("discovery").generate(0, 1)[0]
    longer = dataclasses.replace(pair, item_id="longer", events=pair.events + ("A note appended later.\n",))
    engine = engine_for(tiny_llama, share_prefixes=False)
    engine.prepare_many([pair])
    widths = _widths(monkeypatch)
    ((_, layout, _),) = engine.prepare_many([longer])
    assert widths == [len(layout.members[0].input_ids), len(layout.members[1].input_ids) - layout.prefix_tokens]


def test_sharing_is_on_by_default_on_a_gpu_only(tiny_llama):
    assert engine_for(tiny_llama).share_prefixes is False  # the CPU's numbers stay those of whole prefills
    gpu = dataclasses.replace(tiny_llama, device="cuda")
    assert engine_for(gpu).share_prefixes is True


def test_prefill_order_puts_the_pairs_of_one_context_together():
    pairs = SUITES.get("discovery").generate(0, 3)
    other = [dataclasses.replace(p, item_id=p.item_id + "-q2", arms=p.arms[:1]) for p in pairs]
    mixed = [pairs[0], pairs[1], other[0], pairs[2], other[1]]
    # one context or three, the pairs of one prefill end up side by side, each where its first stood
    expected = [pairs[0].item_id, other[0].item_id, pairs[1].item_id, other[1].item_id, pairs[2].item_id]
    for by_context in (False, True):
        assert [p.item_id for p in prefill_order(mixed, by_context)] == expected


def test_by_context_the_pairs_that_open_alike_run_together_and_otherwise_not():
    pairs = SUITES.get("discovery").generate(0, 40)
    opening = [p.events[:1] for p in pairs]
    first = next(k for k in range(1, len(pairs)) if opening[k] == opening[0] and opening[k - 1] != opening[0])
    together = prefill_order(pairs, by_context=True)
    ones = [k for k, p in enumerate(together) if p.events[:1] == opening[0]]
    assert ones == list(range(len(ones))) and len(ones) == opening.count(opening[0]) > 1
    # without it the suite order stands (every discovery pair is its own prefill): a CPU run keeps
    # the batches, and so the numbers, of the committed runs
    assert [p.item_id for p in prefill_order(pairs)] == [p.item_id for p in pairs]
    assert together[1].item_id == pairs[first].item_id
