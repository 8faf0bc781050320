"""The naive reference path: the protocol as a researcher would first write it.

Per item, per arm, per member: prefill that member's whole trajectory from scratch (no shared
prefix, no reuse across arms, batch of one), serve the arm's kept rows, read the probe, and
greedily decode the short answer one token at a time. Same semantics as `PairEngine`, none of its
sharing or batching: `matbench bench` times the two side by side on the same items and reports
the agreement of their outcome classes (a faithfulness check of the engine's shortcuts too).
"""

from __future__ import annotations

from typing import Any

import torch

from matbench.engine.cache import EventCache, prefill
from matbench.engine.decode import eager_decode
from matbench.engine.layout import MemberLayout, layout_pair
from matbench.engine.pair_engine import PairEngine
from matbench.engine.runtime import cache_rows, new_cache
from matbench.engine.serving import SERVING, ServeRequest
from matbench.errors import MatbenchError
from matbench.protocol.margins import donor_shift
from matbench.protocol.outcomes import outcome
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import READOUTS


def member_cache(engine: PairEngine, member: MemberLayout, length: int) -> EventCache:
    """One member's whole trajectory prefilled from scratch, alone."""
    cache = new_cache()
    positions = prefill(
        engine.runner,
        cache,
        list(member.input_ids),
        list(member.positions),
        torch.empty(0, dtype=torch.long),
        engine.chunk_size,
    )
    keys, values = cache_rows(cache)
    return EventCache(tuple(keys), tuple(values), positions, member.header_span, member.event_spans, length)


def naive_pair(engine: PairEngine, pair: DonorPair, serving: str, readout: str = "short") -> dict[str, Any]:
    """Per arm: probe answers and classes, short-readout answers and classes, donor shift."""
    layout = layout_pair(pair, engine.renderer)
    serve = SERVING[serving]
    decode = READOUTS.get(readout)
    arms = {}
    for arm in pair.arms:
        if arm.encoding != "joint" or arm.swapped:
            raise MatbenchError(f"the naive path runs joint-encoding arms only (arm {arm.name} of {pair.item_id})")
        menu, values = pair.arm_menu(arm), pair.arm_values(arm)
        probe_ids = engine.query_ids(pair, arm, engine.probe_readout)
        decode_ids = engine.query_ids(pair, arm, decode)
        cands, probe_answers, answers = [], [], []
        for m in (0, 1):
            cache = member_cache(engine, layout.members[m], layout.length)  # again for every arm
            at = cache.length if arm.query_at_end else None
            _, logits = serve(engine.runner, [ServeRequest(cache, arm.served, probe_ids, at)])
            cand = engine.scorer(menu).log_probs(logits).cpu()
            cands.append(cand[0])
            probe_answers += engine.scorer(menu).answers(cand)
            batch, first = serve(engine.runner, [ServeRequest(cache, arm.served, decode_ids, at)])
            # the reference decodes eagerly, step by step (no CUDA graphs: nothing of the engine's speed)
            tokens = eager_decode(engine.runner, batch, first, arm.budget or decode.max_new_tokens, engine.stop_ids)[0]
            answers.append(decode.parse(engine.renderer.decode(tokens), menu, pair.registers))
        arms[arm.name] = {
            "probe_answers": probe_answers,
            "probe_class": outcome((probe_answers[0], probe_answers[1]), values),
            "answers": answers,
            "class": outcome((answers[0], answers[1]), values),
            "probe_logp": [c.tolist() for c in cands],
            "shift": donor_shift(cands[0].cpu().numpy(), cands[1].cpu().numpy(), menu, values),
        }
    return {"item_id": pair.item_id, "arms": arms}
