"""Binding-capacity suite (the paper's kv_bicap.py; Access): is a served row's ~1 bit per row or
per bound variable?

kv_bicap's base item: decoy@0 "register D set to state {dm}" (drawn on its own), two sources
"register S1 set to state {v1}"@m1 (m1 in [8, 12)) and "register S2 set to state {v2}"@m2 (m2 in
[12, 16)), both dropped, fillers elsewhere, and one of three carrier layouts (a group of three
consecutive items shares every draw):
- one: step 24 "register T1 mirrors register S1" (calibration);
- two_in_one: step 24 "register T1 mirrors register S1; register T2 mirrors register S2" (one
  observation binds two states);
- two_sep: step 23 "T1 mirrors S1", step 24 "T2 mirrors S2" (one binding per event).
Served: the decoy and the carrier step(s); asked each target separately ("What state is register
T1 in?" and T2, the menu after it), through harv (joint rows) and sel (the served text: the floor).

As a donor pair both sources flip together, member B holding the negation of member A's v1 and
of its v2 (edge_swap's joint swap), so each question is a donor pair and the v1 != v2 half stays
the same half in both members: cross-talk, P(T1's answer = v2), is measured there as the paper
does. full_txt (comprehension) and control (the events before the first source) are matbench's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, PaperDraws, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
STATUS2 = ("ONLINE", "OFFLINE")
FLIP = {"ONLINE": "OFFLINE", "OFFLINE": "ONLINE"}
DECOY_AT = 0
LAYOUTS = ("one", "two_in_one", "two_sep")
ENCODINGS = (("harv", "joint"), ("sel", "text"))


@dataclass(frozen=True)
class BicapDraw:
    """kv_bicap gen_base's draws (swap=0), in its order; v1, v2 are member A's states."""

    decoy: str
    s1: str
    t1: str
    s2: str
    t2: str
    v1: str
    v2: str
    decoy_value: str
    m1: int
    m2: int
    fillers: tuple[str, ...]  # one body per slot; the decoy's, sources' and steps 23-24 are ""
    fill22: str  # step 23's filler where it holds no carrier


def draw(rng: random.Random) -> BicapDraw:
    """kv_bicap.py gen_base's draws (swap=0), call for call (a parity test replays its stream)."""
    decoy, s1, t1, s2, t2 = rng.sample(REGISTER_POOL, 5)
    v1, v2, decoy_value = (rng.choice(STATUS2) for _ in range(3))
    m1, m2 = rng.randrange(8, 12), rng.randrange(12, 16)
    taken = (decoy, s1, t1, s2, t2)
    fillers = tuple("" if i in (DECOY_AT, m1, m2, 22, 23) else filler_body(rng, taken) for i in range(N_EVENTS))
    return BicapDraw(decoy, s1, t1, s2, t2, v1, v2, decoy_value, m1, m2, fillers, filler_body(rng, taken))


def build(d: BicapDraw, item_id: str, layout: str) -> DonorPair:
    events = list(d.fillers)
    events[DECOY_AT] = f"register {d.decoy} set to state {d.decoy_value}"
    events[d.m1] = f"<donor of register {d.s1}>"
    events[d.m2] = f"<donor of register {d.s2}>"
    bind1, bind2 = f"register {d.t1} mirrors register {d.s1}", f"register {d.t2} mirrors register {d.s2}"
    if layout == "one":
        events[22], events[23], served = d.fill22, bind1, (DECOY_AT, 23)
    elif layout == "two_in_one":
        events[22], events[23], served = d.fill22, f"{bind1}; {bind2}", (DECOY_AT, 23)
    else:
        events[22], events[23], served = bind1, bind2, (DECOY_AT, 22, 23)
    v1, v2 = (d.v1, FLIP[d.v1]), (d.v2, FLIP[d.v2])
    asks = [("q1", d.t1, v1)] + ([] if layout == "one" else [("q2", d.t2, v2)])
    arms = []
    for tag, target, values in asks:
        question = f"What state is register {target} in?"
        arms += [Arm(f"{name}/{tag}", served, question, encoding=enc, values=values) for name, enc in ENCODINGS]
        arms.append(
            Arm(f"full_txt/{tag}", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text", values=values)
        )
    arms.append(Arm("control", tuple(range(d.m1)), f"What state is register {d.t1} in?"))
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.m1,
        source_bodies=tuple(f"register {d.s1} set to state {v}" for v in v1),  # type: ignore[arg-type]
        values=v1,
        menu=STATUS2,
        arms=tuple(arms),
        leak_patterns=(rf"\bregister {d.s1} set to\b", rf"\bregister {d.s2} set to\b"),
        registers=(d.decoy, d.s1, d.t1, d.s2, d.t2),
        decoys=(DECOY_AT,),
        donor_events=((d.m2, *(f"register {d.s2} set to state {v}" for v in v2)),),
        variant=layout,
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The three items of a group share the rng state, hence every draw; the index picks the layout.
    return build(draw(rng), item_id, LAYOUTS[index % len(LAYOUTS)])


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n pairs of `python -m kvmemory.kv_bicap --seed SEED` (its default --swap 0): per
    item, its three layouts."""
    rng = random.Random(seed)
    pairs: list[DonorPair] = []
    for k in range((n + len(LAYOUTS) - 1) // len(LAYOUTS)):
        d = draw(rng)
        pairs += [build(d, f"paper-kv_bicap-s{seed}-{k:05d}-{layout}", layout) for layout in LAYOUTS]
    return pairs[:n]


SUITE = SUITES.register("binding_capacity")(
    Suite(
        "binding_capacity",
        VERSION,
        default_n=len(LAYOUTS) * 32,
        make_item=make_item,
        group_size=len(LAYOUTS),
        contract=False,
        paraphrase=False,
        summary="is a served row's ~1 bit per row or per bound variable: one binding, two in one event, "
        "two events (kv_bicap)",
        paper=PaperDraws("kv_bicap", 2400, paper_items),
    )
)
