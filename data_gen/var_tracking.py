"""Variable-tracking suite (the paper's kv_vartrack.py and kv_vardecomp.py; Landing): how do
served rows resolve a chain of copies as it grows from 1 to 4 hops, near or far apart?

The paper's item (kv_vartrack `gen_item`, verbatim): 24 `reg_op()` steps; a chain of hops + 1
registers, "register X initialized to V" then "register Y copied from register X" per hop, either
adjacent (near) or spread with the first and last pinned to steps 1 and 24 (far); every other step
refreshes a register outside the chain to a random number. Asked "What is the value of register
<last>? Answer with the number only:" in 12 tokens. Cells: hops in {1, 2, 4} x {near, far}; item
k is cell k mod 6, so any prefix of the suite is balanced.

Arms, the union of kv_vartrack's and kv_vardecomp's servings of one trajectory:
- full_txt: everything as text (vartrack `full`, vardecomp `full_txt`);
- sel_txt: the chain's steps only, as fresh text (routing: vardecomp);
- harv_kv: the chain's rows from the global prefill at their positions (vartrack `harvest`);
- sel_ikv: the chain's steps each encoded after the header alone (vardecomp);
- iso: every step encoded after the header alone, all served (vartrack);
- anch: every step encoded after the header and an opening anchor of min(1024, everything before
  the step) tokens, all served (vartrack; the `anchored` encoding). On these 24-step trajectories
  (about 600 tokens under real tokenizers) the anchor is the step's whole prefix.

As a donor pair the members differ in V (the initialization is the source; two values with
different first digits, so the probe reads a two-way choice). Every arm serves the chain, so every
arm sees the source: follow is resolving the chain to the member's own V, the donor shift how
far the margin leans to it. The refreshed fillers never show either V (the paper draws them
freely; a filler showing V would be a served donor-specific word).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import SUITES, PaperDraws, Suite, condition_major
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
N_EVENTS = 24
NAMES = ("ALPHA", "BETA", "GAMMA", "DELTA", "OMEGA", "SIGMA", "KAPPA", "THETA", "LAMBDA", "EPSILON")  # kv_vartrack
CELLS = tuple((hops, far) for hops in (1, 2, 4) for far in (False, True))  # kv_vartrack's loop order
BUDGET = 12


@dataclass(frozen=True)
class ChainDraw:
    """kv_vartrack `gen_item`'s draws: the chain's registers, V, its slots, the fillers' bodies."""

    hops: int
    far: bool
    chain: tuple[str, ...]
    value: int
    slots: tuple[int, ...]
    fillers: tuple[tuple[str, int], ...]  # per non-chain step, in step order: (register, number)


def draw(rng: random.Random, hops: int, far: bool) -> ChainDraw:
    """kv_vartrack.py gen_item's draws, call for call (a parity test replays its stream)."""
    chain = tuple(rng.sample(NAMES, hops + 1))
    value = rng.randrange(100, 999)
    if far:
        slots = sorted(rng.sample(range(N_EVENTS), hops + 1))
        slots[0], slots[-1] = 0, N_EVENTS - 1
    else:
        s0 = rng.randrange(0, N_EVENTS - hops - 1)
        slots = list(range(s0, s0 + hops + 1))
    others = [n for n in NAMES if n not in chain]
    fillers = []
    si = 0
    for i in range(N_EVENTS):
        if si <= hops and i == slots[si]:
            si += 1
        else:
            fillers.append((rng.choice(others), rng.randrange(100, 999)))
    return ChainDraw(hops, far, chain, value, tuple(slots), tuple(fillers))


def bodies(d: ChainDraw, value: int) -> list[str]:
    out, fill, si = [], iter(d.fillers), 0
    for i in range(N_EVENTS):
        if si <= d.hops and i == d.slots[si]:
            out.append(
                f"register {d.chain[0]} initialized to {value}"
                if si == 0
                else f"register {d.chain[si]} copied from register {d.chain[si - 1]}"
            )
            si += 1
        else:
            register, number = next(fill)
            out.append(f"register {register} refreshed to {number}")
    return out


def build(item_id: str, d: ChainDraw, other: int) -> DonorPair:
    """Member A initializes the chain to the draw's V, member B to `other`."""
    events = bodies(d, d.value)
    source = d.slots[0]
    question = f"What is the value of register {d.chain[-1]}? Answer with the number only:"
    chain, everything = tuple(d.slots), tuple(range(N_EVENTS))
    ask = {"uses_source": True, "open_question": True, "budget": BUDGET}
    arms = (
        Arm("full_txt", everything, question, encoding="text", **ask),
        Arm("sel_txt", chain, question, encoding="text", **ask),
        Arm("harv_kv", chain, question, **ask),
        Arm("sel_ikv", chain, question, encoding="isolated", **ask),
        Arm("iso", everything, question, encoding="isolated", **ask),
        Arm("anch", everything, question, encoding="anchored", **ask),
    )
    values = (str(d.value), str(other))
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=source,
        source_bodies=(events[source], bodies(d, other)[source]),
        values=values,
        menu=values,
        arms=arms,
        registers=NAMES,
        variant=f"h{d.hops}/{'far' if d.far else 'near'}",
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    hops, far = CELLS[index % len(CELLS)]
    while True:
        d = draw(rng, hops, far)
        other = rng.choice([v for v in range(100, 999) if str(v)[0] != str(d.value)[0]])
        if not any(number in (d.value, other) for _, number in d.fillers):
            return build(item_id, d, other)


def paper_partner(d: ChainDraw) -> int:
    """Member B's V for a paper item, drawn from nothing (the paper's stream has no partner): 100,
    or 200 where V starts with 1."""
    return 100 if str(d.value)[0] != "1" else 200


PAPER_ITEMS = 16  # kv_vartrack's and kv_vardecomp's default --items (per cell)


def paper_items(seed: int, n: int, items: int | None = None) -> list[DonorPair]:
    """The first n pairs of `python -m kvmemory.kv_vartrack --seed SEED --items M` (kv_vardecomp
    draws the same stream) in the suite's layout: item k is cell k mod 6's item k // 6; the script
    draws every item of a cell before the next cell."""

    def make(rng: random.Random, cell: int, k: int) -> DonorPair:
        d = draw(rng, *CELLS[cell])
        return build(f"paper-kv_vartrack-s{seed}-c{cell}-{k:05d}", d, paper_partner(d))

    return condition_major(seed, n, len(CELLS), PAPER_ITEMS, items, make)


SUITE = SUITES.register("var_tracking")(
    Suite(
        "var_tracking",
        VERSION,
        default_n=96,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        paper=PaperDraws("kv_vartrack", 7, paper_items),
        summary="how do served rows resolve a 1-, 2- or 4-hop copy chain, near or far (kv_vartrack, kv_vardecomp)",
    )
)
