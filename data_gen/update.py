"""Update suite (SPEC 3.7): does a patch served at query time override materialized state?

decoy@0, source "register S set to state v"@m (dropped), carrier "register T mirrors register S"@23.
Every arm serves {decoy, carrier}; the patched arms append one event at query time, after the
served rows and before the question: a bare update, a versioned update and a structured
<PATCH/> set T to a value p drawn independently of the donor (the expected answer); the
wrong-register patch (sets another register) and the dummy (mentions T, no value) are controls
that must not move the answer away from the unpatched `base` arm.
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

VERSION = "1"
MENU = STATES
CARRIER_AT = 23
PATCHES = {
    "bare": "register {T} set to state {p}",
    "versioned": "register {T} updated to state {p} (revision 2, supersedes every earlier value)",
    "structured": '<PATCH register="{T}" state="{p}"/>',
}


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    source_reg, target, decoy, wrong = rng.sample(REGISTER_POOL, 4)
    own = (source_reg, target, decoy, wrong)
    source = rng.randrange(8, 12)
    patch_value = rng.choice(MENU)  # independent of the donor: equal to it in one member
    events = [filler_body(rng, own) for _ in range(N_EVENTS)]
    events[0] = f"register {decoy} set to state {rng.choice(MENU)}"
    events[source] = f"register {source_reg} set to state <donor>"
    events[CARRIER_AT] = f"register {target} mirrors register {source_reg}"
    question = ask_state(target)
    served = (0, CARRIER_AT)
    arms = [Arm("base", served, question)]
    arms += [Arm(name, served, question, appended=(text.format(T=target, p=patch_value),), expected=patch_value)
             for name, text in PATCHES.items()]
    arms += [
        Arm("wrong_register", served, question, appended=(f"register {wrong} set to state {patch_value}",)),
        Arm("dummy", served, question, appended=(f"register {target} was inspected by the operator",)),
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True),
        Arm("control", tuple(range(source)), question),
    ]
    return register_source_pair(item_id, events, source, source_reg, arms, own)


SUITE = SUITES.register("update")(Suite("update", VERSION, default_n=64, make_item=make_item))
