"""Access suite (SPEC 3.4; the paper's kv_sweepmenu.py and kv_digit.py): what a readout can reach
in a served row, by payload size.

decoy@0 (drawn independently of the donor), source "register S ..."@m with m in [8, 16)
(dropped), carrier@23. Items cycle through five variants:

- bin2 / dir4 / name8 (kv_sweepmenu): the source sets a state from a 2-, 4- or 8-word pool, the
  decoy "register D set to state {v}" draws its state from the same pool on its own, the carrier
  is "register T copied from register S", and the full menu is in the question (chance 1/2, 1/4,
  1/8);
- digit3 (kv_digit): the source "register S refreshed to {n}" sets a three-digit number (one member
  above 500, the other below), the decoy is "register D completed a routine self-test", the
  carrier is "register T mirrors register S"; three questions of the same rows in kv_digit's words,
  each carrying its own answer instruction: the exact number ("Answer with the number only.",
  read by generation: the first three-digit number, chance ~1/900), "greater than 500?" ("Answer
  YES or NO.") and the first digit ("Answer with a single digit."), both read by candidate logits
  after "Answer:";
- phrase (matbench's own; no released paper script): the source logs a two-word note (one
  member's positive, the other's negative); verbatim (which of 12 notes, chance 1/12) and
  polarity (GOOD/BAD) questions.

Register names are the paper's ten, except in name8 items, whose registers and fillers never take
the names ALPHA and DELTA: those are also name8 menu words, and a served register named like a
donor or decoy value would let an echo pass for recall (kv_sweepmenu draws them anyway; the
generation checks refuse such items).

Each question is asked through four encodings of the same served events {decoy, carrier}:
`harv_kv` (rows of the global prefill), `sel_ikv` (each event encoded alone at its original
positions: the isolation control), `sel_txt` (the served events re-read as text) and `full_txt`
(every event re-read as text: comprehension). `control` serves the events before the source.

`make_item` = `draw` (every random choice, in the paper's order where the paper draws it) +
`build` (the pair from explicit draws; the parity tests build the paper's own draws with it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

# 2: kv_sweepmenu / kv_digit stimuli: source in [8, 16), digit3 carrier "mirrors" and kv_digit's
#    questions; register names from all ten outside name8.
VERSION = "3"  # 3: exact recovery has kv_digit's own 12-token budget (arm budget)
DECOY_AT, CARRIER_AT = 0, 23
SOURCE_RANGE = (8, 16)  # kv_sweepmenu: randrange(n // 3, 2n // 3) with n = 24; kv_digit: randrange(8, 16)
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
# kv_digit's questions, verbatim: each carries its own answer instruction (no readout menu).
DIGIT_QUESTIONS = {
    "exact": "What is the numeric value of register {T}? Answer with the number only.",
    "above500": "Is the numeric value of register {T} greater than 500? Answer YES or NO.",
    "first_digit": "What is the first digit of register {T}'s numeric value? Answer with a single digit.",
}


@dataclass(frozen=True)
class AccessDraw:
    """Every random choice of one item. `values` are member A's and member B's donor values (for
    digit3 the numbers as text); `decoy_value` is the decoy's own state or note ("" for digit3,
    whose decoy is a self-test); `fillers` holds a body for each of the 24 slots (those of the
    decoy, the source and the carrier are overwritten)."""

    variant: str
    decoy_reg: str
    source_reg: str
    target: str
    values: tuple[str, str]
    decoy_value: str
    source: int
    fillers: tuple[str, ...]


def slot_fillers(
    rng: random.Random, taken: tuple[str, ...], source: int, avoid: frozenset[int] = frozenset()
) -> tuple[str, ...]:
    """Filler bodies for the slots that are not the decoy, source or carrier, in slot order (the
    paper draws register then number per slot), about registers not in `taken` (the item's own)."""
    return tuple("" if i in (DECOY_AT, source, CARRIER_AT) else filler_body(rng, taken, avoid) for i in range(N_EVENTS))


def registers_for(variant: str) -> tuple[str, ...]:
    """The register names an item of `variant` draws from (its own and its fillers')."""
    if variant == "name8":
        return tuple(r for r in REGISTER_POOL if r not in POOLS["name8"])
    return REGISTER_POOL


def draw(rng: random.Random, variant: str) -> AccessDraw:
    names = registers_for(variant)
    # kv_sweepmenu / kv_digit: D, S, T = rng.sample(NAMES, 3)
    decoy_reg, source_reg, target = rng.sample(names, 3)
    taken = (decoy_reg, source_reg, target) + tuple(r for r in REGISTER_POOL if r not in names)
    if variant in POOLS:
        pool = POOLS[variant]
        first = rng.choice(pool)
        decoy_value = rng.choice(pool)  # independent: may equal either donor (kv_sweepmenu)
        source = rng.randrange(*SOURCE_RANGE)
        fillers = slot_fillers(rng, taken, source)
        values = (first, rng.choice([v for v in pool if v != first]))
    elif variant == "digit3":
        high, low = rng.randint(501, 998), rng.randint(100, 499)  # kv_digit: randrange(501, 999), randrange(100, 500)
        numbers = (high, low) if rng.random() < 0.5 else (low, high)
        decoy_value = ""
        source = rng.randrange(*SOURCE_RANGE)
        fillers = slot_fillers(rng, taken, source, avoid=frozenset(numbers))
        values = (str(numbers[0]), str(numbers[1]))
    elif variant == "phrase":
        good, bad = rng.choice(POSITIVE), rng.choice(NEGATIVE)
        values = (good, bad) if rng.random() < 0.5 else (bad, good)
        decoy_value = rng.choice(PHRASES)  # independent of the donor
        source = rng.randrange(*SOURCE_RANGE)
        fillers = slot_fillers(rng, taken, source)
    else:
        raise ValueError(f"unknown access variant {variant!r}; choose from {VARIANTS}")
    return AccessDraw(variant, decoy_reg, source_reg, target, values, decoy_value, source, fillers)  # type: ignore[arg-type]


def _arms(source: int, questions: list[tuple[str, str, dict]]) -> list[Arm]:
    """Every (question suffix, question, overrides) through every encoding, plus the control."""
    served = (DECOY_AT, CARRIER_AT)
    arms = []
    for suffix, question, extra in questions:
        tag = f"/{suffix}" if suffix else ""
        arms += [Arm(f"{name}{tag}", served, question, encoding=enc, **extra) for name, enc in ENCODINGS]
        arms.append(Arm(f"full_txt{tag}", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text", **extra))
    arms.append(Arm("control", tuple(range(source)), questions[0][1], **questions[0][2]))
    return arms


def build(d: AccessDraw, item_id: str) -> DonorPair:
    """The donor pair of draws `d`: kv_sweepmenu's or kv_digit's item with two donor members."""
    S, T, D = d.source_reg, d.target, d.decoy_reg
    if d.variant in POOLS:
        menu = POOLS[d.variant]
        bodies = tuple(f"register {S} set to state {v}" for v in d.values)
        decoy = f"register {D} set to state {d.decoy_value}"
        carrier = f"register {T} copied from register {S}"
        arms = _arms(d.source, [("", f"What state is register {T} in?", {})])
        leak = rf"\bregister {S} set to\b"
    elif d.variant == "digit3":
        menu = d.values
        bodies = tuple(f"register {S} refreshed to {n}" for n in d.values)
        decoy = f"register {D} completed a routine self-test"
        carrier = f"register {T} mirrors register {S}"
        above = tuple("YES" if int(n) > 500 else "NO" for n in d.values)
        arms = _arms(
            d.source,
            [
                # kv_digit generates 12 tokens for the exact number, whatever the run's readout budget.
                ("exact", DIGIT_QUESTIONS["exact"].format(T=T), {"open_question": True, "budget": 12}),
                (
                    "above500",
                    DIGIT_QUESTIONS["above500"].format(T=T),
                    {"open_question": True, "menu": ("YES", "NO"), "values": above},
                ),
                (
                    "first_digit",
                    DIGIT_QUESTIONS["first_digit"].format(T=T),
                    {"open_question": True, "menu": DIGITS, "values": tuple(n[0] for n in d.values)},
                ),
            ],
        )
        leak = rf"\bregister {S} refreshed to\b"
    else:
        menu = PHRASES
        bodies = tuple(f'register {S} logged the note "{p}"' for p in d.values)
        decoy = f'register {D} logged the note "{d.decoy_value}"'
        carrier = f"register {T} copied the note of register {S}"
        polarity = tuple("GOOD" if p in POSITIVE else "BAD" for p in d.values)
        arms = _arms(
            d.source,
            [
                ("verbatim", f"Which note did register {T} copy?", {}),
                (
                    "polarity",
                    f"Was the note copied by register {T} good news or bad news?",
                    {"menu": ("GOOD", "BAD"), "values": polarity},
                ),
            ],
        )
        leak = rf"\bregister {S} logged\b"
    events = list(d.fillers)
    events[DECOY_AT] = decoy
    events[d.source] = f"<donor of register {S}>"
    events[CARRIER_AT] = carrier
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source,
        source_bodies=bodies,  # type: ignore[arg-type]
        values=d.values,
        menu=menu,
        arms=tuple(arms),
        leak_patterns=(leak,),
        registers=(S, T, D),
        decoys=(DECOY_AT,),
        variant=d.variant,
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build(draw(rng, VARIANTS[index % len(VARIANTS)]), item_id)


SUITE = SUITES.register("access")(
    Suite(
        "access",
        VERSION,
        default_n=160,
        make_item=make_item,
        summary=(
            "how much of a dropped source a mirror carrier's rows carry: a bin2 / dir4 / name8 state "
            "and a three-digit number (kv_sweepmenu, kv_digit)"
        ),
    )
)
