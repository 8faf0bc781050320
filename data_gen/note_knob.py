"""Note-knob suite (the paper's kv_noteknob2.py; Access): does an answer-free "audit note" written
right after the source make prefill compute the dropped value into the note's own rows?

kv_noteknob2's item (24 events, its three settings, wording verbatim):
  slot 0    decoy       bin2: "register D set to state {d}"; num: "register D initialized to {dv}";
                        verdict: "sensor D logged a routine idle reading"
  slot m    source      m in [8, 16), dropped by the harvest: bin2 "register S set to state {v}",
                        num "register S initialized to {v}", verdict "sensor S measured {gv}; the
                        alert threshold is {thr}"
  slot m+1  the knob    note: "audit note: resolve and record ... register S here for the final
                        report" (per setting; names neither the answer nor an operand) | filler:
                        "routine note: the scheduled maintenance sweep ..." (the paper's neutral,
                        length-matched filler)
  slot 23   downstream  bin2 / num "register T copied from register S"; verdict "the operator
                        reviewed sensor S against the alert threshold"
  fillers   "register X refreshed to N" about the other registers.
Questions, each with the paper's own answer instruction and 12 greedy tokens: bin2 "What state is
register T in? Answer with the single state word only:", num "What is the value of register T?
Answer with the number only:", verdict "Was sensor S above the alert threshold?" + " Answer
EXCEEDED or NORMAL:" (the readouts' menu suffix, which is the paper's wording for it).

kv_noteknob2 is paired over the knob: one item, two variants that differ in slot m+1 only. Here a
group of two consecutive items shares every draw, the first with the note (variant
"note/<setting>"), the second with the filler ("filler/<setting>", the paper's "fill"); groups
cycle through the settings. Each item is a donor pair whose members differ in the source only:
bin2 ONLINE / OFFLINE, verdict EXCEEDED (operand above the threshold) / NORMAL (below), num two
three-digit numbers.

Arms (kv_noteknob2's, 12 tokens each): harv_drop (decoy, knob and downstream rows of the global
prefill: the paper's drop_mid harvest), harv_complete (the same with the source's rows: donor-
visible), sel_txt (drop_mid's three events re-read as text: the floor, the paper's sel_drop) and
full_txt (every event as text: comprehension). matbench adds control (the events before the source).

Deviations from kv_noteknob2, each the least a donor pair needs:
- bin2's decoy: the paper's is the negation of the gold (`gm, dm = rng.sample(STATUS2, 2)`). One
  decoy serves both members, and one depending on the donor would make every served arm donor-
  visible, so its state is independent of the donor: counterbalanced, ONLINE in the first bin2
  group, OFFLINE in the next, and so on (`bin2_decoy`). In each pair one member meets the paper's
  stimulus (a decoy stating the negation of its gold) and the other a decoy equal to its gold; the
  evaluator reads the paper's numbers off the member that is the paper's item. The state follows
  from the item's index rather than riding in the variant: the generation check tests decoy
  independence per variant, and a variant naming the decoy's state would hold one state only.
- num: member B's number has another first digit than member A's (the probe must tell the two
  apart by their first tokens) and both differ from the decoy's (the paper's dv != gv).
- verdict: the threshold is shared and drawn in [130, 969) (the paper's [100, 999) where both
  verdicts have an operand at least 30 away, within [100, 999)); member A's operand lies 30 or more
  above it (EXCEEDED), member B's 30 or more below (NORMAL). The paper draws the operand first.
- fillers never name a donor number (the paper's may repeat one; full_txt would then show it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
SETTINGS = ("bin2", "num", "verdict")
KINDS = ("note", "filler")  # the two items of a group, in order
KCARD = {"bin2": 2, "num": 900, "verdict": 2}  # kv_noteknob2's chance denominators
VERDICTS = ("EXCEEDED", "NORMAL")  # member A's (operand above the threshold), member B's
DECOY_AT, DOWNSTREAM_AT = 0, N_EVENTS - 1
SOURCE_RANGE = (N_EVENTS // 3, (2 * N_EVENTS) // 3)  # kv_noteknob2: randrange(n // 3, 2n // 3), n = 24
BUDGET = 12  # kv_noteknob2 generates 12 tokens for every arm
# kv_noteknob2.NOTE_T and FILL_T, verbatim: the note prompts a computation about S and names
# neither the answer nor an operand; the filler is neutral.
NOTE_T = {
    "bin2": ("audit note: resolve and record the current state of register {S} here for the final report"),
    "num": ("audit note: resolve and record the current numeric value of register {S} here for the final report"),
    "verdict": (
        "audit note: determine the threshold verdict for sensor {S} now and record it here for the final report"
    ),
}
FILL_T = "routine note: the scheduled maintenance sweep completed its pass without incident for the auxiliary bus"
# kv_noteknob2's questions without the "\n\nQuestion: " the renderer puts before them; bin2's and
# num's carry their own answer instruction (open questions), verdict's is the readouts' menu suffix.
QUESTIONS = {
    "bin2": "What state is register {T} in? Answer with the single state word only:",
    "num": "What is the value of register {T}? Answer with the number only:",
    "verdict": "Was sensor {S} above the alert threshold?",
}


@dataclass(frozen=True)
class NoteDraw:
    """Every choice of one group: the setting, the decoy, source and target names, the two donor
    values (bin2: STATES; num: the numbers as text; verdict: the operands above and below the
    threshold), the decoy's state or number ("" for verdict; bin2's is counterbalanced, not drawn),
    the threshold (0 outside verdict), the source slot and a filler body per slot (those of slots
    0, m, m+1 and 23 unused)."""

    setting: str
    decoy_reg: str
    source_reg: str
    target: str
    values: tuple[str, str]
    decoy_value: str
    threshold: int
    source: int
    fillers: tuple[str, ...]


def first_digit(number: int) -> str:
    return str(number)[0]


def bin2_decoy(index: int) -> str:
    """The state of the decoy of bin2 item `index`: ONLINE in the first bin2 group, OFFLINE in the
    next, alternating (the groups cycle through SETTINGS, bin2 first)."""
    return STATES[(index // len(KINDS) // len(SETTINGS)) % len(STATES)]


def draw(rng: random.Random, setting: str, decoy_state: str = STATES[0]) -> NoteDraw:
    """kv_noteknob2.gen_item's order: D, S, T; the setting's values; the source slot; a filler
    for every slot. `decoy_state` is bin2's decoy state (`bin2_decoy`)."""
    decoy_reg, source_reg, target = rng.sample(REGISTER_POOL, 3)
    threshold = 0
    if setting == "bin2":  # both states are the pair's values; the decoy's is counterbalanced
        decoy_value, values = decoy_state, STATES
        avoid: frozenset[int] = frozenset()
    elif setting == "num":
        dv = rng.randrange(100, 999)
        a = rng.randrange(100, 999)
        while a == dv:
            a = rng.randrange(100, 999)
        b = rng.randrange(100, 999)
        while b == dv or first_digit(b) == first_digit(a):
            b = rng.randrange(100, 999)
        decoy_value, values, avoid = str(dv), (str(a), str(b)), frozenset({a, b})
    elif setting == "verdict":
        threshold = rng.randrange(130, 969)
        high, low = rng.randrange(threshold + 30, 999), rng.randrange(100, threshold - 29)
        decoy_value, values, avoid = "", (str(high), str(low)), frozenset({high, low})
    else:
        raise ValueError(f"unknown note-knob setting {setting!r}; choose from {SETTINGS}")
    source = rng.randrange(*SOURCE_RANGE)
    fillers = tuple(filler_body(rng, (decoy_reg, source_reg, target), avoid) for _ in range(N_EVENTS))
    return NoteDraw(setting, decoy_reg, source_reg, target, values, decoy_value, threshold, source, fillers)  # type: ignore[arg-type]


def knob(d: NoteDraw, kind: str) -> str:
    """The body at slot m+1: the setting's note, or the neutral filler."""
    if kind == "note":
        return NOTE_T[d.setting].format(S=d.source_reg, T=d.target)
    if kind == "filler":
        return FILL_T
    raise ValueError(f"unknown note-knob kind {kind!r}; choose from {KINDS}")


def build(d: NoteDraw, item_id: str, kind: str) -> DonorPair:
    """The donor pair of draw `d` with `kind` ("note" or "filler") at slot m+1."""
    D, S, T, m = d.decoy_reg, d.source_reg, d.target, d.source
    if d.setting == "bin2":
        decoy = f"register {D} set to state {d.decoy_value}"
        bodies = tuple(f"register {S} set to state {v}" for v in d.values)
        downstream = f"register {T} copied from register {S}"
        values, leak = d.values, rf"\bregister {S} set to\b"
    elif d.setting == "num":
        decoy = f"register {D} initialized to {d.decoy_value}"
        bodies = tuple(f"register {S} initialized to {v}" for v in d.values)
        downstream = f"register {T} copied from register {S}"
        values, leak = d.values, rf"\bregister {S} initialized to\b"
    else:
        decoy = f"sensor {D} logged a routine idle reading"
        bodies = tuple(f"sensor {S} measured {v}; the alert threshold is {d.threshold}" for v in d.values)
        downstream = f"the operator reviewed sensor {S} against the alert threshold"
        values, leak = VERDICTS, rf"\bsensor {S} measured\b"
    events = list(d.fillers)
    events[DECOY_AT] = decoy
    events[m] = f"<donor of {'sensor' if d.setting == 'verdict' else 'register'} {S}>"
    events[m + 1] = knob(d, kind)
    events[DOWNSTREAM_AT] = downstream
    question = QUESTIONS[d.setting].format(S=S, T=T)
    ask = {"budget": BUDGET, "open_question": d.setting != "verdict"}
    drop, complete = (DECOY_AT, m + 1, DOWNSTREAM_AT), (DECOY_AT, m, m + 1, DOWNSTREAM_AT)
    arms = (
        Arm("harv_drop", drop, question, **ask),
        Arm("harv_complete", complete, question, uses_source=True, **ask),
        Arm("sel_txt", drop, question, encoding="text", **ask),
        Arm("full_txt", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text", **ask),
        Arm("control", tuple(range(m)), question, **ask),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=m,
        source_bodies=bodies,  # type: ignore[arg-type]
        values=values,
        menu=values,
        arms=arms,
        leak_patterns=(leak,),
        registers=(S, T, D),
        decoys=(DECOY_AT,),
        variant=f"{kind}/{d.setting}",
    )


def condition(index: int) -> tuple[str, str]:
    """Item `index`'s setting and kind: groups of two (note, filler) cycle through the settings."""
    return SETTINGS[(index // len(KINDS)) % len(SETTINGS)], KINDS[index % len(KINDS)]


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The two items of a group share the rng state, hence every draw; the index picks the kind.
    setting, kind = condition(index)
    return build(draw(rng, setting, bin2_decoy(index)), item_id, kind)


SUITE = SUITES.register("note_knob")(
    Suite(
        "note_knob",
        VERSION,
        default_n=len(KINDS) * len(SETTINGS) * 24,
        make_item=make_item,
        group_size=len(KINDS),
        contract=False,
        paraphrase=False,
        summary="does an answer-free audit note after the source compute the dropped value into its own rows: "
        "note vs neutral filler on one draw, bin2 / num / verdict (kv_noteknob2)",
    )
)
