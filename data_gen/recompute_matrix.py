"""Recompute-matrix suite (the paper's kv_recomp.py; Update): which write-time state needs a
recompute after an out-of-band update of its dropped source, and what an appended delta must carry.

kv_recomp's world is kv_coherence2's out-of-band update without its SEM block or version tags: the
header is HDR, 24 `reg_op()` steps: decoy@0, source@m (m in [8, 16), dropped), carrier@23; the
fillers refresh the other registers ("register X refreshed to N"). Every arm serves {decoy,
carrier} of the one global prefill; the update reaches the cache only as a delta appended at query
time. Three write-time states, the item's variant (rows cycle by item index, so any --limit
prefix is balanced; the paper runs 32 items of each row in turn):

  A_mat   materialized binary: decoy "register D set to state dm", source "register S set to state
          v1", carrier "register T mirrors register S"; the update S := v2. "What state is register T
          in now? Answer ONLINE or OFFLINE." (12 tokens)
  B_oper  operands only: decoy "sensor D logged a routine idle reading", source "sensor S measured
          gv; the alert threshold is thr", carrier "the operator reviewed sensor S against the alert
          threshold" (the verdict is not materialized); the update: a new measurement gv2. "Is
          sensor S above the alert threshold now?" + " Answer EXCEEDED or NORMAL." + kv_recomp's
          TRACE (160 tokens)
  C_high  high cardinality: decoy "register D initialized to dm", source "register S initialized to
          n1", carrier "register T copied from register S"; the update S := n2. "What is the value
          of register T now? Answer with the number only." (12 tokens)

Arms (kv_recomp's ARMS; the appended delta is the step-25 `memory_patch()` observation, kv_recomp
`pstep`):

  stale   nothing appended: gold is the write-time answer (kv_recomp's stale_gold), the donor value
  d_src   the source delta: A "register S set to state v2"; B "sensor S measured gv2" (no thr:
          the missing operand); C "register S set to n2"
  d_mtn   the maintenance note "[STATE UPDATE] register S → v2; overrides any earlier value and
          conclusion" (B: "sensor S measurement → gv2"; C: "register S → n2")
  d_der   the derived delta: A/C the source delta + "; therefore register T is now v2/n2"; B
          "sensor S measured gv2; the verdict is now EXCEEDED/NORMAL"
  oracle  the recompute ceiling by append: A/C the source delta, then a step-26 `reg_op()`
          restating the carrier; B "sensor S measured gv2; the alert threshold is thr"

Every arm but stale expects the current answer (A v2, B the verdict of gv2 against thr, C n2).
matbench adds `control` (the events before the source, the row's question): the control gate.

The donor pair: the members differ only in the dropped source's write-time value, and so in the
stale answer: A_mat v1 = ONLINE / OFFLINE (kv_coherence2's pair); B_oper an operand 30 or more above
the shared threshold (EXCEEDED) / 30 or more below it (NORMAL); C_high two three-digit numbers.
Each of kv_recomp's deltas names only S, T and the update (v2; gv2, its verdict and thr; n2), all
drawn once per item, so one appended text serves both members byte for byte: the paper's own.
`draw` is kv_recomp `gen_item`'s draws call for call (a parity test replays its stream); the member
the paper drew is one of the two (A: its v1's; B: its operand's side; C: member A), the other is
drawn after it.

Readouts. A_mat and C_high carry kv_recomp's own answer instruction (open questions, the paper's
direct readout and its 12-token budget, SPRAG_DIRECT_NTOK's default): the same prompt under every
readout. B_oper is the trace readout's suffix (" Answer EXCEEDED or NORMAL." and the pair's trace
instruction, kv_recomp's TRACE) with the paper's 160 tokens: under `--readout trace` the paper's
prompt byte for byte; under probe and short matbench's direct " Answer EXCEEDED or NORMAL:".

Rendering: the `tool_steps` frame (HDR, the paper's header; a body without a tool call is a
`reg_op()` step). A delta body names its call, "memory_patch() => ...", which renders as kv_recomp's
`pstep`; the oracle's restated carrier names none and renders as the `<step 26>` `reg_op()` step.

Deviations from kv_recomp, each the least a donor pair or the probe needs:
- B_oper: the partner operand lies on the other side of the threshold, 30 or more away, within
  [100, 999); an item whose threshold leaves no room on that side (thr < 130 with the paper's
  operand above, thr > 968 with it below) is drawn again.
- C_high: n2 must differ from n1 in its first digit (the paper: n2 != n1), and the partner number
  has a third first digit and is not the decoy's: the probe tells the three menu numbers (both
  members' n1 and n2) apart by their first tokens; an item whose n2 shares n1's first digit is
  drawn again.
- B_oper and C_high: no filler names either member's value (the paper's may; the control arm
  serves the fillers before the source, where such a filler would be a served donor-specific
  word): such an item is drawn again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, PaperDraws, Suite, condition_major
from matbench.protocol.frames import TOOL_SEPARATOR
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
ROWS = ("A_mat", "B_oper", "C_high")  # kv_recomp's ROWS, in its order
ARMS = ("stale", "d_src", "d_mtn", "d_der", "oracle")  # kv_recomp's ARMS, in its order
DELTAS = ARMS[1:]  # the arms that append a delta and expect the current answer
VERDICTS = ("EXCEEDED", "NORMAL")  # member A's (operand above the threshold), member B's
DECOY_AT, CARRIER_AT = 0, 23  # kv_recomp DEC_IDX, CAR_IDX
SOURCE_SLOTS = (8, 16)  # kv_recomp: m0 = randrange(8, 16)
NUMBERS = (100, 999)  # kv_recomp's randrange bounds of every three-digit number
MARGIN = 30  # kv_recomp: an operand at least 30 from the threshold
# kv_recomp's TRACE, verbatim (row B's answer instruction after " Answer EXCEEDED or NORMAL.").
TRACE = " Reason briefly, then end your answer with the final answer word or number."
BUDGETS = {"A_mat": 12, "B_oper": 160, "C_high": 12}  # kv_recomp: 160 for B_oper, else SPRAG_DIRECT_NTOK (12)
PATCH = "memory_patch()"  # the tool call of kv_recomp's appended `pstep`
FRAME = "tool_steps"


@dataclass(frozen=True)
class RecompDraw:
    """kv_recomp `gen_item`'s draws of one item: the row, the decoy, source and target registers,
    the source's write-time value as the paper drew it (A: v1; B: the operand gv; C: n1), the
    update (A: v2; B: gv2; C: n2), the decoy's value (A: dm, a state; C: dm, a number; B: none),
    the threshold (B only, else 0), the source slot and the fillers, (register, number) per filler
    slot in step order (every slot but the decoy's, the source's and the carrier's)."""

    row: str
    decoy: str
    source: str
    target: str
    value: str
    update: str
    decoy_value: str
    threshold: int
    source_at: int
    fillers: tuple[tuple[str, int], ...]


def _operand(rng: random.Random, threshold: int) -> int:
    """kv_recomp: a three-digit number redrawn while within 30 of the threshold."""
    value = rng.randrange(*NUMBERS)
    while abs(value - threshold) < MARGIN:
        value = rng.randrange(*NUMBERS)
    return value


def draw(rng: random.Random, row: str) -> RecompDraw:
    """kv_recomp.gen_item's draws, call for call (a parity test replays its stream)."""
    decoy, source, target = rng.sample(REGISTER_POOL, 3)
    others = [r for r in REGISTER_POOL if r not in (decoy, source, target)]
    threshold, decoy_value = 0, ""
    if row == "A_mat":
        value, update, decoy_value = rng.choice(STATES), rng.choice(STATES), rng.choice(STATES)
    elif row == "B_oper":
        threshold = rng.randrange(*NUMBERS)
        value, update = str(_operand(rng, threshold)), str(_operand(rng, threshold))
    elif row == "C_high":
        n1 = rng.randrange(*NUMBERS)
        n2 = rng.randrange(*NUMBERS)
        while n2 == n1:
            n2 = rng.randrange(*NUMBERS)
        value, update, decoy_value = str(n1), str(n2), str(rng.randrange(*NUMBERS))
    else:
        raise ValueError(f"unknown recompute-matrix row {row!r}; choose from {ROWS}")
    source_at = rng.randrange(*SOURCE_SLOTS)
    fillers = tuple((rng.choice(others), rng.randrange(*NUMBERS)) for _ in range(N_EVENTS - 3))
    return RecompDraw(row, decoy, source, target, value, update, decoy_value, threshold, source_at, fillers)


def verdict(operand: int, threshold: int) -> str:
    return VERDICTS[0] if operand > threshold else VERDICTS[1]


def paper_member(d: RecompDraw) -> int:
    """The member whose source is the one kv_recomp drew (the other is matbench's partner)."""
    if d.row == "A_mat":
        return STATES.index(d.value)
    if d.row == "B_oper":
        return VERDICTS.index(verdict(int(d.value), d.threshold))
    return 0


def operands(d: RecompDraw, partner: str) -> tuple[str, str]:
    """The two members' written values: A the two states; B (above, below) the threshold; C the
    paper's n1 then the partner."""
    if d.row == "A_mat":
        return STATES
    if d.row == "B_oper":
        return (d.value, partner) if paper_member(d) == 0 else (partner, d.value)
    return (d.value, partner)


def gold(d: RecompDraw) -> str:
    """The current answer every delta arm expects (kv_recomp's gold)."""
    return verdict(int(d.update), d.threshold) if d.row == "B_oper" else d.update


def delta_bodies(d: RecompDraw) -> dict[str, tuple[str, ...]]:
    """The appended steps per delta arm (kv_recomp `gen_item`'s deltas): each a `memory_patch()`
    step, and the oracle's restated carrier in A and C a plain (`reg_op()`) step."""
    S, T, new = d.source, d.target, d.update

    def patch(body: str) -> str:
        return f"{PATCH}{TOOL_SEPARATOR}{body}"

    if d.row == "A_mat":
        return {
            "d_src": (patch(f"register {S} set to state {new}"),),
            "d_mtn": (patch(f"[STATE UPDATE] register {S} \u2192 {new}; overrides any earlier value and conclusion"),),
            "d_der": (patch(f"register {S} set to state {new}; therefore register {T} is now {new}"),),
            "oracle": (patch(f"register {S} set to state {new}"), f"register {T} mirrors register {S}"),
        }
    if d.row == "B_oper":
        return {
            "d_src": (patch(f"sensor {S} measured {new}"),),
            "d_mtn": (
                patch(
                    f"[STATE UPDATE] sensor {S} measurement \u2192 {new}; overrides any earlier value and conclusion"
                ),
            ),
            "d_der": (patch(f"sensor {S} measured {new}; the verdict is now {gold(d)}"),),
            "oracle": (patch(f"sensor {S} measured {new}; the alert threshold is {d.threshold}"),),
        }
    return {
        "d_src": (patch(f"register {S} set to {new}"),),
        "d_mtn": (patch(f"[STATE UPDATE] register {S} \u2192 {new}; overrides any earlier value and conclusion"),),
        "d_der": (patch(f"register {S} set to {new}; therefore register {T} is now {new}"),),
        "oracle": (patch(f"register {S} set to {new}"), f"register {T} copied from register {S}"),
    }


def question(d: RecompDraw) -> str:
    """kv_recomp's question without the "\\n\\nQuestion: " the renderer puts before it: A and C
    with their own answer instruction; B's instruction is the trace readout's suffix."""
    if d.row == "A_mat":
        return f"What state is register {d.target} in now? Answer ONLINE or OFFLINE."
    if d.row == "B_oper":
        return f"Is sensor {d.source} above the alert threshold now?"
    return f"What is the value of register {d.target} now? Answer with the number only."


def build(item_id: str, d: RecompDraw, partner: str = "") -> DonorPair:
    """The donor pair of draw `d`; `partner` is the other member's written value (B: an operand on
    the other side of the threshold; C: a number; A: unused, the members are the two states)."""
    D, S, T = d.decoy, d.source, d.target
    written = operands(d, partner)
    if d.row == "A_mat":
        decoy, carrier = f"register {D} set to state {d.decoy_value}", f"register {T} mirrors register {S}"
        bodies = tuple(f"register {S} set to state {v}" for v in written)
        values, menu, leak = STATES, STATES, rf"\bregister {S} set to\b"
    elif d.row == "B_oper":
        decoy, carrier = (
            f"sensor {D} logged a routine idle reading",
            f"the operator reviewed sensor {S} against the alert threshold",
        )
        bodies = tuple(f"sensor {S} measured {v}; the alert threshold is {d.threshold}" for v in written)
        values, menu, leak = VERDICTS, VERDICTS, rf"\bsensor {S} measured\b"
    else:
        decoy, carrier = f"register {D} initialized to {d.decoy_value}", f"register {T} copied from register {S}"
        bodies = tuple(f"register {S} initialized to {v}" for v in written)
        values, menu, leak = written, (*written, d.update), rf"\bregister {S} initialized to\b"
    slots = [i for i in range(N_EVENTS) if i not in (DECOY_AT, d.source_at, CARRIER_AT)]
    events = ["<donor>"] * N_EVENTS
    for i, (register, number) in zip(slots, d.fillers, strict=True):
        events[i] = f"register {register} refreshed to {number}"
    events[DECOY_AT], events[CARRIER_AT] = decoy, carrier
    events[d.source_at] = f"<donor of {'sensor' if d.row == 'B_oper' else 'register'} {S}>"
    ask = {"open_question": d.row != "B_oper", "budget": BUDGETS[d.row]}
    q, served, deltas, current = question(d), (DECOY_AT, CARRIER_AT), delta_bodies(d), gold(d)
    arms = (
        Arm("stale", served, q, **ask),
        *(Arm(a, served, q, appended=deltas[a], expected=current, **ask) for a in DELTAS),
        Arm("control", tuple(range(d.source_at)), q, **ask),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=d.source_at,
        source_bodies=bodies,  # type: ignore[arg-type]
        values=values,
        menu=menu,
        arms=arms,
        leak_patterns=(leak,),
        registers=(S, T, D),  # type: ignore[arg-type]
        decoys=(DECOY_AT,),
        variant=d.row,
        frame=FRAME,
        trace=TRACE,
    )


def first_digit(number: int | str) -> str:
    return str(number)[0]


def partner_of(rng: random.Random, d: RecompDraw) -> str | None:
    """The other member's written value, drawn after the paper's draws; None where the item must
    be drawn again (B: no room on the other side of the threshold; C: n2 shares n1's first digit)."""
    if d.row == "A_mat":
        return ""
    if d.row == "B_oper":
        if paper_member(d) == 0:  # the paper's operand is above: the partner lies 30 or more below
            return (
                str(rng.randrange(NUMBERS[0], d.threshold - MARGIN + 1)) if d.threshold - MARGIN >= NUMBERS[0] else None
            )
        return str(rng.randrange(d.threshold + MARGIN, NUMBERS[1])) if d.threshold + MARGIN < NUMBERS[1] else None
    if first_digit(d.update) == first_digit(d.value):
        return None
    taken = {first_digit(d.value), first_digit(d.update)}
    return str(rng.choice([n for n in range(*NUMBERS) if first_digit(n) not in taken and str(n) != d.decoy_value]))


def paper_partner(d: RecompDraw) -> str:
    """The other member of a paper item, drawn from nothing (the paper's stream has no partner
    draws): B an operand 30 past the threshold on the other side, C the first number with a third
    first digit that is not the decoy's; A none (the two states)."""
    if d.row == "B_oper":
        return str(d.threshold - MARGIN if paper_member(d) == 0 else d.threshold + MARGIN)
    if d.row == "C_high":
        taken = {first_digit(d.value), first_digit(d.update)}
        return next(str(n) for n in range(*NUMBERS) if first_digit(n) not in taken and str(n) != d.decoy_value)
    return ""


PAPER_ITEMS = 32  # kv_recomp's default --items (per row)


def paper_items(seed: int, n: int, items: int | None = None) -> list[DonorPair]:
    """The first n pairs of `python -m kvmemory.kv_recomp --seed SEED --items M` in the suite's
    layout (item k: row k mod 3, the script's item k // 3 of that row); the script draws every
    item of A_mat, then B_oper, then C_high from one stream."""

    def make(rng: random.Random, row: int, k: int) -> DonorPair:
        d = draw(rng, ROWS[row])
        return build(f"paper-kv_recomp-s{seed}-{ROWS[row]}-{k:05d}", d, paper_partner(d))

    return condition_major(seed, n, len(ROWS), PAPER_ITEMS, items, make)


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    row = ROWS[index % len(ROWS)]
    while True:
        d = draw(rng, row)
        partner = partner_of(rng, d)
        if partner is None:
            continue
        numbers = {int(v) for v in operands(d, partner)} if d.row != "A_mat" else set()
        if not any(number in numbers for _, number in d.fillers):
            return build(item_id, d, partner)


SUITE = SUITES.register("recompute_matrix")(
    Suite(
        "recompute_matrix",
        VERSION,
        default_n=len(ROWS) * 32,
        make_item=make_item,
        contract=False,
        paraphrase=False,
        paper=PaperDraws("kv_recomp", 3700, paper_items),
        summary="which write-time state needs a recompute after an out-of-band update of its dropped source: "
        "materialized / operands-only / high-cardinality x stale, source, note, derived and oracle "
        "deltas appended at query time (kv_recomp)",
    )
)
