"""Sliding-window suite (the paper's kv_swgate.py): what does serving a sliding-window model's kept
rows compactly cost against native serving, as the rows move apart?

kv_swgate's item: decoy@0 "register D set to state {d}", a far row@1 "register M set to state
{v}" (the donor value; padded with newline tokens to the longer of its two values, as kv_swgate
pads it), gap // 20 fillers "register X refreshed to N", and a donor-invariant near row
"register Dn set to state {n}" last. Served: the far and the near row; asked "What state is
register M in?" with the menu after it. Under compact serving the far row sits a few slots from
the query, inside every local layer's window; under native serving it sits at its original
position, and past the window local layers cannot see it. Far-row donor-follow under compact
minus under native is the over-exposure compact serving gives a sliding-window model: `--serving
auto` runs both for this suite (a full-attention model gives the same numbers twice, gate B).

Gaps (the variant): 240 (a short control whose far row stays inside a 512-token window), 600,
1200 and kv_swgate's default 2400 nominal tokens of filler; item k takes gap k mod 4. kv_swgate
serves no header; matbench always serves it (rows 0..H-1, far from the query like the far row).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import REGISTER_POOL, SUITES, PaperDraws, Suite, interleaved
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
STATUS2 = ("ONLINE", "OFFLINE")
GAPS = (240, 600, 1200, 2400)
DECOY_AT, FAR_AT = 0, 1


@dataclass(frozen=True)
class WindowDraw:
    """kv_swgate build_item's draws, in its order."""

    gap: int
    decoy: str
    far: str
    near: str
    decoy_value: str
    near_value: str
    fillers: tuple[str, ...]


def draw(rng: random.Random, gap: int) -> WindowDraw:
    """kv_swgate.py build_item's draws, call for call (a parity test replays its stream)."""
    decoy, far, near = rng.sample(REGISTER_POOL, 3)
    others = [n for n in REGISTER_POOL if n not in (decoy, far, near)]
    decoy_value, near_value = rng.choice(STATUS2), rng.choice(STATUS2)
    fillers = tuple(
        f"register {rng.choice(others)} refreshed to {rng.randrange(100, 999)}" for _ in range(max(1, gap // 20))
    )
    return WindowDraw(gap, decoy, far, near, decoy_value, near_value, fillers)


def build(item_id: str, d: WindowDraw, values: tuple[str, str] = STATUS2) -> DonorPair:
    """Member A's far row states values[0], member B's values[1]."""
    bodies = tuple(f"register {d.far} set to state {v}" for v in values)
    events = (
        f"register {d.decoy} set to state {d.decoy_value}",
        f"<donor of register {d.far}>",
        *d.fillers,
        f"register {d.near} set to state {d.near_value}",
    )
    served = (FAR_AT, len(events) - 1)
    arm = Arm("far_near", served, f"What state is register {d.far} in?", uses_source=True)
    return DonorPair(
        item_id=item_id,
        events=events,
        source=FAR_AT,
        source_bodies=bodies,  # type: ignore[arg-type]
        values=values,
        menu=STATUS2,
        arms=(arm,),
        registers=(d.decoy, d.far, d.near),
        decoys=(DECOY_AT, len(events) - 1),
        variant=f"gap{d.gap}",
        padded=((FAR_AT, bodies),),
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    d = draw(rng, GAPS[index % len(GAPS)])
    return build(item_id, d, STATUS2 if rng.random() < 0.5 else STATUS2[::-1])


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """Item k of `python -m kvmemory.kv_swgate --seed SEED --gap G` for G = GAPS[k mod 4] (one run
    per gap, each from its own `random.Random(seed)`): its item k // 4, the suite's layout."""
    runs = []
    for gap in GAPS:
        rng = random.Random(seed)
        runs.append(
            [build(f"paper-kv_swgate-s{seed}-gap{gap}-{k:05d}", draw(rng, gap)) for k in range(-(-n // len(GAPS)))]
        )
    return interleaved(runs, n)


SUITE = SUITES.register("sliding_window")(
    Suite(
        "sliding_window",
        VERSION,
        default_n=len(GAPS) * 24,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        servings=("compact", "native"),
        paper=PaperDraws("kv_swgate", 1, paper_items),
        summary="how much more a far served row is followed under compact than native serving of a "
        "sliding-window model, by gap (kv_swgate)",
    )
)
