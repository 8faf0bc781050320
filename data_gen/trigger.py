"""Trigger suite (SPEC 3.2; the paper's kv_parabank.py bank, length-controlled as kv_parabank2.py):
which surface constructions of a carrier event write the dropped source's state into its rows?

A group of 16 items is one draw of the paper's item: a mirror skeleton and a flag skeleton, each
asked with the eight constructions of its family (BANK_MIRROR / BANK_FLAG, verbatim):

  mirror  decoy@0 "register D completed a routine self-test"; source@m "register S set to state
          {v}", m in [8, 16), dropped; carrier@23 "register T <construction> register S"; ask T.
  flag    decoy@0 "register D2 completed a routine self-test"; operand@m2 "sensor S2 measured
          {gv}; the alert threshold is {thr}", m2 in [8, 14), and verdict@m2+1 "alert check result
          for sensor S2: threshold {V}", both dropped; carrier@23 a flag-writing construction;
          ask "Was sensor S2 above the alert threshold?" (EXCEEDED / NORMAL).

D, S, T and D2, S2 are drawn from the paper's register list, as the paper draws them (the sensor is
a register name). gv and thr are the paper's draws (both in [100, 999), |gv - thr| >= 30); the
other donor member's reading lies on the other side of the same thr, also >= 30 away, so member A
(EXCEEDED) and member B (NORMAL) share every served token.

Arms per construction (kv_parabank.run2): kv serves {decoy, carrier} (write-through) and txt every
event (comprehension, the source visible); matbench adds control (events before the source).
Readout of the paper: trace (" Answer {menu}." + " Locate the relevant statement, ...", 160
tokens, last word): the suite's trace instruction is the default RELEVANT_TRACE.

Length control (kv_parabank2): the carrier is padded with real newline tokens up to the longest
construction of its family, per tokenizer at layout time (`DonorPair.padded`), so the 8
constructions of a family serve rows of one length. matbench goes further, so that all 16 items of
a group ask at ONE position under compact and native serving: the two skeletons share one filler
background (kv_parabank2's docstring says "drawn ONCE per item and shared by all 16
constructions"; its code draws one per family), the slots where the families differ (decoy, source,
operand, verdict) and the carrier slot get position budgets over both families (skipped positions,
no tokens), and kv and txt ask at L (`query_at_end`): the carrier starts at the same position in
all 16 and the query sits at L in both serving modes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from matbench.data_gen.base import N_EVENTS, REGISTER_POOL, STATES, SUITES, PaperDraws, Suite, filler_body
from matbench.protocol.pairs import Arm, DonorPair

# 2: the paper's flag bank and keys (kept_eq, synced), flag upstream and draws, the paper's source
#    slot ranges, carriers padded with newline tokens (DonorPair.padded), kv and txt ask at L.
VERSION = "2"
DECOY_AT, CARRIER_AT = 0, N_EVENTS - 1
MIRROR_RANGE, FLAG_RANGE = (8, 16), (8, 14)  # m, m2 (kv_parabank.main)
VALUE_RANGE, MARGIN = (100, 999), 30  # gv and thr: randrange(100, 999), |gv - thr| >= 30
# kv_parabank.py BANK_MIRROR / BANK_FLAG, verbatim (keys included).
BANK_MIRROR = (
    ("mirrors", "register {a} mirrors register {b}"),
    ("tracks", "register {a} tracks register {b}"),
    ("copies", "register {a} copies register {b}"),
    ("matches", "register {a} matches register {b}"),
    ("follows", "register {a} follows register {b}"),
    ("shadows", "register {a} shadows register {b}"),
    ("kept_eq", "register {a} is kept equal to register {b}"),
    ("synced", "register {a} is synchronized with register {b}"),
)
BANK_FLAG = (
    ("accord", "the alert status flag for sensor {r} was set according to the check result"),
    ("inline", "the alarm flag for {r} was updated in line with the check outcome"),
    ("reflect", "the alert flag for sensor {r} was set to reflect the check result"),
    ("record", "the alert flag for sensor {r} now records the outcome of the check"),
    ("assign", "sensor {r}'s alert flag was assigned based on the threshold comparison"),
    ("write", "the alert flag for sensor {r} was written from the check verdict"),
    ("consist", "the alert flag for sensor {r} was made consistent with the check result"),
    ("update", "following the check, the alert flag for sensor {r} was updated accordingly"),
)
BANKS = {"mirror": dict(BANK_MIRROR), "flag": dict(BANK_FLAG)}
FAMILIES = ("mirror", "flag")
CONSTRUCTIONS = tuple((f, k) for f in FAMILIES for k in BANKS[f])
VERDICTS = ("EXCEEDED", "NORMAL")  # member A's verdict (gv above thr), member B's
DECOY = "register {D} completed a routine self-test"
SOURCE = "register {S} set to state {v}"
OPERAND = "sensor {S} measured {gv}; the alert threshold is {thr}"
VERDICT = "alert check result for sensor {S}: threshold {V}"
# kv_parabank.main's qm and qf without their readout suffix (" Answer ONLINE or OFFLINE." + TRACE
# is the trace readout's; matbench.protocol.readouts).
QUESTIONS = {"mirror": "What state is register {T} in?", "flag": "Was sensor {S} above the alert threshold?"}


@dataclass(frozen=True)
class MirrorDraw:
    """The mirror skeleton: decoy, source and target register names, the source slot m and the 24
    filler bodies (those of slots 0, m and 23 are unused)."""

    decoy: str
    source_reg: str
    target: str
    source: int
    fillers: tuple[str, ...]


@dataclass(frozen=True)
class FlagDraw:
    """The flag skeleton: decoy and sensor names, the threshold, member A's reading (above it)
    and member B's (below it), the operand slot m2 (the verdict sits at m2 + 1) and the fillers."""

    decoy: str
    sensor: str
    threshold: int
    high: int
    low: int
    source: int
    fillers: tuple[str, ...]


@dataclass(frozen=True)
class TriggerDraw:
    """Every random choice of one group of 16 items. `make_item` gives both skeletons one filler
    background; the paper draws one per family, which a draw may also hold (the parity test)."""

    mirror: MirrorDraw
    flag: FlagDraw


def readings(rng: random.Random) -> tuple[int, int, int]:
    """(thr, high, low): kv_parabank's gv and thr (gv = randrange(100, 999), thr redrawn until
    |gv - thr| >= 30), then the other member's reading on the other side of thr, >= 30 away, in
    [100, 999); a draw whose other side is empty is drawn again."""
    lo, hi = VALUE_RANGE
    while True:
        gv = rng.randrange(lo, hi)
        thr = rng.randrange(lo, hi)
        while abs(gv - thr) < MARGIN:
            thr = rng.randrange(lo, hi)
        if gv > thr and thr - MARGIN >= lo:
            return thr, gv, rng.randrange(lo, thr - MARGIN + 1)
        if gv < thr and thr + MARGIN < hi:
            return thr, rng.randrange(thr + MARGIN, hi), gv


def draw(rng: random.Random) -> TriggerDraw:
    """kv_parabank2's draws in its order (mirror: D, S, T, m; flag: D2, S2, gv, thr, m2), then one
    filler background for both skeletons, naming none of the five names and neither reading."""
    decoy, source_reg, target = rng.sample(REGISTER_POOL, 3)
    m = rng.randrange(*MIRROR_RANGE)
    decoy2, sensor = rng.sample(REGISTER_POOL, 2)
    threshold, high, low = readings(rng)
    m2 = rng.randrange(*FLAG_RANGE)
    own = tuple(dict.fromkeys((decoy, source_reg, target, decoy2, sensor)))
    fillers = tuple(filler_body(rng, own, avoid=frozenset({high, low})) for _ in range(N_EVENTS))
    return TriggerDraw(
        MirrorDraw(decoy, source_reg, target, m, fillers), FlagDraw(decoy2, sensor, threshold, high, low, m2, fillers)
    )


def carriers(d: TriggerDraw, family: str) -> dict[str, str]:
    """The eight carrier bodies of `family` for draw `d`, by construction key."""
    if family == "mirror":
        return {k: t.format(a=d.mirror.target, b=d.mirror.source_reg) for k, t in BANK_MIRROR}
    return {k: t.format(r=d.flag.sensor) for k, t in BANK_FLAG}


def member_bodies(d: TriggerDraw, family: str, member: int) -> list[str]:
    """Every event body of `family`'s skeleton in donor member `member` (0: ONLINE / EXCEEDED),
    the carrier slot excepted (it holds the construction)."""
    if family == "mirror":
        m = d.mirror
        events = list(m.fillers)
        events[DECOY_AT] = DECOY.format(D=m.decoy)
        events[m.source] = SOURCE.format(S=m.source_reg, v=STATES[member])
    else:
        f = d.flag
        events = list(f.fillers)
        events[DECOY_AT] = DECOY.format(D=f.decoy)
        events[f.source] = OPERAND.format(S=f.sensor, gv=(f.high, f.low)[member], thr=f.threshold)
        events[f.source + 1] = VERDICT.format(S=f.sensor, V=VERDICTS[member])
    events[CARRIER_AT] = ""
    return events


def alignment(d: TriggerDraw) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Slot alternatives that put all 16 items of the group on one geometry: every slot whose body
    differs between the families (or the members) budgets the longest of its bodies, and the
    carrier slot the longest of the 16 constructions."""
    lists = [member_bodies(d, f, m) for f in FAMILIES for m in (0, 1)]
    out = []
    for i in range(CARRIER_AT):
        bodies = tuple(dict.fromkeys(events[i] for events in lists))
        if len(bodies) > 1:
            out.append((i, bodies))
    out.append((CARRIER_AT, tuple(b for f in FAMILIES for b in carriers(d, f).values())))
    return tuple(out)


def build(d: TriggerDraw, item_id: str, family: str, key: str) -> DonorPair:
    """The donor pair of draw `d` asked with construction `key` of `family`."""
    a, b = member_bodies(d, family, 0), member_bodies(d, family, 1)
    bank = carriers(d, family)
    events = list(a)
    events[CARRIER_AT] = bank[key]
    if family == "mirror":
        m = d.mirror
        source, registers = m.source, (m.decoy, m.source_reg, m.target)
        events[source] = "<donor>"
        donor_events, values = (), STATES
        question = QUESTIONS["mirror"].format(T=m.target)
        leaks = (rf"\bregister {m.source_reg} set to\b",)
    else:
        f = d.flag
        source, registers = f.source, (f.decoy, f.sensor)
        events[source], events[source + 1] = "<operand>", "<verdict>"
        donor_events, values = ((source + 1, a[source + 1], b[source + 1]),), VERDICTS
        question = QUESTIONS["flag"].format(S=f.sensor)
        leaks = (rf"\bsensor {f.sensor} measured\b", rf"\balert check result for sensor {f.sensor}\b")
    arms = (
        Arm("kv", (DECOY_AT, CARRIER_AT), question, query_at_end=True),
        Arm("txt", tuple(range(N_EVENTS)), question, uses_source=True, query_at_end=True),
        Arm("control", tuple(range(source)), question),
    )
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=source,
        source_bodies=(a[source], b[source]),
        values=values,
        menu=values,
        arms=arms,
        leak_patterns=leaks,
        registers=registers,
        decoys=(DECOY_AT,),
        donor_events=donor_events,
        variant=f"{family}/{key}",
        slot_alternatives=alignment(d),
        padded=((CARRIER_AT, tuple(bank.values())),),
    )


def partner_readings(gv: int, thr: int) -> tuple[int, int]:
    """(high, low) for a paper item whose one reading is gv: the other donor member's reading sits
    on the other side of thr, 30 away, within [100, 998] (the paper renders its own member only)."""
    lo, hi = VALUE_RANGE
    return (gv, max(lo, thr - MARGIN)) if gv > thr else (min(hi - 1, thr + MARGIN), gv)


def _paper_fillers(rng: random.Random, taken: tuple[str, ...], special: set[int]) -> tuple[str, ...]:
    """kv_parabank.build's fillers: one per slot outside `special`, in slot order (the special
    slots' bodies are the skeleton's, written by `member_bodies`)."""
    return tuple("" if i in special else filler_body(rng, taken) for i in range(N_EVENTS))


def paper_draw(rng: random.Random) -> TriggerDraw:
    """kv_parabank2.py's draws for one item in its order: the mirror skeleton (D, S, T, its gold,
    m, its fillers), then the flag skeleton (D2, S2, gv, thr redrawn until 30 away, m2, its
    fillers); one filler background per family, as its code draws them."""
    decoy, source_reg, target = rng.sample(REGISTER_POOL, 3)
    rng.choice(STATES)  # the paper's gold: a donor pair holds both values
    m = rng.randrange(*MIRROR_RANGE)
    mirror = MirrorDraw(
        decoy, source_reg, target, m, _paper_fillers(rng, (decoy, source_reg, target), {DECOY_AT, m, CARRIER_AT})
    )
    decoy2, sensor = rng.sample(REGISTER_POOL, 2)
    gv = rng.randrange(*VALUE_RANGE)
    thr = rng.randrange(*VALUE_RANGE)
    while abs(gv - thr) < MARGIN:
        thr = rng.randrange(*VALUE_RANGE)
    m2 = rng.randrange(*FLAG_RANGE)
    fillers = _paper_fillers(rng, (decoy2, sensor), {DECOY_AT, m2, m2 + 1, CARRIER_AT})
    return TriggerDraw(mirror, FlagDraw(decoy2, sensor, thr, *partner_readings(gv, thr), m2, fillers))


def paper_items(seed: int, n: int) -> list[DonorPair]:
    """The first n pairs of `python -m kvmemory.kv_parabank2 --seed SEED`: per item its 16
    constructions, mirror then flag, in the bank's order."""
    rng = random.Random(seed)
    pairs: list[DonorPair] = []
    for k in range((n + len(CONSTRUCTIONS) - 1) // len(CONSTRUCTIONS)):
        d = paper_draw(rng)
        pairs += [build(d, f"paper-kv_parabank2-s{seed}-{k:05d}-{f}-{key}", f, key) for f, key in CONSTRUCTIONS]
    return pairs[:n]


def make_item(rng: random.Random, item_id: str, index: int) -> DonorPair:
    # The 16 items of a group share the rng state, hence every draw; the index picks the construction.
    return build(draw(rng), item_id, *CONSTRUCTIONS[index % len(CONSTRUCTIONS)])


SUITE = SUITES.register("trigger")(
    Suite(
        "trigger",
        VERSION,
        default_n=16 * 24,
        make_item=make_item,
        group_size=len(CONSTRUCTIONS),
        paraphrase=False,
        summary=(
            "which of the paper's 16 carrier constructions write the dropped state through (kv_parabank, kv_parabank2)"
        ),
        paper=PaperDraws("kv_parabank2", 8000, paper_items),
    )
)
