"""Access suite (SPEC 3.4): what a readout can reach in a served row, by payload size.

decoy@0 (drawn independently of the donor), source "register S ..."@m in [8, 12) (dropped),
carrier "register T copied from register S"@23. Items cycle through five variants:

- bin2 / dir4 / name8: the source sets a state from a 2-, 4- or 8-word pool; the full menu is in
  the question (chance 1/2, 1/4, 1/8);
- digit3: the source sets a three-digit number (one member above 500, the other below); three
  questions of the same rows: the exact number (open question; exact only under a generating
  readout), "greater than 500?" (YES/NO) and the first digit (1-9);
- phrase: the source logs a two-word note (one member's positive, the other's negative);
  verbatim (which of 12 notes, chance 1/12) and polarity (GOOD/BAD) questions.

Each question is asked through four encodings of the same served events {decoy, carrier}:
`harv_kv` (rows of the global prefill), `sel_ikv` (each event encoded alone at its original
positions: the isolation control), `sel_txt` (the served events re-read as text) and `full_txt`
(every event re-read as text: comprehension). `control` serves the events before the source.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
CARRIER_AT = 23
POOLS = {
    "bin2": ("ONLINE", "OFFLINE"),
    "dir4": ("NORTH", "SOUTH", "EAST", "WEST"),
    "name8": ("ALPHA", "BRAVO", "DELTA", "ECHO", "GOLF", "HOTEL", "KILO", "TANGO"),
}
POSITIVE = ("smooth sailing", "clear skies", "steady progress", "bright outlook", "safe arrival", "warm welcome")
NEGATIVE = ("total failure", "severe damage", "critical fault", "broken promise", "heavy losses", "fatal error")
PHRASES = POSITIVE + NEGATIVE
VARIANTS = ("bin2", "dir4", "name8", "digit3", "phrase")
DIGITS = tuple(str(d) for d in range(1, 10))
# (arm name, encoding): the same served set {decoy, carrier} through three encodings, and all text.
ENCODINGS = (("harv_kv", "joint"), ("sel_ikv", "isolated"), ("sel_txt", "text"))
# Register names that are also name8 menu words never name the item's registers or fillers.
REGISTERS = tuple(r for r in REGISTER_POOL if r not in POOLS["name8"])


def _arms(source: int, questions: list[tuple[str, str, dict]]) -> list[Arm]:
    """Every (question suffix, question, overrides) through every encoding, plus the control."""
    served = (0, CARRIER_AT)
    arms = []
    for suffix, question, extra in questions:
        tag = f"/{suffix}" if suffix else ""
        arms += [Arm(f"{name}{tag}", served, question, encoding=enc, **extra) for name, enc in ENCODINGS]
        arms.append(Arm(f"full_txt{tag}", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text",
                        **extra))
    arms.append(Arm("control", tuple(range(source)), questions[0][1], **questions[0][2]))
    return arms


class Payload(NamedTuple):
    """What a variant draws: donor values, the source's two bodies, the decoy, the menu, numbers
    fillers must avoid, the arms, the leak patterns and the carrier."""

    values: tuple[str, str]
    bodies: tuple[str, str]
    decoy_body: str
    menu: tuple[str, ...]
    avoid: frozenset[int]
    arms: list[Arm]
    leak: tuple[str, ...]
    carrier: str


def _state(rng: random.Random, variant: str, source: int, regs: tuple[str, str, str]) -> Payload:
    source_reg, target, decoy = regs
    pool = POOLS[variant]
    values = tuple(rng.sample(pool, 2))
    return Payload(values, tuple(f"register {source_reg} set to state {v}" for v in values),  # type: ignore[arg-type]
                   f"register {decoy} set to state {rng.choice(pool)}",  # independent: may equal a donor
                   pool, frozenset(), _arms(source, [("", f"What state is register {target} in?", {})]),
                   (rf"\bregister {source_reg} set to\b",), f"register {target} copied from register {source_reg}")


def _digit3(rng: random.Random, variant: str, source: int, regs: tuple[str, str, str]) -> Payload:
    source_reg, target, decoy = regs
    high, low = rng.randint(501, 998), rng.randint(100, 499)
    numbers = (high, low) if rng.random() < 0.5 else (low, high)
    values = tuple(str(n) for n in numbers)
    above = tuple("YES" if n > 500 else "NO" for n in numbers)
    arms = _arms(source, [
        ("exact", f"What is the numeric value of register {target}? Answer with the number only.",
         {"open_question": True}),
        ("above500", f"Is the numeric value of register {target} greater than 500?",
         {"menu": ("YES", "NO"), "values": above}),
        ("first_digit", f"What is the first digit of register {target}'s numeric value?",
         {"menu": DIGITS, "values": tuple(v[0] for v in values)}),
    ])
    return Payload(values, tuple(f"register {source_reg} refreshed to {n}" for n in numbers),  # type: ignore[arg-type]
                   f"register {decoy} completed a routine self-test", values, frozenset(numbers), arms,
                   (rf"\bregister {source_reg} refreshed to\b",),
                   f"register {target} copied from register {source_reg}")


def _phrase(rng: random.Random, variant: str, source: int, regs: tuple[str, str, str]) -> Payload:
    source_reg, target, decoy = regs
    good, bad = rng.choice(POSITIVE), rng.choice(NEGATIVE)
    values = (good, bad) if rng.random() < 0.5 else (bad, good)
    bodies = tuple(f'register {source_reg} logged the note "{p}"' for p in values)
    decoy_body = f'register {decoy} logged the note "{rng.choice(PHRASES)}"'  # independent of the donor
    polarity = tuple("GOOD" if p in POSITIVE else "BAD" for p in values)
    arms = _arms(source, [
        ("verbatim", f"Which note did register {target} copy?", {}),
        ("polarity", f"Was the note copied by register {target} good news or bad news?",
         {"menu": ("GOOD", "BAD"), "values": polarity}),
    ])
    return Payload(values, bodies, decoy_body, PHRASES, frozenset(), arms,  # type: ignore[arg-type]
                   (rf"\bregister {source_reg} logged\b",),
                   f"register {target} copied the note of register {source_reg}")


BUILDERS = {"bin2": _state, "dir4": _state, "name8": _state, "digit3": _digit3, "phrase": _phrase}


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    variant = VARIANTS[index % len(VARIANTS)]
    own = tuple(rng.sample(REGISTERS, 3))
    source = rng.randrange(8, 12)
    drawn = BUILDERS[variant](rng, variant, source, own)  # type: ignore[arg-type]
    events = [filler_body(rng, own + POOLS["name8"], avoid=drawn.avoid) for _ in range(N_EVENTS)]
    events[0] = drawn.decoy_body
    events[source] = f"<donor of register {own[0]}>"
    events[CARRIER_AT] = drawn.carrier
    return DonorPair(item_id=item_id, events=tuple(events), source=source, source_bodies=drawn.bodies,
                     values=drawn.values, menu=drawn.menu, arms=tuple(drawn.arms), leak_patterns=drawn.leak,
                     registers=own, decoys=(0,), variant=variant)


SUITE = SUITES.register("access")(Suite("access", VERSION, default_n=160, make_item=make_item))
