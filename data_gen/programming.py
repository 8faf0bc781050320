"""Programming suite (SPEC 3.5): can a carrier event be written so that it computes a verdict?

The operand "sensor S measured gv; the alert threshold is thr" sits at m (dropped; member A's gv
is at least thr+30, member B's at most thr-30, so the verdicts are EXCEEDED and NORMAL), a carrier
at m+1, the review event "the operator reviewed sensor S against the alert threshold" at 23 and
an unrelated register at 2. Each item has one carrier kind and template, balanced by index:
pas (passive mention), bind (register binding), dir (structured directive), nld (natural-language
compute directive) and exp (explicit verdict: an upper bound whose text differs across donors).

Arms: carrier / review / both (serve sets), the same three asking at L in compact serving too
(fixed query position), txt (comprehension) and control (events before the operand).
"""

from __future__ import annotations

import random

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
MENU = ("EXCEEDED", "NORMAL")
SENSOR_POOL = ("AMBER", "COBALT", "CORAL", "EMBER", "IVORY", "JADE", "ONYX", "SLATE")
UNRELATED_AT, REVIEW_AT = 2, 23
KINDS = ("pas", "bind", "dir", "nld", "exp")
TEMPLATES = {
    "pas": ("note: the threshold check for sensor {S} has completed and its result was archived",
            "note: sensor {S} finished its threshold check and the result was filed away"),
    "bind": ("register {T} now holds the outcome of the threshold check for sensor {S}",
             "the outcome of the threshold check for sensor {S} is now stored in register {T}"),
    "dir": ('<MATERIALIZE target="{T}" relation="threshold_verdict" subject="{S}"/>',
            '<MATERIALIZE subject="{S}" relation="threshold_verdict" target="{T}"/>'),
    "nld": ("audit note: determine the threshold verdict for sensor {S} now and record it here for the final report",
            "audit note: work out now whether sensor {S} is above its alert threshold and keep that verdict here "
            "for the final report"),
    "exp": ("audit note: sensor {S} {relation} its alert threshold, so its threshold verdict is {verdict}",
            "audit note: the threshold verdict recorded for sensor {S} is {verdict}"),
}
RELATION = {"EXCEEDED": "is above", "NORMAL": "is not above"}


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    kind, template = KINDS[index % len(KINDS)], (index // len(KINDS)) % 2
    sensor = rng.choice(SENSOR_POOL)
    unrelated, target = rng.sample(REGISTER_POOL, 2)
    threshold = rng.randint(200, 800)
    high, low = threshold + rng.randint(30, 99), threshold - rng.randint(30, 99)
    source = rng.randrange(8, 12)
    carrier = source + 1
    events = [filler_body(rng, (unrelated, target), avoid=frozenset({high, low})) for _ in range(N_EVENTS)]
    events[UNRELATED_AT] = f"register {unrelated} set to state {rng.choice(('ONLINE', 'OFFLINE'))}"
    events[source] = f"sensor {sensor} measured <donor>"
    events[REVIEW_AT] = f"the operator reviewed sensor {sensor} against the alert threshold"
    text = TEMPLATES[kind][template]
    donor_events: tuple[tuple[int, str, str], ...] = ()
    if kind == "exp":
        a, b = (text.format(S=sensor, relation=RELATION[v], verdict=v) for v in MENU)
        events[carrier] = "<verdict>"
        donor_events = ((carrier, a, b),)
    else:
        events[carrier] = text.format(S=sensor, T=target)
    question = f"Was sensor {sensor} above the alert threshold?"
    visible = kind == "exp"
    arms = []
    for at_end in (False, True):
        suffix = "@L" if at_end else ""
        arms += [
            Arm(f"carrier{suffix}", (carrier,), question, uses_source=visible, query_at_end=at_end),
            Arm(f"review{suffix}", (REVIEW_AT,), question, query_at_end=at_end),
            Arm(f"both{suffix}", (carrier, REVIEW_AT), question, uses_source=visible, query_at_end=at_end),
        ]
    arms += [Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True),
             Arm("control", tuple(range(source)), question)]
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=source,
        source_bodies=tuple(f"sensor {sensor} measured {gv}; the alert threshold is {threshold}" for gv in (high, low)),
        values=MENU,
        menu=MENU,
        arms=tuple(arms),
        leak_patterns=(rf"\bsensor {sensor} measured\b",),
        registers=(unrelated, target),
        donor_events=donor_events,
        variant=f"{kind}/{template + 1}",
    )


# Groups of ten share every draw: each base item appears with all five carrier kinds x two templates.
SUITE = SUITES.register("programming")(
    Suite("programming", VERSION, default_n=160, make_item=make_item, group_size=len(KINDS) * 2))
