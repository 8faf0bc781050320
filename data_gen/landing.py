"""Landing suite (SPEC 3.3): where does the dropped source's state land?

decoy@0, source@m (m in [8, 12), dropped), root "M mirrors S"@13, a neutral filler@15 and a
co-served perturbation "register M was inspected..."@16 (mentions the target, carries no value),
the true reference edge "T mirrors M"@18, and a depth-3 edge "U mirrors T"@21.

Arms: root_edge (ask T), root_only (ask M), edge_only (ask T), neither (ask T) form the
root x edge serving 2x2; root_edge_cross and perturb_cross serve the same events as root_edge and
perturb with the downstream event's rows taken from the other donor member's prefill: with the
uncrossed arms they form the root donor x downstream donor 2x2 (does the answer follow the root's
donor or the downstream row's?); depth3_root / depth3_noroot (ask U) test a longer chain with and without the
root; perturb vs neutral (ask M) co-serve the perturbation or a filler with the root; txt
(comprehension, ask T); control (events before the source).
"""

from __future__ import annotations

import random

from matbench.data_gen.base import (
    N_EVENTS,
    REGISTER_POOL,
    STATES,
    SUITES,
    Suite,
    ask_state,
    filler_body,
    register_source_pair,
)
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "2"  # 2: the root x downstream donor factorial (cross arms)
MENU = STATES
ROOT_AT, NEUTRAL_AT, PERTURB_AT, EDGE_AT, DEPTH3_AT = 13, 15, 16, 18, 21


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    source_reg, mirror, target, far, decoy = rng.sample(REGISTER_POOL, 5)
    own = (source_reg, mirror, target, far, decoy)
    source = rng.randrange(8, 12)
    events = [filler_body(rng, own) for _ in range(N_EVENTS)]
    events[0] = f"register {decoy} set to state {rng.choice(MENU)}"
    events[source] = f"register {source_reg} set to state <donor>"
    events[ROOT_AT] = f"register {mirror} mirrors register {source_reg}"
    events[PERTURB_AT] = f"register {mirror} was inspected by the operator"
    events[EDGE_AT] = f"register {target} mirrors register {mirror}"
    events[DEPTH3_AT] = f"register {far} mirrors register {target}"
    ask = ask_state
    arms = (
        Arm("root_edge", (0, ROOT_AT, EDGE_AT), ask(target)),
        # root x downstream donor 2x2: the same served events with the downstream rows taken from
        # the other member's prefill (cells (A, B) and (B, A); root_edge holds (A, A) and (B, B)).
        Arm("root_edge_cross", (0, ROOT_AT, EDGE_AT), ask(target), swapped=(EDGE_AT,)),
        Arm("root_only", (0, ROOT_AT), ask(mirror)),
        Arm("edge_only", (0, EDGE_AT), ask(target)),
        Arm("neither", (0,), ask(target)),
        Arm("depth3_root", (0, ROOT_AT, EDGE_AT, DEPTH3_AT), ask(far)),
        Arm("depth3_noroot", (0, EDGE_AT, DEPTH3_AT), ask(far)),
        Arm("perturb", (0, ROOT_AT, PERTURB_AT), ask(mirror)),
        Arm("perturb_cross", (0, ROOT_AT, PERTURB_AT), ask(mirror), swapped=(PERTURB_AT,)),
        Arm("neutral", (0, ROOT_AT, NEUTRAL_AT), ask(mirror)),
        Arm("txt", tuple(range(N_EVENTS)), ask(target), uses_source=True),
        Arm("control", tuple(range(source)), ask(target)),
    )
    return register_source_pair(item_id, events, source, source_reg, arms, own)


SUITE = SUITES.register("landing")(Suite("landing", VERSION, default_n=64, make_item=make_item))
