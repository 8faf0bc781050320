"""A donor pair tokenized for one model (SPEC 2.2): both members with the position budget applied,
and the identity gate (every served token has the same id and position in both members)."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.render import Renderer
from matbench.errors import MatbenchError
from matbench.protocol.frames import FRAMES
from matbench.protocol.pairs import DonorPair


@dataclass(frozen=True)
class MemberLayout:
    """Token ids and original positions of one member's global prefill (header + all events)."""

    input_ids: tuple[int, ...]
    positions: tuple[int, ...]
    # (start, end) token-index range of the header and of each event in `input_ids`.
    header_span: tuple[int, int]
    event_spans: tuple[tuple[int, int], ...]

    def served_tokens(self, served: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        index = list(range(*self.header_span))
        for i in sorted(served):
            index.extend(range(*self.event_spans[i]))
        return tuple(self.input_ids[j] for j in index), tuple(self.positions[j] for j in index)


@dataclass(frozen=True)
class PairLayout:
    """Both members tokenized with the position budget: every non-source token has the same id
    and position in both, and the events after the source start at `source_start + budget`."""

    pair: DonorPair
    members: tuple[MemberLayout, MemberLayout]
    budget: int  # the source slot's position budget
    length: int  # L: the first position after the trajectory (the native query position)
    prefix_tokens: int  # tokens before the first donor-dependent event, identical in both members

    def check_identity(self) -> None:
        """Identity gate: every arm that does not serve the source serves identical ids and positions."""
        for arm in self.pair.arms:
            if arm.uses_source:
                continue
            a = self.members[0].served_tokens(arm.served)
            b = self.members[1].served_tokens(arm.served)
            if a != b:
                raise MatbenchError(
                    f"identity gate: item {self.pair.item_id}, arm {arm.name} serves different token ids or "
                    "positions in the two donor members"
                )


Pieces = tuple[list[str], list[list[int]]]  # a member's texts (head + header, events) and their ids


def layout_pair(pair: DonorPair, renderer: Renderer) -> PairLayout:
    return layout_pairs([pair], renderer)[0]


def layout_pairs(pairs: list[DonorPair], renderer: Renderer) -> list[PairLayout]:
    """`layout_pair` of each pair; the members' piecewise checks (each a one-shot tokenization of
    the whole member) run as one batch of the tokenizer, on all of its threads."""
    laid = [_layout(pair, renderer) for pair in pairs]
    renderer.check_piecewise_many(
        [pieces for _, members in laid for pieces in members],
        names=[f"item {pair.item_id}, member {'AB'[m]}" for pair in pairs for m in (0, 1)],
    )
    for layout, _ in laid:
        layout.check_identity()
    return [layout for layout, _ in laid]


def _layout(pair: DonorPair, renderer: Renderer) -> tuple[PairLayout, tuple[Pieces, Pieces]]:
    """The pair's layout, and its members' pieces for the piecewise check (neither that check nor
    the identity gate is run yet)."""
    frame = FRAMES[pair.frame]
    header = renderer.header_ids(frame.header)
    texts = [list(pair.member(m).texts()) for m in (0, 1)]
    flat = renderer.many_ids(texts[0] + texts[1])
    ids = [flat[: len(texts[0])], flat[len(texts[0]) :]]
    # Before the pads below: the check is of the texts as tokenized.
    a, b = (([renderer.head + frame.header] + texts[m], [header] + list(ids[m])) for m in (0, 1))
    # Padded slots (kv_parabank2) get real newline tokens appended, after the one-shot check: like
    # the paper, the pad is token ids ("\n" x k need not tokenize to k tokens in one shot).
    newline = renderer.ids("\n")[-1]
    for i, bodies in pair.padded:
        target = max(len(renderer.ids(frame.render_event(i, body))) for body in bodies)
        for m in (0, 1):
            if len(ids[m][i]) > target:
                raise MatbenchError(f"item {pair.item_id}: event {i} is longer than the padding target of its slot")
            ids[m][i] = ids[m][i] + [newline] * (target - len(ids[m][i]))
    # Each donor-dependent slot gets a position budget: the longer member's length; a slot with
    # alternatives gets the longest alternative's length (positions are skipped, no pad tokens).
    budgets = {i: max(len(ids[0][i]), len(ids[1][i])) for i in pair.varying()}
    for i, bodies in pair.slot_alternatives:
        longest = max(len(renderer.ids(frame.render_event(i, body))) for body in bodies)
        budgets[i] = max(budgets.get(i, 0), longest, len(ids[0][i]), len(ids[1][i]))
    layouts, ends = [], []
    for m in (0, 1):
        tokens = list(header)
        positions = list(range(len(header)))
        spans = []
        pos = len(header)
        for i, event_ids in enumerate(ids[m]):
            start = len(tokens)
            tokens.extend(event_ids)
            positions.extend(range(pos, pos + len(event_ids)))
            spans.append((start, len(tokens)))
            pos += budgets.get(i, len(event_ids))
        layouts.append(MemberLayout(tuple(tokens), tuple(positions), (0, len(header)), tuple(spans)))
        ends.append(pos)  # a budgeted last slot reserves its whole budget
    length = ends[0]
    if ends[1] != length:
        raise MatbenchError(f"item {pair.item_id}: members end at different positions despite the budget")
    first = min(pair.varying())
    # Identical members (an unpaired item) share their whole prefill.
    prefix = layouts[0].event_spans[first][0] if pair.paired else len(layouts[0].input_ids)
    return PairLayout(pair, (layouts[0], layouts[1]), budgets[pair.source], length, prefix), (a, b)
