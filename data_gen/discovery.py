"""Discovery suite (SPEC 3.1): does a mirror statement carry the dropped source's state?

decoy@0, source@m (m in [8, 12)), root "M mirrors S"@13, chain "M2 mirrors M"@18 and
"T mirrors M2"@23, fillers elsewhere. Arms: root (serve decoy+root, ask M), chain (serve decoy
and every carrier, ask T), txt (every event: comprehension, ask M), control (events before the
source, ask M: must give follow + anti = 0).
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
from matbench.protocol.readouts import MIRROR_TRACE

VERSION = "2"  # 2: rows carry the trace instruction (kv_causal.py's mirror wording)
MENU = STATES
ROOT_AT, CHAIN_AT, TARGET_AT = 13, 18, 23


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    source_reg, mirror, mirror2, target, decoy = rng.sample(REGISTER_POOL, 5)
    own = (source_reg, mirror, mirror2, target, decoy)
    source = rng.randrange(8, 12)
    # The decoy's value is drawn on its own: it may equal either donor value (SPEC 1).
    events = [filler_body(rng, own) for _ in range(N_EVENTS)]
    events[0] = f"register {decoy} set to state {rng.choice(MENU)}"
    events[source] = f"register {source_reg} set to state <donor>"
    events[ROOT_AT] = f"register {mirror} mirrors register {source_reg}"
    events[CHAIN_AT] = f"register {mirror2} mirrors register {mirror}"
    events[TARGET_AT] = f"register {target} mirrors register {mirror2}"
    ask = ask_state
    arms = (
        Arm("root", (0, ROOT_AT), ask(mirror)),
        Arm("chain", (0, ROOT_AT, CHAIN_AT, TARGET_AT), ask(target)),
        Arm("txt", tuple(range(N_EVENTS)), ask(mirror), uses_source=True),
        Arm("control", tuple(range(source)), ask(mirror)),
    )
    return register_source_pair(item_id, events, source, source_reg, arms, own, trace=MIRROR_TRACE)


SUITE = SUITES.register("discovery")(Suite("discovery", VERSION, default_n=64, make_item=make_item))
