"""Sink-vs-dependency suite (the paper's kv_phantom.py E3; Discovery): are an attention sink and
cross-event conditioning two separate things that independent encoding loses?

kv_phantom's item: 12 `probe()` steps after its deployment-tools header; three of them (sorted,
distinct) form a copy chain, "register ALPHA initialized to V", "register BETA copied from
register ALPHA", "register GAMMA copied from register BETA", and the other nine read sensors
("sensor psi_4 measured 512"). Every event is served, encoded independently at its original
positions, either after the header (head: kv_phantom's `head`, matbench's `isolated` encoding) or
with nothing before it (nohead: the `headless` encoding), and asked a single-retrieval question (a
sensor's value) or the multi-hop one (GAMMA's value = V), in 12 generated tokens. The whole
trajectory as one text prompt is kv_phantom's full-prefill control. If the head fixes retrieval
but not multi-hop, sink stabilisation and missing cross-event conditioning are separate mechanisms.

No event is dropped, and every arm serves both answers' events, so the donor pair is donor-visible
throughout: the members differ in V and in the asked sensor's reading (member B's, each with
another first digit than member A's and no reading of the item, are drawn after kv_phantom's
draws), and follow is reading one's own value through the chain or off the sensor; the donor shift
says how far the margin leans to it. The probe reads a two-way choice between the members' values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from matbench.data_gen.base import SUITES, PaperDraws, Suite
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
N_EVENTS = 12
KINDS = ("temp", "psi", "volt", "flow", "rpm", "lux")  # kv_phantom.py exp_sink's sensor kinds
REGISTERS = ("ALPHA", "BETA", "GAMMA")
BUDGET = 12  # kv_phantom's ntok for E3
ENCODINGS = (("head", "isolated"), ("nohead", "headless"), ("full", "text"))
TASKS = ("retr", "hop")


@dataclass(frozen=True)
class SinkDraw:
    """kv_phantom's draws for one item, in its order."""

    sensors: tuple[str, ...]
    values: tuple[int, ...]
    chain: tuple[int, int, int]
    asked: int  # the sensor the retrieval question asks


def draw(rng: random.Random) -> SinkDraw:
    """kv_phantom.py exp_sink's draws, call for call (a parity test replays its stream)."""
    sensors = tuple(f"{rng.choice(KINDS)}_{i}" for i in range(N_EVENTS))
    values = tuple(rng.randrange(100, 999) for _ in range(N_EVENTS))
    chain = tuple(sorted(rng.sample(range(N_EVENTS), 3)))
    asked = rng.choice([i for i in range(N_EVENTS) if i not in chain])
    return SinkDraw(sensors, values, chain, asked)  # type: ignore[arg-type]


def body(d: SinkDraw, i: int) -> str:
    if i == d.chain[0]:
        text = f"register {REGISTERS[0]} initialized to {d.values[i]}"
    elif i in d.chain:
        k = d.chain.index(i)
        text = f"register {REGISTERS[k]} copied from register {REGISTERS[k - 1]}"
    else:
        text = f"sensor {d.sensors[i]} measured {d.values[i]}"
    return f"probe(){TOOL_SEPARATOR}{text}"


def partner(rng: random.Random, d: SinkDraw, value: int) -> int:
    """Member B's value for a slot whose member-A value is `value`: another first digit, and no
    reading of the item's other steps (a served step showing it would name a donor value)."""
    taken = set(d.values)
    return rng.choice([v for v in range(100, 999) if str(v)[0] != str(value)[0] and v not in taken])


def build(item_id: str, d: SinkDraw, others: tuple[int, int]) -> DonorPair:
    """Member A holds the draw's values; member B initializes ALPHA to others[0] and reads
    others[1] at the asked sensor."""
    v_hop, v_retr = d.values[d.chain[0]], d.values[d.asked]
    questions = {
        "retr": (
            f"What value did sensor {d.sensors[d.asked]} measure? Answer with the number only:",
            (str(v_retr), str(others[1])),
        ),
        "hop": (
            f"What is the value of register {REGISTERS[2]}? Answer with the number only:",
            (str(v_hop), str(others[0])),
        ),
    }
    everything = tuple(range(N_EVENTS))
    arms = tuple(
        Arm(
            f"{mode}_{task}",
            everything,
            questions[task][0],
            uses_source=True,
            encoding=encoding,
            menu=questions[task][1],
            values=questions[task][1],
            open_question=True,
            budget=BUDGET,
        )
        for mode, encoding in ENCODINGS
        for task in TASKS
    )
    bodies = tuple(body(d, i) for i in everything)
    swapped = replace(
        d,
        values=tuple(
            others[0] if i == d.chain[0] else others[1] if i == d.asked else v for i, v in enumerate(d.values)
        ),
    )
    source = d.chain[0]
    return DonorPair(
        item_id=item_id,
        events=bodies,
        source=source,
        source_bodies=(bodies[source], body(swapped, source)),
        values=questions["hop"][1],
        menu=questions["hop"][1],
        arms=arms,
        registers=REGISTERS,
        frame="deploy_tools",
        donor_events=((d.asked, bodies[d.asked], body(swapped, d.asked)),),
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    d = draw(rng)
    return build(item_id, d, (partner(rng, d, d.values[d.chain[0]]), partner(rng, d, d.values[d.asked])))


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n items of kv_phantom.py's E3 (`--exp sink`) whose stream is `random.Random(SEED)`
    (the script seeds it with --seed_base + 99991 * --shard + 2: 2 by default) as member A; member
    B's two values are drawn from a stream of the item's own, since the paper's has no partner."""
    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        d = draw(rng)
        side = random.Random(f"paper-kv_phantom-sink-s{seed}-{k}")
        others = (partner(side, d, d.values[d.chain[0]]), partner(side, d, d.values[d.asked]))
        pairs.append(build(f"paper-kv_phantom-sink-s{seed}-{k:05d}", d, others))
    return pairs


SUITE = SUITES.register("sink_dependency")(
    Suite(
        "sink_dependency",
        VERSION,
        default_n=32,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        paper=PaperDraws("kv_phantom", 2, paper_items),
        summary="does a shared head fix retrieval but not multi-hop over independently encoded events (kv_phantom E3)",
    )
)
