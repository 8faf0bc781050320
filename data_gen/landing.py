"""Landing suite (SPEC 3.3): where does the dropped source's state land?

Three experiments, each in its own trajectories with only its own events, as the paper's scripts
build them (`kvmemory/kv_causal3.py`, `kv_hops.py`, `kv_poscontrol.py`; draws in the scripts'
own order). Every trajectory has 24 events: decoy "register D set to state d" at 0 (d drawn on
its own), the dropped source "register S set to state v" at m in [8, 12), numeric fillers
"register X refreshed to N" elsewhere, and:

- `edge` (kv_causal3, the true reference edge): root "register M1 mirrors register S" at 13,
  edge "register T mirrors register M1" at 18. Arms: root_edge (serve decoy, root and edge; ask
  T), root_edge_cross (the same with the edge's rows from the other member's prefill: with
  root_edge the root donor x edge donor 2x2), root_only (ask M1), edge_only (ask T).
- `depth3` (kv_hops): the chain C1 "M1 mirrors S" at 13, C2 "M2 mirrors M1" at 18, C3 "T mirrors
  M2" at 23. Arms A1..A5 and the text floor: depth3_c1 ({C1}, ask M1), depth3_c2 ({C2}, ask M2),
  depth3_c3 ({C3}, ask T), depth3_noroot (A4: {C2, C3}, ask T), depth3_root (A5: {C1, C2, C3},
  ask T), depth3_floor (A5's events re-read as text, ask T), each with the decoy. Trace wording:
  kv_hops's "Trace the mirror chain briefly ...".
- `perturb/mention` and `perturb/refswap` (kv_poscontrol, X11; the mention item is also
  kv_causal2's 2x2 with its j=none bridge): root at 13 and, at 18, "register M1 was listed in the
  scheduled audit inventory for this cycle" (mentions the queried register) or the same sentence
  about an unrelated register U (referent swap). The two items of a group share every draw; U has
  the length of M1's name (kv_poscontrol picks U with exactly the mention's token length for the
  model's tokenizer; rows are tokenizer-free, so the name length stands in, exact for a
  character-level tokenizer, and the evaluator counts the groups whose token lengths did match),
  and the slot's position budget covers both sentences, so later positions are the same in both.
  Arms: absent ({decoy, root}, ask M1; mention item only), mention / refswap ({decoy, root, slot
  18}, ask M1) and their *_cross arms (slot 18's rows from the other member's prefill).

Every item also has txt (all events: comprehension) and control (events before the source).
`make_item(rng, ...)` = `draw_*(rng)` + `build_*(draw, ...)`: the builds take explicit draws
(tests/test_parity_landing.py builds the paper's own recorded draws through them).
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from matbench.data_gen.base import (
    N_EVENTS,
    REGISTER_POOL,
    STATES,
    SUITES,
    Suite,
    ask_state,
    filler_body,
    register_source_pair,
)
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import HOPS_TRACE

VERSION = "3"  # 3: one experiment per trajectory (edge, depth3 13/18/23, position-controlled perturbation)
MENU = STATES
DECOY_AT, SOURCE_LO, SOURCE_HI = 0, 8, 12
ROOT_AT, EDGE_AT = 13, 18  # kv_causal2/3: C1_IDX, DW_IDX
C1_AT, C2_AT, C3_AT = 13, 18, 23  # kv_hops
PERTURB_AT = 18  # kv_poscontrol: the co-served row sits at DW_IDX
MENTION = "register {m} was listed in the scheduled audit inventory for this cycle"  # kv_causal2 DW_STYLES["neutral"]
# Items come in groups of four sharing one seed: one per kind (the two perturbation items share every draw).
KINDS = ("edge", "depth3", "perturb/mention", "perturb/refswap")
EXPERIMENT = {"edge": "edge", "depth3": "depth3", "perturb/mention": "perturb", "perturb/refswap": "perturb"}


@dataclass(frozen=True)
class EdgeDraw:
    """kv_causal3's draws. `fillers` has one body per event; the item's own slots overwrite theirs."""

    decoy: str
    source_reg: str
    mirror: str
    target: str
    decoy_state: str
    source: int
    fillers: tuple[str, ...]


@dataclass(frozen=True)
class Depth3Draw:
    """kv_hops's draws. `paper_value` is the value of the paper's single trajectory (v1): a donor
    pair serves both values, so it is unused, and kept so the draw order is kv_hops's. `fillers`
    holds "" at the item's own slots (kv_hops draws no filler there)."""

    decoy: str
    source_reg: str
    mirror: str
    mirror2: str
    target: str
    paper_value: str
    decoy_state: str
    source: int
    fillers: tuple[str, ...]


@dataclass(frozen=True)
class PerturbDraw:
    """kv_poscontrol's draws: `unrelated` is U, the referent swap's register. Fillers never name U."""

    decoy: str
    source_reg: str
    mirror: str
    unrelated: str
    decoy_state: str
    source: int
    fillers: tuple[str, ...]


def draw_edge(rng: random.Random) -> EdgeDraw:
    decoy, source_reg, mirror, target = rng.sample(REGISTER_POOL, 4)
    decoy_state = rng.choice(STATES)
    source = rng.randrange(SOURCE_LO, SOURCE_HI)
    fillers = tuple(filler_body(rng, (decoy, source_reg, mirror, target)) for _ in range(N_EVENTS))
    return EdgeDraw(decoy, source_reg, mirror, target, decoy_state, source, fillers)


def draw_depth3(rng: random.Random) -> Depth3Draw:
    decoy, source_reg, mirror, mirror2, target = rng.sample(REGISTER_POOL, 5)
    paper_value = rng.choice(STATES)
    decoy_state = rng.choice(STATES)
    source = rng.randrange(SOURCE_LO, SOURCE_HI)
    own = {DECOY_AT, source, C1_AT, C2_AT, C3_AT}
    fillers = tuple(
        "" if i in own else filler_body(rng, (decoy, source_reg, mirror, mirror2, target)) for i in range(N_EVENTS)
    )
    return Depth3Draw(decoy, source_reg, mirror, mirror2, target, paper_value, decoy_state, source, fillers)


def draw_perturb(rng: random.Random) -> PerturbDraw:
    decoy, source_reg, mirror = rng.sample(REGISTER_POOL, 3)
    decoy_state = rng.choice(STATES)
    source = rng.randrange(SOURCE_LO, SOURCE_HI)
    others = [n for n in REGISTER_POOL if n not in (decoy, source_reg, mirror)]
    # kv_poscontrol: a U whose sentence has exactly the mention's token length, else any other
    # register. The sentences differ only in the name, so equal name length = equal length under
    # a character-level tokenizer; for a real one the evaluator reports how many groups matched.
    same_length = [u for u in others if len(u) == len(mirror)]
    unrelated = rng.choice(same_length) if same_length else rng.choice(others)
    fillers = tuple(filler_body(rng, (decoy, source_reg, mirror, unrelated)) for _ in range(N_EVENTS))
    return PerturbDraw(decoy, source_reg, mirror, unrelated, decoy_state, source, fillers)


def _events(fillers: tuple[str, ...], decoy: str, decoy_state: str, source: int, source_reg: str) -> list[str]:
    events = list(fillers)
    events[DECOY_AT] = f"register {decoy} set to state {decoy_state}"
    events[source] = f"register {source_reg} set to state <donor>"
    return events


def _common(question: str, source: int) -> tuple[Arm, Arm]:
    return (
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True),
        Arm("control", tuple(range(source)), question),
    )


def build_edge(d: EdgeDraw, item_id: str) -> DonorPair:
    """kv_causal3: root at 13, the true reference edge "T mirrors M1" at 18."""
    events = _events(d.fillers, d.decoy, d.decoy_state, d.source, d.source_reg)
    events[ROOT_AT] = f"register {d.mirror} mirrors register {d.source_reg}"
    events[EDGE_AT] = f"register {d.target} mirrors register {d.mirror}"
    ask_t, ask_m = ask_state(d.target), ask_state(d.mirror)
    arms = (
        Arm("root_edge", (DECOY_AT, ROOT_AT, EDGE_AT), ask_t),  # cells (i, i) of the 2x2
        Arm("root_edge_cross", (DECOY_AT, ROOT_AT, EDGE_AT), ask_t, swapped=(EDGE_AT,)),  # cells (i, j != i)
        Arm("root_only", (DECOY_AT, ROOT_AT), ask_m),
        Arm("edge_only", (DECOY_AT, EDGE_AT), ask_t),
        *_common(ask_t, d.source),
    )
    own = (d.source_reg, d.mirror, d.target, d.decoy)
    pair = register_source_pair(item_id, events, d.source, d.source_reg, arms, own)
    return dataclasses.replace(pair, variant="edge")


def build_depth3(d: Depth3Draw, item_id: str) -> DonorPair:
    """kv_hops: the chain 13/18/23, arms A1..A5 and the text floor; the trace asks to trace the chain."""
    events = _events(d.fillers, d.decoy, d.decoy_state, d.source, d.source_reg)
    events[C1_AT] = f"register {d.mirror} mirrors register {d.source_reg}"
    events[C2_AT] = f"register {d.mirror2} mirrors register {d.mirror}"
    events[C3_AT] = f"register {d.target} mirrors register {d.mirror2}"
    ask_t = ask_state(d.target)
    chain = (DECOY_AT, C1_AT, C2_AT, C3_AT)
    arms = (
        Arm("depth3_c1", (DECOY_AT, C1_AT), ask_state(d.mirror), trace=HOPS_TRACE),  # A1
        Arm("depth3_c2", (DECOY_AT, C2_AT), ask_state(d.mirror2), trace=HOPS_TRACE),  # A2
        Arm("depth3_c3", (DECOY_AT, C3_AT), ask_t, trace=HOPS_TRACE),  # A3
        Arm("depth3_noroot", (DECOY_AT, C2_AT, C3_AT), ask_t, trace=HOPS_TRACE),  # A4
        Arm("depth3_root", chain, ask_t, trace=HOPS_TRACE),  # A5
        Arm("depth3_floor", chain, ask_t, encoding="text", trace=HOPS_TRACE),  # floor_txt_T
        *(dataclasses.replace(arm, trace=HOPS_TRACE) for arm in _common(ask_t, d.source)),
    )
    own = (d.source_reg, d.mirror, d.mirror2, d.target, d.decoy)
    pair = register_source_pair(item_id, events, d.source, d.source_reg, arms, own, trace=HOPS_TRACE)
    return dataclasses.replace(pair, variant="depth3")


def build_perturb(d: PerturbDraw, item_id: str, referent: str) -> DonorPair:
    """kv_poscontrol: `referent` "mention" (slot 18 names M1) or "refswap" (it names U instead)."""
    if referent not in ("mention", "refswap"):
        raise ValueError(f"referent must be 'mention' or 'refswap', not {referent!r}")
    events = _events(d.fillers, d.decoy, d.decoy_state, d.source, d.source_reg)
    events[ROOT_AT] = f"register {d.mirror} mirrors register {d.source_reg}"
    mention, swap = MENTION.format(m=d.mirror), MENTION.format(m=d.unrelated)
    events[PERTURB_AT] = mention if referent == "mention" else swap
    ask_m = ask_state(d.mirror)
    served = (DECOY_AT, ROOT_AT, PERTURB_AT)
    arms = (Arm("absent", (DECOY_AT, ROOT_AT), ask_m),) if referent == "mention" else ()
    arms += (
        Arm(referent, served, ask_m),
        Arm(f"{referent}_cross", served, ask_m, swapped=(PERTURB_AT,)),
        *_common(ask_m, d.source),
    )
    own = (d.source_reg, d.mirror, d.decoy, d.unrelated)
    pair = register_source_pair(item_id, events, d.source, d.source_reg, arms, own)
    # kv_poscontrol's dw_budget: the slot covers both sentences, so every later position (and L,
    # the native query position) is the same in the two items of the group.
    return dataclasses.replace(pair, variant=f"perturb/{referent}", slot_alternatives=((PERTURB_AT, (mention, swap)),))


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    kind = KINDS[index % len(KINDS)]
    # The four items of a group get the same `rng`; each experiment draws from its own stream, so
    # only the two perturbation items (mention, referent swap) share their draws.
    sub = random.Random(f"{EXPERIMENT[kind]}/{rng.getrandbits(64)}")
    if kind == "edge":
        return build_edge(draw_edge(sub), item_id)
    if kind == "depth3":
        return build_depth3(draw_depth3(sub), item_id)
    return build_perturb(draw_perturb(sub), item_id, kind.split("/")[1])


# 64 groups: 64 pairs per experiment (the paper: 24-128 items per script), 64 of each perturbation arm.
SUITE = SUITES.register("landing")(
    Suite(
        "landing",
        VERSION,
        default_n=len(KINDS) * 64,
        make_item=make_item,
        group_size=len(KINDS),
        summary=(
            "where the state lands: root x edge factorial, depth-3 chains, a position-controlled "
            "perturbation (kv_causal3, kv_hops, kv_poscontrol)"
        ),
    )
)
