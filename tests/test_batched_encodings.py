"""The isolated, headless, anchored and text encodings of a whole batch in a few forwards
(`matbench.engine.encodings`) serve the rows, positions and L that one arm at a time gives."""

from __future__ import annotations

import dataclasses

import torch

from matbench.data_gen import SUITES
from matbench.engine.runtime import ModelRunner
from tests.helpers import engine_for

ENCODED = ("isolated", "headless", "headless_runs", "anchored", "text")


def _pairs():
    base = SUITES.get("discovery").generate(0, 1)
    # every encoding over the same served events, one of them donor-visible (both members encoded),
    # and the header alone re-read as text
    recoded = [
        dataclasses.replace(
            pair,
            item_id=f"{pair.item_id}-enc",
            arms=tuple(
                dataclasses.replace(arm, name=f"{arm.name}-{enc}", encoding=enc)
                for arm in pair.arms
                if arm.encoding == "joint" and not arm.swapped
                for enc in ENCODED
            )
            + (dataclasses.replace(pair.arms[0], name="nothing-text", served=(), encoding="text", uses_source=False),),
        )
        for pair in base
    ]
    return recoded + SUITES.get("var_tracking").generate(0, 1) + SUITES.get("phantom_swap").generate(0, 1)


def _served(cache, served):
    slots = cache.kept_slots(served)
    return cache.positions[slots], [k[:, :, slots] for k in cache.keys + cache.values]


def test_batched_encodings_serve_the_rows_of_one_arm_at_a_time(tiny):
    pairs = _pairs()
    one, batched = engine_for(tiny, batch_encodings=False), engine_for(tiny, batch_encodings=True)
    items = one.prepare_many(pairs)
    want, got = one.derived_many(items), batched.derived_many(items)
    encodings = set()
    for (pair, _, _), w, g in zip(items, want, got):
        assert w.keys() == g.keys()
        for arm in pair.arms:
            if arm.name not in w:
                continue
            encodings.add(arm.encoding)
            for m in (0, 1):
                assert g[arm.name][m].length == w[arm.name][m].length
                (wp, wr), (gp, gr) = _served(w[arm.name][m], arm.served), _served(g[arm.name][m], arm.served)
                assert torch.equal(gp, wp)
                for a, b in zip(gr, wr):
                    assert a.shape == b.shape
                    assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)  # float32: batching only reorders sums
            # a member-independent arm shares one cache, as one arm at a time does
            assert (g[arm.name][0] is g[arm.name][1]) == (w[arm.name][0] is w[arm.name][1])
    assert encodings == set(ENCODED)


def test_batched_encodings_give_the_records_of_one_arm_at_a_time(tiny):
    pairs = _pairs()
    records = {}
    for batch in (False, True):
        engine = engine_for(tiny, batch_encodings=batch)
        items = engine.prepare_many(pairs)
        records[batch] = engine.score_many(items, [("probe", engine.serving)])
    for w, g in zip(records[False], records[True]):
        (w,), (g,) = w.values(), g.values()
        for name, arm in w.arms.items():
            assert g.arms[name].outcome == arm.outcome
            for a, b in zip(g.arms[name].probe_logp, arm.probe_logp):
                assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4


def test_a_batch_encodes_in_one_forward_not_one_per_event(tiny_llama, monkeypatch):
    pairs = SUITES.get("var_tracking").generate(0, 3)  # isolated and anchored (after a past), text
    engine = engine_for(tiny_llama, batch_encodings=True, prefill_batch_tokens=1 << 20)
    items = engine.prepare_many(pairs)
    calls = []
    forward = ModelRunner.forward
    monkeypatch.setattr(
        ModelRunner, "forward", lambda self, ids, *a, **k: calls.append(ids.shape) or forward(self, ids, *a, **k)
    )
    engine.derived_many(items)
    # every encoding of the batch starts after a past (the header, or the header and an anchor): one forward
    assert len(calls) == 1 and calls[0][0] > len(pairs)
