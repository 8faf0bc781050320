"""Donor pairs (SPEC 1, 2.2): two renderings of one item that differ only in the dropped source.

`DonorPair` is what a suite row becomes, with the structural and leak checks of a row;
`matbench.engine.layout.PairLayout` is its tokenization for one model, with the position budget
and the identity check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from matbench.errors import MatbenchError
from matbench.protocol.frames import FRAMES
from matbench.protocol.readouts import RELEVANT_TRACE

ENCODINGS = ("joint", "isolated", "headless", "headless_runs", "anchored", "text")
# How kept rows are laid out for the query (SPEC 2.3; matbench.engine.serving implements them).
ServingMode = Literal["compact", "native"]
SERVING_MODES: tuple[ServingMode, ...] = get_args(ServingMode)
# What two pairs that share one global prefill have in common: frame, both members' events, the
# source where the members differ (the second member branches there), slot alternatives and
# padded slots (`DonorPair.prefill_key`).
PrefillKey = tuple[
    str,
    tuple[str, ...],
    tuple[str, ...],
    int,
    tuple[tuple[int, tuple[str, ...]], ...],
    tuple[tuple[int, tuple[str, ...]], ...],
]


@dataclass(frozen=True)
class Trajectory:
    """One member's events e_1..e_n (observation bodies), rendered after the always-served header."""

    events: tuple[str, ...]
    frame: str = "trajectory"

    def texts(self) -> tuple[str, ...]:
        render = FRAMES[self.frame].render_event
        return tuple(render(i, body) for i, body in enumerate(self.events))


@dataclass(frozen=True)
class Arm:
    """One serving condition: which events keep their rows, and what is asked.

    `served` are event indices; the header is always served. `uses_source` is True only for
    donor-visible arms, which serve the source or another donor-dependent event (comprehension,
    upper bounds) and therefore differ across members. `query_at_end` puts the query at L (after
    the whole trajectory) in compact serving too: the fixed-query-position variant. `appended`
    are event bodies appended at query time, after the served rows and before the question (a
    served patch); `expected` is the answer the arm should give in both members when that is not
    the donor value (e.g. the patch's value).

    `encoding` says where the served rows come from: "joint" (the global prefill: the only rows
    that can carry materialized state), "isolated" (each served event encoded alone after the
    header at its original positions: the isolation control) or "text" (the header and the
    served events re-prefilled as plain text at contiguous positions: what a text-RAG system
    would see) or "headless" (each served event encoded with nothing before it, not even the
    header, at its original positions: the paper's harvest `iso` and kv_phantom's `nohead`) or
    "headless_runs" (the same, but each run of consecutive served events encoded together:
    kv_harvest3's `iso`, whose window dose serves neighbouring turns) or
    "anchored" (each served event encoded after the header and the trajectory's first 1024 tokens
    before it, at its original positions: kv_vartrack's `anch`). `menu` and `values` override the
    pair's menu and donor values for arms that ask a different question of the same served cache
    (e.g. the first digit of a number); `open_question` arms carry their own answer
    instruction, so no readout appends the menu.
    `swapped` are served events whose rows each member takes from the *other* member's prefill
    (their text is the same in both): the root x downstream factorial serves member A's root
    with member B's downstream rows, so an answer that follows the root donor there shows the
    downstream rows are not what carries it. `trace` overrides the pair's trace instruction for
    this arm (the paper's depth-3 runs ask "Trace the mirror chain ..."). `budget` is the number
    of greedy tokens this arm's answer gets under a generating readout where the paper set one
    for its question (8 for recognition, 12 for exact digits); 0 = the readout's.
    """

    name: str
    served: tuple[int, ...]
    question: str
    uses_source: bool = False
    query_at_end: bool = False
    appended: tuple[str, ...] = ()
    expected: str | None = None
    encoding: str = "joint"
    menu: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    open_question: bool = False
    swapped: tuple[int, ...] = ()
    trace: str = ""
    budget: int = 0


@dataclass(frozen=True)
class DonorPair:
    """Both members of one item. `events` holds the shared bodies; the body at `source` is
    replaced by `source_bodies[0]` in member A and `source_bodies[1]` in member B, whose donor
    values are `values[0]` and `values[1]`."""

    item_id: str
    events: tuple[str, ...]
    source: int
    source_bodies: tuple[str, str]
    values: tuple[str, str]
    menu: tuple[str, ...]
    arms: tuple[Arm, ...]
    # Regular expressions no served event may match (whole statements that would write the source).
    leak_patterns: tuple[str, ...] = ()
    # Register names of the item: a menu word preceded by one of them is an echo, not an answer.
    registers: tuple[str, ...] = ()
    # Events drawn independently of the donor (decoys): they may name a menu value.
    decoys: tuple[int, ...] = ()
    # Further donor-dependent events (index, body A, body B), e.g. an explicit-verdict carrier:
    # only donor-visible arms may serve them.
    donor_events: tuple[tuple[int, str, str], ...] = ()
    # Sub-condition of the item within its suite (e.g. "nld/1": carrier kind and template).
    variant: str = ""
    # (event index, alternative bodies): the slot's position budget covers the longest of them, so
    # every alternative (e.g. each construction of a bank) leaves later positions unchanged.
    slot_alternatives: tuple[tuple[int, tuple[str, ...]], ...] = ()
    # False for a single-condition item (both members identical, e.g. a natural dialog QA whose
    # evidence turns are the "source"): accuracy only, no donor classes.
    paired: bool = True
    frame: str = "trajectory"  # rendering of the header and events (matbench.render.FRAMES)
    # The trace readout's instruction after the menu (SPEC 2.5): the paper's wording per suite.
    trace: str = RELEVANT_TRACE
    # (event index, bodies): the event is padded with newline tokens up to the token length of the
    # longest of `bodies` at that slot (kv_parabank2's carrier padding). The padding belongs to the
    # event's rows, so an arm that serves the event serves it; the slot's budget covers it.
    padded: tuple[tuple[int, tuple[str, ...]], ...] = ()

    def arm_menu(self, arm: Arm) -> tuple[str, ...]:
        return arm.menu or self.menu

    def arm_values(self, arm: Arm) -> tuple[str, str]:
        return arm.values or self.values  # type: ignore[return-value]

    def arm_trace(self, arm: Arm) -> str:
        return arm.trace or self.trace

    def prefill_key(self) -> PrefillKey:
        """Equal for pairs whose two members render to the same texts (and, where the members
        differ, branch at the same source), and so share one global prefill: items asking
        different questions of one long dialog, whichever turns each calls its source."""
        a, b = self.member(0).events, self.member(1).events
        return (self.frame, a, b, self.source if a != b else -1, self.slot_alternatives, self.padded)

    def varying(self) -> dict[int, tuple[str, str]]:
        """Every donor-dependent event: index -> (body in A, body in B); the source included."""
        out = {self.source: (self.source_bodies[0], self.source_bodies[1])}
        out.update({i: (a, b) for i, a, b in self.donor_events})
        return out

    def member(self, member: int) -> Trajectory:
        """Member A (0) or B (1): the shared events with that member's donor-dependent bodies."""
        events = list(self.events)
        for i, bodies in self.varying().items():
            events[i] = bodies[member]
        return Trajectory(tuple(events), self.frame)

    def arm(self, name: str) -> Arm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise MatbenchError(f"item {self.item_id} has no arm {name!r}; it has {[a.name for a in self.arms]}")

    def validate(self) -> None:
        """Structural checks of a suite row, each a one-line error."""
        where = f"item {self.item_id}"
        if not 0 <= self.source < len(self.events):
            raise MatbenchError(f"{where}: source index {self.source} outside the {len(self.events)} events")
        if self.frame not in FRAMES:
            raise MatbenchError(f"{where}: unknown frame {self.frame!r}; choose from {sorted(FRAMES)}")
        if self.paired and self.values[0] == self.values[1]:
            raise MatbenchError(f"{where}: both donor values are {self.values[0]!r}; a donor pair needs two")
        if not self.paired and (
            self.values[0] != self.values[1]
            or self.source_bodies[0] != self.source_bodies[1]
            or any(a != b for _, a, b in self.donor_events)
        ):
            raise MatbenchError(f"{where}: an unpaired item must have identical members")
        if not set(self.values) <= set(self.menu):
            raise MatbenchError(f"{where}: donor values {self.values} are not all in the menu {self.menu}")
        varying = self.varying()
        if any(not 0 <= i < len(self.events) or i == self.source for i, _, _ in self.donor_events):
            raise MatbenchError(f"{where}: donor_events must name existing events other than the source")
        if any(not 0 <= i < len(self.events) or not bodies for i, bodies in self.padded):
            raise MatbenchError(f"{where}: padded slots must name existing events and at least one body")
        for arm in self.arms:
            if arm.budget < 0:
                raise MatbenchError(f"{where}, arm {arm.name}: a token budget cannot be negative ({arm.budget})")
            bad = [i for i in arm.served if not 0 <= i < len(self.events)]
            if bad:
                raise MatbenchError(f"{where}, arm {arm.name}: served events {bad} do not exist")
            menu, values = self.arm_menu(arm), self.arm_values(arm)
            if arm.expected is not None and arm.expected not in menu:
                raise MatbenchError(f"{where}, arm {arm.name}: expected answer {arm.expected!r} is not in the menu")
            if arm.encoding not in ENCODINGS:
                raise MatbenchError(
                    f"{where}, arm {arm.name}: unknown encoding {arm.encoding!r}; choose from {ENCODINGS}"
                )
            if len(values) != 2 or not set(values) <= set(menu) or (self.paired and values[0] == values[1]):
                raise MatbenchError(f"{where}, arm {arm.name}: donor values {values} must be two menu words of {menu}")
            if not set(arm.swapped) <= set(arm.served) - set(varying) or (arm.swapped and arm.encoding != "joint"):
                raise MatbenchError(
                    f"{where}, arm {arm.name}: swapped events must be served, donor-independent events of a joint arm"
                )
            if len(set(menu)) != len(menu) or not menu:
                raise MatbenchError(f"{where}, arm {arm.name}: the menu {menu} must be non-empty without repeats")
            if self.paired and len(menu) < 2:
                raise MatbenchError(
                    f"{where}, arm {arm.name}: a donor pair's menu needs two words at least; a "
                    "one-word menu (a free answer's gold) is for unpaired items"
                )
            visible = bool(set(arm.served) & set(varying))
            if visible != arm.uses_source:
                state = "serves" if visible else "does not serve"
                raise MatbenchError(
                    f"{where}, arm {arm.name}: {state} the source or a donor-dependent event, contrary to uses_source"
                )
            for i in arm.served:
                if i in varying:
                    continue
                for pattern in self.leak_patterns:
                    if re.search(pattern, self.events[i], flags=re.IGNORECASE):
                        raise MatbenchError(
                            f"{where}, arm {arm.name}: served event {i} leaks the source ({self.events[i]!r})"
                        )


def prefill_order(pairs: list[DonorPair], by_context: bool = False) -> list[DonorPair]:
    """`pairs` with those of one prefill (`prefill_key`) together, each group where its first pair
    stands. `by_context`: first the pairs that open with the same event together (the questions
    of one dialog, the items of one construction), for an engine that starts a member from the
    rows of the one before (`matbench.engine.prefixes` keeps only the last pair's rows, so
    adjacency is what makes them shared)."""
    contexts: dict[tuple[str, tuple[str, ...]], int] = {}
    keys: dict[PrefillKey, int] = {}

    def order(p: DonorPair) -> tuple[int, int]:
        context = contexts.setdefault((p.frame, p.events[:1]), len(contexts)) if by_context else 0
        return context, keys.setdefault(p.prefill_key(), len(keys))

    return sorted(pairs, key=order)
