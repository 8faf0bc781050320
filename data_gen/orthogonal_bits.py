"""Orthogonal-bits suite (the paper's kv_orthobit2.py; Access): is the 4-way cliff a readout
limit, or is the information not in the rows?

kv_orthobit2's item is access dir4's (kv_sweepmenu): decoy@0 "register D set to state {dm}"
(drawn on its own), source@m "register S set to state {gold}" (m in [8, 16), dropped), carrier@23
"register T copied from register S", fillers elsewhere. The same served rows {decoy, carrier} are
asked three questions, in kv_orthobit2's words: q4 (the 4-way menu), bit_a ("If register T's state
is NORTH or SOUTH, answer RED. If it is EAST or WEST, answer BLUE.") and bit_b (NORTH or EAST
-> RED, SOUTH or WEST -> BLUE), each with its menu after it ("Answer RED or BLUE:"). The two bits
are orthogonal and together name the state; neutral labels keep response bias at chance .5.

As a donor pair the members take opposite corners, NORTH/WEST or SOUTH/EAST (kv_orthobit2 draws
the gold from all four): the only pairs whose members differ in both bits, so that each bit arm
is a donor pair too. Every question goes through harv_kv (joint rows) and sel_txt (the served
text: kv_orthobit2's floor), with full_txt (comprehension) and control beside them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, PaperDraws, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
DIR4 = ("NORTH", "SOUTH", "EAST", "WEST")
DECOY_AT, CARRIER_AT = 0, 23
SOURCE_RANGE = (8, 16)  # kv_orthobit2: rng.randrange(8, 16)
# kv_orthobit2's maps: the axis bit, the diagonal bit, and the state the two bits name.
AXIS = {"NORTH": "RED", "SOUTH": "RED", "EAST": "BLUE", "WEST": "BLUE"}
DIAGONAL = {"NORTH": "RED", "EAST": "RED", "SOUTH": "BLUE", "WEST": "BLUE"}
RECONSTRUCT = {(AXIS[d], DIAGONAL[d]): d for d in DIR4}
OPPOSITE = {"NORTH": "WEST", "WEST": "NORTH", "SOUTH": "EAST", "EAST": "SOUTH"}  # both bits differ
BITS = ("RED", "BLUE")
ENCODINGS = (("harv_kv", "joint"), ("sel_txt", "text"))


@dataclass(frozen=True)
class OrthoDraw:
    """kv_orthobit2 gen_item's draws, in its order (gold is member A's state)."""

    decoy_reg: str
    source_reg: str
    target: str
    gold: str
    decoy_value: str
    source: int
    fillers: tuple[str, ...]  # one body per slot; the decoy's, the source's and the carrier's are ""


def draw(rng: random.Random) -> OrthoDraw:
    """kv_orthobit2.py gen_item's draws, call for call (a parity test replays its stream)."""
    decoy_reg, source_reg, target = rng.sample(REGISTER_POOL, 3)
    gold, decoy_value = rng.choice(DIR4), rng.choice(DIR4)
    source = rng.randrange(*SOURCE_RANGE)
    taken = (decoy_reg, source_reg, target)
    fillers = tuple("" if i in (DECOY_AT, source, CARRIER_AT) else filler_body(rng, taken) for i in range(N_EVENTS))
    return OrthoDraw(decoy_reg, source_reg, target, gold, decoy_value, source, fillers)


def questions(target: str, values: tuple[str, str]) -> list[tuple[str, str, dict]]:
    """(tag, question, arm overrides) of kv_orthobit2's three readouts of register `target`."""
    return [
        ("q4", f"What state is register {target} in?", {}),
        (
            "bit_a",
            f"If register {target}'s state is NORTH or SOUTH, answer RED. If it is EAST or WEST, answer BLUE.",
            {"menu": BITS, "values": tuple(AXIS[v] for v in values)},
        ),
        (
            "bit_b",
            f"If register {target}'s state is NORTH or EAST, answer RED. If it is SOUTH or WEST, answer BLUE.",
            {"menu": BITS, "values": tuple(DIAGONAL[v] for v in values)},
        ),
    ]


def build(d: OrthoDraw, item_id: str) -> DonorPair:
    S, T, D = d.source_reg, d.target, d.decoy_reg
    values = (d.gold, OPPOSITE[d.gold])
    served = (DECOY_AT, CARRIER_AT)
    arms = []
    for tag, question, extra in questions(T, values):
        arms += [Arm(f"{name}/{tag}", served, question, encoding=enc, **extra) for name, enc in ENCODINGS]
        arms.append(
            Arm(f"full_txt/{tag}", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text", **extra)
        )
    arms.append(Arm("control", tuple(range(d.source)), questions(T, values)[0][1]))
    events = list(d.fillers)
    events[DECOY_AT] = f"register {D} set to state {d.decoy_value}"
    events[d.source] = f"<donor of register {S}>"
    events[CARRIER_AT] = f"register {T} copied from register {S}"
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source,
        source_bodies=tuple(f"register {S} set to state {v}" for v in values),  # type: ignore[arg-type]
        values=values,
        menu=DIR4,
        arms=tuple(arms),
        leak_patterns=(rf"\bregister {S} set to\b",),
        registers=(S, T, D),
        decoys=(DECOY_AT,),
        variant=f"{values[0]}/{values[1]}",
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build(draw(rng), item_id)


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n items of `python -m kvmemory.kv_orthobit2 --seed SEED` (member A holds the
    paper's gold)."""
    rng = random.Random(seed)
    return [build(draw(rng), f"paper-kv_orthobit2-s{seed}-{k:05d}") for k in range(n)]


SUITE = SUITES.register("orthogonal_bits")(
    Suite(
        "orthogonal_bits",
        VERSION,
        default_n=32,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        summary="do dir4 rows carry the state as two orthogonal RED/BLUE bits the 4-way menu misses (kv_orthobit2)",
        paper=PaperDraws("kv_orthobit2", 3500, paper_items),
    )
)
