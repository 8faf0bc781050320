"""Decoy-audit suite (the paper's kv_decoyctl2.py; Access): how much of bin2's recall is read off the
served decoy instead of the dropped source?

kv_decoyctl2's item: decoy@0, source "register S set to state {gold}"@m (m in [8, 16), dropped),
carrier@23 "register T copied from register S", fillers "register X refreshed to N"; the menu is in
the question ("What state is register T in? Answer ONLINE or OFFLINE:", matbench's `short`
readout). Three decoy modes, a group of three items sharing every draw (the paper draws each
mode's items apart; a group makes the modes a paired comparison):

  opposite     the decoy states the negation of the member's gold ("register D set to state
               {not gold}"): a model can score by eliminating it. It depends on the donor, so
               its arms serve a donor-dependent event (donor-visible): accuracy only, no
               materialization claim;
  independent  the decoy's state is drawn on its own (access bin2's design);
  none         "register D completed a routine self-test": no served state word at all, so an
               answer that follows the donor is recall with the vocabulary only in the question.

Arms (kv_decoyctl2): harv_kv (decoy + carrier from the global prefill), sel_ikv (each encoded
alone at its original positions), sel_txt (the two re-read as text), full_txt (every event as
text: comprehension); matbench adds control (events before the source) where the decoy does not
depend on the donor (an opposite decoy at slot 0 comes before every other row).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.access import CARRIER_AT, DECOY_AT, ENCODINGS, SOURCE_RANGE, slot_fillers
from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, Suite
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
MODES = ("opposite", "independent", "none")


@dataclass(frozen=True)
class DecoyDraw:
    """Every random choice of one item: names, the independent decoy's own state, the source slot
    and a filler body per slot (those of the decoy, source and carrier are empty)."""

    decoy_reg: str
    source_reg: str
    target: str
    decoy_value: str
    source: int
    fillers: tuple[str, ...]


def draw(rng: random.Random) -> DecoyDraw:
    # kv_decoyctl2.gen_item's order (independent mode): D, S, T; the gold (both values are the
    # pair's); the decoy's state; the source slot; then a filler per slot that is not special.
    decoy_reg, source_reg, target = rng.sample(REGISTER_POOL, 3)
    rng.choice(STATES)
    decoy_value = rng.choice(STATES)
    source = rng.randrange(*SOURCE_RANGE)
    fillers = slot_fillers(rng, (decoy_reg, source_reg, target), source)
    return DecoyDraw(decoy_reg, source_reg, target, decoy_value, source, fillers)


def build(d: DecoyDraw, item_id: str, mode: str) -> DonorPair:
    """The donor pair of draw `d` with the decoy of `mode` (member A's gold ONLINE, B's OFFLINE)."""
    D, S, T = d.decoy_reg, d.source_reg, d.target
    events = list(d.fillers)
    events[d.source] = f"<donor of register {S}>"
    events[CARRIER_AT] = f"register {T} copied from register {S}"
    donor_events: tuple[tuple[int, str, str], ...] = ()
    if mode == "opposite":
        events[DECOY_AT] = f"<decoy of register {D}>"
        donor_events = ((DECOY_AT, *(f"register {D} set to state {v}" for v in STATES[::-1])),)
    elif mode == "independent":
        events[DECOY_AT] = f"register {D} set to state {d.decoy_value}"
    elif mode == "none":
        events[DECOY_AT] = f"register {D} completed a routine self-test"
    else:
        raise ValueError(f"unknown decoy mode {mode!r}; choose from {MODES}")
    question = f"What state is register {T} in?"
    visible = mode == "opposite"  # the served decoy itself depends on the donor
    served = (DECOY_AT, CARRIER_AT)
    arms = tuple(Arm(name, served, question, uses_source=visible, encoding=enc) for name, enc in ENCODINGS) + (
        Arm("full_txt", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text"),
    )
    if not visible:  # an opposite decoy at slot 0 precedes every row: no event lies before the donor
        arms += (Arm("control", tuple(range(d.source)), question),)
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source,
        source_bodies=tuple(f"register {S} set to state {v}" for v in STATES),  # type: ignore[arg-type]
        values=STATES,
        menu=STATES,
        arms=arms,
        leak_patterns=(rf"\bregister {S} set to\b",),
        registers=(S, T, D),
        decoys=() if visible else (DECOY_AT,),
        donor_events=donor_events,
        # the independent decoy's state rides in the variant, so the evaluator can count echoes
        variant=f"{mode}/{d.decoy_value}" if mode == "independent" else mode,
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The three items of a group share the rng state, hence every draw; the index picks the mode.
    return build(draw(rng), item_id, MODES[index % len(MODES)])


SUITE = SUITES.register("decoy_audit")(
    Suite(
        "decoy_audit",
        VERSION,
        default_n=len(MODES) * 32,
        make_item=make_item,
        group_size=len(MODES),
        contract=False,
        summary="how much of bin2's recall is read off the served decoy: opposite, independent and no decoy "
        "(kv_decoyctl2)",
    )
)
