"""Re-encodings of served rows (SPEC 3.4): the anchored encoding (kv_vartrack's `anch`) on a tiny
model. An anchor that covers everything before an event recomputes the global prefill's rows; a
short one does not, and the engine builds it from the arm's declared encoding."""

from __future__ import annotations

from dataclasses import replace

import torch

from matbench.data_gen import SUITES
from matbench.engine.cache import isolated_cache
from tests.helpers import engine_for


def test_an_anchor_covering_the_prefix_gives_the_joint_rows_and_a_short_one_does_not(tiny_llama):
    pair = SUITES.get("discovery").generate(0, 1)[0]
    arm = pair.arms[0]
    pair = replace(pair, arms=(replace(arm, name="anch", encoding="anchored"), *pair.arms[1:]))
    engine = engine_for(tiny_llama)
    layout, caches = engine.prepare(pair)
    member, joint = layout.members[0], caches[0]
    anch = engine.derived_caches(pair, layout, caches)["anch"][0]  # 1024 tokens cover every prefix here
    event = max(arm.served)
    short = isolated_cache(engine.runner, joint, member, arm.served, anchor=3)
    lo, hi = member.event_spans[event]
    last = len(joint.keys) - 1
    assert hi < 1024 and event > 1
    assert torch.allclose(anch.keys[last][:, :, lo:hi], joint.keys[last][:, :, lo:hi], atol=1e-5)
    assert not torch.allclose(short.keys[last][:, :, lo:hi], joint.keys[last][:, :, lo:hi], atol=1e-3)
    header = isolated_cache(engine.runner, joint, member, arm.served)  # anchor 0: the isolated encoding
    assert not torch.allclose(header.keys[last][:, :, lo:hi], short.keys[last][:, :, lo:hi], atol=1e-4)


def test_headless_runs_encode_consecutive_events_together_and_apart_ones_alone(tiny_llama):
    """kv_harvest3's iso: events i, i+1 served together are one headless prefill, so the second
    event's rows see the first (and equal a prefill of the two alone); an event apart is encoded
    alone, exactly as the plain headless encoding encodes it."""
    from matbench.engine.cache import prefill, served_runs
    from matbench.engine.runtime import cache_rows, new_cache

    assert served_runs((7, 3, 4, 9, 10, 11), together=True) == [(3, 4), (7,), (9, 10, 11)]
    assert served_runs((4, 3), together=False) == [(3,), (4,)]
    pair = SUITES.get("discovery").generate(0, 1)[0]
    engine = engine_for(tiny_llama)
    layout, caches = engine.prepare(pair)
    member, joint = layout.members[0], caches[0]
    served = (2, 3, 6)
    runs = isolated_cache(engine.runner, joint, member, served, alone=True, runs=True)
    apart = isolated_cache(engine.runner, joint, member, served, alone=True)
    (a2, b2), (a3, b3), (a6, b6) = (member.event_spans[i] for i in served)
    fresh = new_cache()
    prefill(
        engine.runner,
        fresh,
        list(member.input_ids[a2:b3]),
        list(member.positions[a2:b3]),
        torch.empty(0, dtype=torch.long),
        None,
    )
    keys, _ = cache_rows(fresh)
    last = len(joint.keys) - 1
    assert b2 == a3  # adjacent slots
    assert torch.allclose(runs.keys[last][:, :, a2:b3], keys[last], atol=1e-5)
    # the run's first event sees nothing before it: as alone (up to the kernels of another length)
    assert torch.allclose(runs.keys[last][:, :, a2:b2], apart.keys[last][:, :, a2:b2], atol=1e-5)
    assert not torch.allclose(runs.keys[last][:, :, a3:b3], apart.keys[last][:, :, a3:b3], atol=1e-3)
    assert torch.equal(runs.keys[last][:, :, a6:b6], apart.keys[last][:, :, a6:b6])
    assert torch.equal(runs.keys[last][:, :, b3:a6], joint.keys[last][:, :, b3:a6])  # unserved rows untouched
