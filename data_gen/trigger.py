"""Trigger suite (SPEC 3.2): the 16-construction write bank.

Each group of 16 items shares one base draw and varies only the carrier construction at 23:
eight of the mirror family ("register T mirrors register S", tracks, copies, ...; source
"register S set to state v" dropped; decoy "register D completed a routine self-test") and eight
of the flag family (operand "sensor S measured gv; the alert threshold is thr" and the verdict
event both dropped; carriers such as "the alert status flag for sensor S was set according to the
check result"; menu EXCEEDED / NORMAL). The carrier slot's position budget covers the longest
construction of the bank for the item's names, so the query position is the same for all 16
(SPEC pads with "\\n" tokens; matbench skips positions instead, as for the source budget).

Arms: kv (serve decoy + carrier: write-through), txt (every event: comprehension), control.
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
)
from matbench.data_gen.programming import SENSOR_POOL
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
CARRIER_AT = 23
MIRROR = {
    "mirrors": "register {T} mirrors register {S}",
    "tracks": "register {T} tracks register {S}",
    "copies": "register {T} copies register {S}",
    "matches": "register {T} matches register {S}",
    "follows": "register {T} follows register {S}",
    "shadows": "register {T} shadows register {S}",
    "kept_equal": "register {T} is kept equal to register {S}",
    "synchronized": "register {T} is synchronized with register {S}",
}
FLAG = {
    "accord": "the alert status flag for sensor {S} was set according to the check result",
    "inline": "the alarm flag for sensor {S} was updated in line with the check outcome",
    "reflect": "the alert status flag for sensor {S} was set to reflect the check result",
    "record": "the alert status flag for sensor {S} now records the outcome of the check",
    "assign": "sensor {S}'s alert flag was assigned based on the threshold comparison",
    "write": "the alert status flag for sensor {S} was written from the check verdict",
    "consist": "the alert status flag for sensor {S} was made consistent with the check result",
    "update": "following the check, the alert flag for sensor {S} was updated accordingly",
}
CONSTRUCTIONS = tuple(("mirror", k) for k in MIRROR) + tuple(("flag", k) for k in FLAG)
VERDICTS = ("EXCEEDED", "NORMAL")


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    family, name = CONSTRUCTIONS[index % len(CONSTRUCTIONS)]
    # Every draw below is shared by the 16 items of the group (same rng state).
    source_reg, target, decoy = rng.sample(REGISTER_POOL, 3)
    sensor = rng.choice(SENSOR_POOL)
    threshold = rng.randint(200, 800)
    high, low = threshold + rng.randint(30, 99), threshold - rng.randint(30, 99)
    source = rng.randrange(8, 12)
    own = (source_reg, target, decoy)
    events = [filler_body(rng, own, avoid=frozenset({high, low})) for _ in range(N_EVENTS)]
    events[0] = f"register {decoy} completed a routine self-test"
    bank = [t.format(T=target, S=source_reg) for t in MIRROR.values()] + [t.format(S=sensor) for t in FLAG.values()]
    mirror_bodies = tuple(f"register {source_reg} set to state {v}" for v in STATES)
    flag_bodies = tuple(f"sensor {sensor} measured {gv}; the alert threshold is {threshold}" for gv in (high, low))
    verdicts = tuple(f"the threshold check for sensor {sensor} returned {v}" for v in VERDICTS)
    # Budgets over both families for the source, the slot after it and the carrier: all 16
    # constructions of the group ask at the same position.
    alternatives = ((source, mirror_bodies + flag_bodies), (source + 1, (events[source + 1],) + verdicts),
                    (CARRIER_AT, tuple(bank)))
    if family == "mirror":
        events[source] = "<donor>"
        bodies = mirror_bodies
        values, donor_events = STATES, ()
        question = ask_state(target)
        events[CARRIER_AT] = MIRROR[name].format(T=target, S=source_reg)
        leak = rf"\bregister {source_reg} set to\b"
    else:
        events[source] = "<operand>"
        events[source + 1] = "<verdict>"
        bodies = flag_bodies
        values = VERDICTS
        donor_events = ((source + 1, *verdicts),)
        question = f"Was sensor {sensor} above the alert threshold?"
        events[CARRIER_AT] = FLAG[name].format(S=sensor)
        leak = rf"\bsensor {sensor} measured\b"
    arms = (
        Arm("kv", (0, CARRIER_AT), question),
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True),
        Arm("control", tuple(range(source)), question),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=source,
        source_bodies=bodies,
        values=values,
        menu=values,
        arms=arms,
        leak_patterns=(leak,),
        registers=own,
        donor_events=donor_events,
        variant=f"{family}/{name}",
        slot_alternatives=alternatives,
    )


SUITE = SUITES.register("trigger")(
    Suite("trigger", VERSION, default_n=16 * 24, make_item=make_item, group_size=len(CONSTRUCTIONS)))
