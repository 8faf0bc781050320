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
