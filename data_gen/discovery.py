"""Discovery suite (SPEC 3.1; the paper's kv_causal.py Part A): does a mirror statement carry
the dropped source's state?

decoy@0, source@m (m in [8, 12)), root "M mirrors S"@13, chain "M2 mirrors M"@18 and
"T mirrors M2"@23, fillers elsewhere. Arms: root (serve decoy+root, ask M), chain (serve decoy
and every carrier, ask T), txt (every event: comprehension, ask M), control (events before the
source, ask M: must give follow + anti = 0). Trace readout: kv_causal's mirror instruction.
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
    register_source_pair,
)
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import MIRROR_TRACE

VERSION = "2"  # 2: rows carry the trace instruction (kv_causal.py's mirror wording)
MENU = STATES
ROOT_AT, CHAIN_AT, TARGET_AT = 13, 18, 23


@dataclass(frozen=True)
class DiscoveryDraw:
    """Every random choice of one item; `fillers` holds a body for each of the 24 slots (those of
    the decoy, source and carriers are overwritten)."""

    source_reg: str
    mirror: str
    mirror2: str
    target: str
    decoy: str
    decoy_state: str
    source: int
    fillers: tuple[str, ...]


def draw(rng: random.Random) -> DiscoveryDraw:
    source_reg, mirror, mirror2, target, decoy = rng.sample(REGISTER_POOL, 5)
    own = (source_reg, mirror, mirror2, target, decoy)
    source = rng.randrange(8, 12)
    fillers = tuple(filler_body(rng, own) for _ in range(N_EVENTS))
    # The decoy's value is drawn on its own: it may equal either donor value (SPEC 1).
    return DiscoveryDraw(source_reg, mirror, mirror2, target, decoy, rng.choice(MENU), source, fillers)


def build(d: DiscoveryDraw, item_id: str) -> DonorPair:
    events = list(d.fillers)
    events[0] = f"register {d.decoy} set to state {d.decoy_state}"
    events[d.source] = f"register {d.source_reg} set to state <donor>"
    events[ROOT_AT] = f"register {d.mirror} mirrors register {d.source_reg}"
    events[CHAIN_AT] = f"register {d.mirror2} mirrors register {d.mirror}"
    events[TARGET_AT] = f"register {d.target} mirrors register {d.mirror2}"
    arms = (
        Arm("root", (0, ROOT_AT), ask_state(d.mirror)),
        Arm("chain", (0, ROOT_AT, CHAIN_AT, TARGET_AT), ask_state(d.target)),
        Arm("txt", tuple(range(N_EVENTS)), ask_state(d.mirror), uses_source=True),
        Arm("control", tuple(range(d.source)), ask_state(d.mirror)),
    )
    own = (d.source_reg, d.mirror, d.mirror2, d.target, d.decoy)
    return register_source_pair(item_id, events, d.source, d.source_reg, arms, own, trace=MIRROR_TRACE)


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    return build(draw(rng), item_id)


def paper_draw(rng: random.Random) -> DiscoveryDraw:
    """kv_causal.py Part A's draws in its order: decoy, source, the two mirrors and the target
    (`rng.sample(NAMES, 5)`), the decoy's state, the source slot, then the 24 fillers."""
    decoy, source_reg, mirror, mirror2, target = rng.sample(REGISTER_POOL, 5)
    decoy_state = rng.choice(STATES)
    source = rng.randrange(8, 12)
    own = (decoy, source_reg, mirror, mirror2, target)
    fillers = tuple(filler_body(rng, own) for _ in range(N_EVENTS))
    return DiscoveryDraw(source_reg, mirror, mirror2, target, decoy, decoy_state, source, fillers)


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n items `python -m kvmemory.kv_causal --seed SEED` draws: each item's Part A,
    then its Part B (edge swap), whose draws the stream passes over."""
    from matbench.data_gen.edge_swap import draw as edge_swap_draw

    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        pairs.append(build(paper_draw(rng), f"paper-kv_causal-s{seed}-{k:05d}"))
        edge_swap_draw(rng)
    return pairs


# 256: the paper's replication size (kv_causal Part A, 130:0 follow:anti at 256 pairs on Qwen3-8B).
SUITE = SUITES.register("discovery")(
    Suite(
        "discovery",
        VERSION,
        default_n=256,
        make_item=make_item,
        summary=(
            "does a mirror statement's kept row carry the dropped source's state, and through a three-"
            "hop chain? (kv_causal Part A)"
        ),
        paper=PaperDraws("kv_causal", 3900, paper_items),
    )
)
