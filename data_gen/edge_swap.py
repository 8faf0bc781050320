"""Edge-swap suite (the paper's kv_causal.py Part B; Discovery, its "symbolic edges" half): does the
served text edge select WHICH dropped root's state the answer reads?

One trajectory holds two grounded chains: source Sa@6 "register Sa set to state va" -> root
Ma@13 "register Ma mirrors register Sa", source Sb@8 -> root Mb@15 "register Mb mirrors register
Sb". The leaf@23 references one of the two roots: "register T mirrors register Ma" (leaf a) or
"... Mb" (leaf b); the leaf slot's position budget covers both (kv_causal's `leaf_budget`). Serve
{decoy, Ma, Mb, leaf}, ask T. Both sources are dropped.

A group of two items is one draw of the paper's item, asked with leaf a, then leaf b (the paper
draws the decoy's state once per leaf; so does this suite). The paper draws va and vb at random and
scores its va != vb half; matbench makes every pair that half, as a donor pair: member A has va =
ONLINE and vb = OFFLINE, member B the reverse, so every served token is the same in both and only
the two dropped sources differ. The edge arm's donor values are the referenced chain's (leaf a:
va, leaf b: vb): `follow` = both members track the chain the leaf names (the paper's
edge-tracking), `anti` = both track the other chain (its wrong-chain reading), `const` = the
answer ignores both dropped sources.

Arms: edge (the paper's), txt (every event, ask T: comprehension) and control (events before the
first source, ask T: must give no donor-sensitive pair), matbench's additions. Readout of the
paper: trace (menu, then kv_causal's mirror instruction, 160 tokens, last word).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import (
    N_EVENTS,
    REGISTER_POOL,
    STATES,
    SUITES,
    PaperDraws,
    Suite,
    ask_state,
    filler_body,
)
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import MIRROR_TRACE

VERSION = "1"
SOURCE_A, SOURCE_B, ROOT_A, ROOT_B, LEAF_AT = 6, 8, 13, 15, 23
LEAVES = ("a", "b")  # the chain the leaf references; the item's index within its group picks it


@dataclass(frozen=True)
class EdgeSwapDraw:
    """Every random choice of one paper item (both leaves): register names, one decoy state per
    leaf, and a filler body for each of the 24 slots (those of the named events are overwritten)."""

    decoy: str
    source_a: str
    source_b: str
    root_a: str
    root_b: str
    target: str
    decoy_states: tuple[str, str]
    fillers: tuple[str, ...]


def draw(rng: random.Random) -> EdgeSwapDraw:
    # kv_causal Part B's order of draws: six names, va and vb, the fillers, then each leaf's decoy
    # state. va and vb are drawn (so later draws stay the paper's) but the pair sets both values.
    decoy, source_a, source_b, root_a, root_b, target = rng.sample(REGISTER_POOL, 6)
    rng.choice(STATES), rng.choice(STATES)
    own = (decoy, source_a, source_b, root_a, root_b, target)
    fillers = tuple(filler_body(rng, own) for _ in range(N_EVENTS))
    decoy_states = (rng.choice(STATES), rng.choice(STATES))
    return EdgeSwapDraw(decoy, source_a, source_b, root_a, root_b, target, decoy_states, fillers)


def leaf_body(d: EdgeSwapDraw, leaf: str) -> str:
    return f"register {d.target} mirrors register {d.root_a if leaf == 'a' else d.root_b}"


def build(d: EdgeSwapDraw, item_id: str, leaf: str) -> DonorPair:
    """The donor pair of draw `d` whose leaf references chain `leaf` ("a" or "b")."""
    events = list(d.fillers)
    events[0] = f"register {d.decoy} set to state {d.decoy_states[LEAVES.index(leaf)]}"
    events[SOURCE_A] = f"register {d.source_a} set to state <donor>"
    events[SOURCE_B] = f"register {d.source_b} set to state <donor>"
    events[ROOT_A] = f"register {d.root_a} mirrors register {d.source_a}"
    events[ROOT_B] = f"register {d.root_b} mirrors register {d.source_b}"
    events[LEAF_AT] = leaf_body(d, leaf)
    # Member A: va = ONLINE, vb = OFFLINE; member B the reverse. The referenced chain's values are
    # the edge arm's donor values.
    referenced = STATES if leaf == "a" else STATES[::-1]
    question = ask_state(d.target)
    arms = (
        Arm("edge", (0, ROOT_A, ROOT_B, LEAF_AT), question, values=referenced),
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True, values=referenced),
        Arm("control", tuple(range(SOURCE_A)), question, values=referenced),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=SOURCE_A,
        source_bodies=tuple(f"register {d.source_a} set to state {v}" for v in STATES),
        values=STATES,
        menu=STATES,
        arms=arms,
        leak_patterns=(rf"\bregister {d.source_a} set to\b", rf"\bregister {d.source_b} set to\b"),
        registers=(d.decoy, d.source_a, d.source_b, d.root_a, d.root_b, d.target),
        decoys=(0,),
        donor_events=((SOURCE_B, *(f"register {d.source_b} set to state {v}" for v in STATES[::-1])),),
        variant=f"leaf_{leaf}",
        slot_alternatives=((LEAF_AT, tuple(leaf_body(d, x) for x in LEAVES)),),
        trace=MIRROR_TRACE,
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The two items of a group share the rng state, hence every draw; the index picks the leaf.
    return build(draw(rng), item_id, LEAVES[index % len(LEAVES)])


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n pairs of `python -m kvmemory.kv_causal --seed SEED`'s Part B items, leaf a then
    leaf b of each: the stream passes over each item's Part A (discovery) first. The paper draws va
    and vb and scores its va != vb items; a pair holds both orders, so the paper's own member is
    A where va is ONLINE and B where it is OFFLINE (and neither where va == vb)."""
    from matbench.data_gen.discovery import paper_draw

    rng = random.Random(seed)
    pairs: list[DonorPair] = []
    for k in range((n + len(LEAVES) - 1) // len(LEAVES)):
        paper_draw(rng)
        d = draw(rng)
        pairs += [build(d, f"paper-kv_causal-s{seed}-{k:05d}-{leaf}", leaf) for leaf in LEAVES]
    return pairs[:n]


SUITE = SUITES.register("edge_swap")(
    Suite(
        "edge_swap",
        VERSION,
        default_n=len(LEAVES) * 64,
        make_item=make_item,
        group_size=len(LEAVES),
        contract=False,
        summary="does the served leaf edge select which of two dropped roots is read? (kv_causal Part B)",
        paper=PaperDraws("kv_causal", 3900, paper_items),
    )
)
