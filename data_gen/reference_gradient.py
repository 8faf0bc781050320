"""Reference-gradient suite (the paper's kv_refcarrier.py; Landing): what must a served row say to
inherit a dropped state?

kv_refcarrier's item: decoy@0 "sensor D logged a routine idle reading"; operand@m "sensor S
measured {gv}; the alert threshold is {thr}" (read_sensor()) and verdict@m+1 "alert check result
for sensor S: threshold {V}" (evaluate_alert()), m in [8, 15), both dropped; carrier@23, whose
wording is the one variable (each step names its own tool call: the `tool_steps` frame):

  neutral  save_checkpoint(): "checkpoint saved for the sensor S review"
  outcome  archive_result(): "the outcome of the sensor S alert check was archived for the report"
  state    update_flag(): "the alert status flag for sensor S was set according to the check result"
  copy     record_verdict(): "register T recorded the sensor S verdict" (asked of T)

A group of four items is one paper draw asked with each carrier; the carrier slot's position
budget covers all four (kv_refcarrier's `budget`). As a donor pair, member A's reading is above
thr (EXCEEDED) and member B's below it, >= 30 away (the trigger suite's `readings`). The paper
predicts copy ~ state > outcome > neutral ~ chance.

Arms: harv (decoy + carrier from the global prefill) and sel (the two re-read as text: the leak
check), the paper's, asked with the menu in the question (" Answer EXCEEDED or NORMAL:", matbench's
`short`; the paper decodes 10 tokens); txt (every event) and control (events before the operand)
are matbench's additions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, SUITES, Suite, filler_body
from matbench.data_gen.trigger import VERDICTS, readings
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
DECOY_AT, CARRIER_AT = 0, 23
SOURCE_RANGE = (N_EVENTS // 3, (2 * N_EVENTS) // 3 - 1)  # kv_refcarrier: randrange(8, 15)
CARRIERS = {
    "neutral": ("save_checkpoint()", "checkpoint saved for the sensor {S} review"),
    "outcome": ("archive_result()", "the outcome of the sensor {S} alert check was archived for the report"),
    "state": ("update_flag()", "the alert status flag for sensor {S} was set according to the check result"),
    "copy": ("record_verdict()", "register {T} recorded the sensor {S} verdict"),
}
KINDS = tuple(CARRIERS)


def tool(action: str, observation: str) -> str:
    return f"{action}{TOOL_SEPARATOR}{observation}"


@dataclass(frozen=True)
class ReferenceDraw:
    """Every random choice of one paper item (all four carriers): names, thr and the two members'
    readings, the operand slot, and a filler body per slot (those of the named events empty)."""

    decoy: str
    sensor: str
    target: str
    thr: int
    high: int
    low: int
    source: int
    fillers: tuple[str, ...]


def draw(rng: random.Random) -> ReferenceDraw:
    decoy, sensor, target = rng.sample(REGISTER_POOL, 3)
    thr, high, low = readings(rng)
    source = rng.randrange(*SOURCE_RANGE)
    own = (decoy, sensor, target)
    # Fillers never show a member's reading (a served donor-specific number); the paper's unpaired
    # item has one reading and no such rule (as the programming suite, README protocol notes).
    readings_ = frozenset((high, low))
    fillers = tuple(
        "" if i in (DECOY_AT, source, source + 1, CARRIER_AT) else filler_body(rng, own, readings_)
        for i in range(N_EVENTS)
    )
    return ReferenceDraw(decoy, sensor, target, thr, high, low, source, fillers)


def carrier(d: ReferenceDraw, kind: str) -> str:
    action, text = CARRIERS[kind]
    return tool(action, text.format(S=d.sensor, T=d.target))


def build(d: ReferenceDraw, item_id: str, kind: str) -> DonorPair:
    """The donor pair of draw `d` with the carrier `kind` at slot 23."""
    S = d.sensor
    events = list(d.fillers)
    events[DECOY_AT] = f"sensor {d.decoy} logged a routine idle reading"
    events[d.source] = f"<operand of sensor {S}>"
    events[d.source + 1] = f"<verdict of sensor {S}>"
    events[CARRIER_AT] = carrier(d, kind)
    operands = tuple(
        tool("read_sensor()", f"sensor {S} measured {gv}; the alert threshold is {d.thr}") for gv in (d.high, d.low)
    )
    verdicts = tuple(tool("evaluate_alert()", f"alert check result for sensor {S}: threshold {v}") for v in VERDICTS)
    question = (
        f"What verdict did register {d.target} record for sensor {S}?"
        if kind == "copy"
        else f"Was sensor {S} above the alert threshold?"
    )
    served = (DECOY_AT, CARRIER_AT)
    arms = (
        Arm("harv", served, question),
        Arm("sel", served, question, encoding="text"),
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True, encoding="text"),
        Arm("control", tuple(range(d.source)), question),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source,
        source_bodies=operands,  # type: ignore[arg-type]
        values=VERDICTS,
        menu=VERDICTS,
        arms=arms,
        leak_patterns=(rf"\bsensor {S} measured\b", rf"\balert check result for sensor {S}\b"),
        registers=(d.decoy, S, d.target),
        decoys=(DECOY_AT,),
        donor_events=((d.source + 1, *verdicts),),
        variant=kind,
        slot_alternatives=((CARRIER_AT, tuple(carrier(d, k) for k in KINDS)),),
        frame="tool_steps",
    )


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The four items of a group share the rng state, hence every draw; the index picks the carrier.
    return build(draw(rng), item_id, KINDS[index % len(KINDS)])


SUITE = SUITES.register("reference_gradient")(
    Suite(
        "reference_gradient",
        VERSION,
        default_n=len(KINDS) * 32,
        make_item=make_item,
        group_size=len(KINDS),
        contract=False,
        paraphrase=False,
        summary="what must a served row say to inherit a dropped verdict: neutral, outcome, state and copy "
        "carriers (kv_refcarrier)",
    )
)
