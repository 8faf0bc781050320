"""Programming suite (SPEC 3.5; the paper's kv_mater2.py X9 and kv_mater3.py X10): can a carrier
event be written so that prefill computes a verdict into its rows?

Item (24 events, the paper's kv_mater2 layout and wording):
  slot 0    decoy "sensor {D} logged a routine idle reading"          served, donor-invariant
  slot 2    unrelated register "register {U} set to state {us}"       served, donor-invariant
  slot m    operand "sensor {S} measured {gv}; the alert threshold is {thr}", m in [8, 16),
            never served; member A's gv in [thr+30, 999) (EXCEEDED), member B's in
            [100, thr-29) (NORMAL), thr in [200, 800) shared
  slot m+1  carrier: pas / bind / dir / nld (identical in both members) or exp (the verdict
            written out: an upper bound, donor-dependent), kv_mater2's two templates each
  slot 23   review "the operator reviewed sensor {S} against the alert threshold"
D, S, T and U are four distinct names of the paper's register list (its sensors are register
names); fillers name the other registers.

Arms (serve sets of X10; every one keeps the decoy and the unrelated register):
  car {0, 2, m+1}, rev {0, 2, 23}, both {0, 2, m+1, 23} (= X9's set), asking "Was sensor S
  above the alert threshold?"; rev and both ask after slot 23, the fixed query position.
  tgt_car / tgt_rev / tgt_both (bind, dir, exp only): the target-addressed question "What
  verdict is recorded for status register T?".
  unrel: X9's set asked "What state is register U in? ..." (its own answer instruction): the
  echo control, whose answer must not move with the donor (expected: us).
  sel: X9's set re-read as plain text (header and served events at contiguous positions): the
  text floor, donor-blind by construction for every kind but exp.
matbench's additions: car@L (the carrier alone asked at L, where rev and both ask), txt (every
event: comprehension) and control (events before the operand: must give no donor-sensitive pair).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

# 2: the paper's serve sets (decoy and unrelated register served), templates, draws, questions,
#    the qtgt / qunrel / sel arms.
VERSION = "2"
MENU = ("EXCEEDED", "NORMAL")  # member A's verdict, member B's verdict (kv_mater2 DONORS)
# Kept for data_gen/trigger.py, which imports it; this suite draws its sensors from REGISTER_POOL.
SENSOR_POOL = ("AMBER", "COBALT", "CORAL", "EMBER", "IVORY", "JADE", "ONYX", "SLATE")
DECOY_AT, UNRELATED_AT, REVIEW_AT = 0, 2, N_EVENTS - 1
SOURCE_RANGE = (N_EVENTS // 3, (2 * N_EVENTS) // 3)  # m in [8, 16)
KINDS = ("pas", "bind", "dir", "nld", "exp")
T_KINDS = ("bind", "dir", "exp")  # carriers that name a target register (asked by tgt_*)
# kv_mater2.py ARMS, verbatim; item i of the paper uses template i % 2.
TEMPLATES = {
    "pas": (
        "note: the threshold check for sensor {S} has completed and its result was archived",
        "log entry: the outcome of the {S} threshold comparison was filed in the maintenance record",
    ),
    "bind": (
        "status register {T} is now set according to the threshold verdict for sensor {S}",
        "register {T} now holds the outcome of the threshold check for sensor {S}",
    ),
    "dir": (
        '<MATERIALIZE target="{T}" relation="threshold_verdict" subject="{S}"/>',
        '<MATERIALIZE subject="{S}" relation="threshold_verdict" target="{T}"/>',
    ),
    "nld": (
        "audit note: determine the threshold verdict for sensor {S} now and record it here for the final report",
        "reminder: work out whether sensor {S} went above its alert threshold and note the verdict here",
    ),
    "exp": (
        "status register {T} recorded the threshold verdict for sensor {S}: {V}",
        "verdict for sensor {S} filed in register {T}: {V}",
    ),
}
DECOY = "sensor {D} logged a routine idle reading"
UNRELATED = "register {U} set to state {us}"
OPERAND = "sensor {S} measured {gv}; the alert threshold is {thr}"
REVIEW = "the operator reviewed sensor {S} against the alert threshold"
# The questions of kv_mater2 without their readout suffix (" Answer EXCEEDED or NORMAL:" is the
# short/probe readouts' suffix); qunrel carries its own answer instruction.
QMAIN = "Was sensor {S} above the alert threshold?"
QTGT = "What verdict is recorded for status register {T}?"
QUNREL = "What state is register {U} in? Answer with the single state word only:"


@dataclass(frozen=True)
class ProgrammingDraw:
    """Every random choice of one item (kv_mater2's draws): the decoy, sensor, target and
    unrelated names, the unrelated state, the threshold and both operands, the operand's slot,
    and a filler body for each of the 24 slots (those of slots 0, 2, m, m+1 and 23 are unused)."""

    decoy: str
    sensor: str
    target: str
    unrelated: str
    unrelated_state: str
    threshold: int
    high: int
    low: int
    source: int
    fillers: tuple[str, ...]


def draw(rng: random.Random) -> ProgrammingDraw:
    """kv_mater2's draws in its order: D, S, T, U; us; thr; gv_hi, gv_lo; m; fillers. Fillers avoid
    the two operands (the paper's may repeat one; a served filler would then name a donor number)."""
    decoy, sensor, target, unrelated = rng.sample(REGISTER_POOL, 4)
    state = rng.choice(STATES)
    threshold = rng.randrange(200, 800)
    high, low = rng.randrange(threshold + 30, 999), rng.randrange(100, threshold - 29)
    source = rng.randrange(*SOURCE_RANGE)
    own = (decoy, sensor, target, unrelated)
    fillers = tuple(filler_body(rng, own, avoid=frozenset({high, low})) for _ in range(N_EVENTS))
    return ProgrammingDraw(decoy, sensor, target, unrelated, state, threshold, high, low, source, fillers)


def carrier_bodies(d: ProgrammingDraw, kind: str, template: int) -> tuple[str, str]:
    """The carrier of member A and member B (equal for every kind but exp)."""
    text = TEMPLATES[kind][template]
    a, b = (text.format(S=d.sensor, T=d.target, V=v) for v in MENU)
    return a, b


def build(d: ProgrammingDraw, item_id: str, kind: str, template: int) -> DonorPair:
    """The donor pair of draw `d` with carrier `kind` in `template` (0 or 1)."""
    carrier = d.source + 1
    events = list(d.fillers)
    events[DECOY_AT] = DECOY.format(D=d.decoy)
    events[UNRELATED_AT] = UNRELATED.format(U=d.unrelated, us=d.unrelated_state)
    events[d.source] = f"sensor {d.sensor} measured <donor>"
    events[REVIEW_AT] = REVIEW.format(S=d.sensor)
    a, b = carrier_bodies(d, kind, template)
    visible = a != b  # exp: the carrier differs across the members
    events[carrier] = "<verdict>" if visible else a
    assert visible == (kind == "exp"), f"carrier {kind}/{template + 1} must differ across donors only for exp"
    main, target = QMAIN.format(S=d.sensor), QTGT.format(T=d.target)
    context = (DECOY_AT, UNRELATED_AT)
    sets = {"car": (*context, carrier), "rev": (*context, REVIEW_AT), "both": (*context, carrier, REVIEW_AT)}
    arms = [Arm(name, served, main, uses_source=visible and carrier in served) for name, served in sets.items()]
    arms.append(Arm("car@L", sets["car"], main, uses_source=visible, query_at_end=True))
    if kind in T_KINDS:
        arms += [
            Arm(f"tgt_{name}", served, target, uses_source=visible and carrier in served)
            for name, served in sets.items()
        ]
    arms += [
        Arm(
            "unrel",
            sets["both"],
            QUNREL.format(U=d.unrelated),
            uses_source=visible,
            expected=d.unrelated_state,
            menu=STATES,
            values=STATES,
            open_question=True,
        ),
        Arm("sel", sets["both"], main, uses_source=visible, encoding="text"),
        Arm("txt", tuple(range(N_EVENTS)), main, uses_source=True),
        Arm("control", tuple(range(d.source)), main),
    ]
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source,
        source_bodies=tuple(OPERAND.format(S=d.sensor, gv=gv, thr=d.threshold) for gv in (d.high, d.low)),
        values=MENU,
        menu=MENU,
        arms=tuple(arms),
        leak_patterns=(rf"\bsensor {d.sensor} measured\b",),
        registers=(d.decoy, d.sensor, d.target, d.unrelated),
        decoys=context,
        donor_events=((carrier, a, b),) if visible else (),
        variant=f"{kind}/{template + 1}",
    )


def condition(index: int) -> tuple[str, int]:
    """Item `index`'s carrier kind and template: each group of ten has every kind x template."""
    return KINDS[index % len(KINDS)], (index // len(KINDS)) % 2


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build(draw(rng), item_id, *condition(index))


# Groups of ten share every draw: each base item appears with all five carrier kinds x two templates
# (the paper pairs the five kinds within an item and alternates templates across items).
SUITE = SUITES.register("programming")(
    Suite(
        "programming",
        VERSION,
        default_n=160,
        make_item=make_item,
        group_size=len(KINDS) * 2,
        summary=(
            "which carrier kinds (pas, bind, dir, nld, exp) get the dropped verdict computed into their"
            " rows (kv_mater2/3)"
        ),
    )
)
