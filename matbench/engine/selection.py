"""The donor discipline of a serving policy's selection (the engine's, never the policy's).

A policy runs on each prefilled member. A policy that scores rows may keep different rows in the
two donor members, because rows after the source can carry the donor: that is itself a
measurement (a selection leak), recorded per layer as the Jaccard overlap of the two members'
picks outside the donor-dependent events. Materialization is then measured on one kept set
served to both members: member A's picks (`kept_from="a"`) or member B's, by original position:
the same positions in both, except inside donor-dependent events, whose tokens differ in number.
Where the served rows hold a donor-dependent token the arm sees the donor directly: recorded as
`donor_visible`, and its outcome is no evidence of materialization. Under a ratio budget the
members keep int(T x (1 - r)) rows of their own T, which the donor values' token lengths change:
`members_differ_matched` repeats the leak test with member B held to member A's count, so what
remains is the content's, not the count's. Otherwise the served token
ids and positions must be identical in both members (the identity gate, on the selection
actually served). A per-layer, per-KV-head choice (`KeptRows`) is replayed the same way, head by
head.

Two modes (`source`): `natural`, the policy decides and `source_kept` records whether each
member's pick kept any source row; `evicted`, the rows of every donor-dependent event are banned
(the policy spends its budget on the rest), so every served set is donor-free.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

from matbench.engine.layout import MemberLayout, PairLayout
from matbench.engine.policies.base import KeptRows, SelectionContext, ServingPolicy
from matbench.engine.policies.budget import Budget
from matbench.engine.policies.setting import KEPT_FROM, SOURCE_MODES
from matbench.errors import GateFailure, MatbenchError
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.records import Selection


def governed(pair: DonorPair, arm: Arm) -> bool:
    """Arms whose rows a policy chooses: those that measure materialization from the joint
    prefill. Donor-visible arms (comprehension, upper bounds), arms over another encoding or with
    rows swapped across members, and before-source controls keep the rows the suite declares:
    they calibrate the measurement rather than make it."""
    if arm.uses_source or arm.encoding != "joint" or arm.swapped:
        return False
    return not all(i < min(pair.varying()) for i in arm.served)


def _checked(
    policy: ServingPolicy, kept: tuple[int, ...] | KeptRows, member: MemberLayout, shape: tuple[int, int]
) -> tuple[tuple[int, ...], np.ndarray | None]:
    """The policy's slots and per-head choice ([L, H_kv, len(slots)] bool, or None), checked."""
    slots, heads = (kept.slots, np.asarray(kept.heads, dtype=bool)) if isinstance(kept, KeptRows) else (kept, None)
    header = tuple(range(*member.header_span))
    if (
        list(slots) != sorted(set(slots))
        or not slots
        or slots[0] < 0
        or slots[-1] >= len(member.input_ids)
        or tuple(slots[: len(header)]) != header
    ):
        raise MatbenchError(
            f"policy {policy.spec!r} returned slots that are not sorted, distinct, within the "
            "prefill and led by the header's; fix the policy's keep()"
        )
    if heads is not None and (heads.shape != (*shape, len(slots)) or not heads[:, :, : len(header)].all()):
        raise MatbenchError(
            f"policy {policy.spec!r} returned a per-head choice of shape {heads.shape}, not "
            f"{(*shape, len(slots))} with the header kept by every head; fix the policy's keep()"
        )
    return tuple(slots), heads


def donor_slots(pair: DonorPair, member: MemberLayout) -> frozenset[int]:
    """The member's slots inside donor-dependent events (the source included)."""
    return frozenset(s for i in pair.varying() for s in range(*member.event_spans[i]))


def select(
    policy: ServingPolicy,
    pair: DonorPair,
    layout: PairLayout,
    caches,
    arm: Arm,
    shape: tuple[int, int],
    *,
    runner=None,
    source: str = "natural",
    kept_from: str = "a",
    memo: dict | None = None,
    question: tuple[int, ...] = (),
) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray | None, np.ndarray | None], Selection]:
    """Both members' served slots for `arm` under `policy`, their per-head choice when the policy
    makes one (`shape` = (layers, KV heads)), and what the selection did. `memo` is shared by the
    arms of one pair (a question-agnostic policy scores each member once); `question`, the arm's
    question ids, which only a question-aware policy reads."""
    if source not in SOURCE_MODES or kept_from not in KEPT_FROM:
        raise MatbenchError(
            f"source mode {source!r} / kept-from {kept_from!r}: use {' or '.join(SOURCE_MODES)} / "
            f"{' or '.join(KEPT_FROM)}"
        )
    members = layout.members
    donor = [donor_slots(pair, m) for m in members]
    memo = {} if memo is None else memo
    contexts = [
        SelectionContext(runner, donor[m] if source == "evicted" else frozenset(), memo, question) for m in (0, 1)
    ]
    picks = [_checked(policy, policy.keep(arm, members[m], caches[m], contexts[m]), members[m], shape) for m in (0, 1)]
    span = max(max(m.positions) for m in members) + 1
    marks = [_marks(picks[m], members[m], shape, span) for m in (0, 1)]
    outside = np.ones(marks[0].shape[-1], dtype=bool)
    for m in (0, 1):
        outside[[members[m].positions[s] for s in donor[m]]] = False
    leaked = bool((marks[0][:, :, outside] != marks[1][:, :, outside]).any())
    overlap = _jaccard(marks[0][:, :, outside], marks[1][:, :, outside])
    matched = (
        _count_matched_leak(policy, arm, members, caches, contexts, shape, span, marks, outside) if leaked else False
    )
    r = KEPT_FROM.index(kept_from)
    chosen = {members[r].positions[s] for s in picks[r][0]}
    served_a, served_b = (tuple(s for s, p in enumerate(members[m].positions) if p in chosen) for m in (0, 1))
    served = (served_a, served_b)
    heads: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
    share = None
    if picks[r][1] is not None:
        head_a, head_b = (marks[r][:, :, [members[m].positions[s] for s in served[m]]] for m in (0, 1))
        heads = (head_a, head_b)
        share = float(np.mean([head_a.mean(), head_b.mean()]))
    donor_visible = any(s in donor[m] for m in (0, 1) for s in served[m])
    if not donor_visible:
        ids = [tuple(members[m].input_ids[s] for s in served[m]) for m in (0, 1)]
        if ids[0] != ids[1]:
            raise GateFailure(
                f"identity gate: item {pair.item_id}, arm {arm.name}: policy {policy.spec!r} serves "
                "different token ids at the same positions in the two donor members"
            )
    row_bytes = [2 * k.shape[-1] * k.element_size() for k in caches[0].keys]  # K and V of one (layer, head, row)
    per_layer = heads[0].sum(axis=(1, 2)) if heads[0] is not None else [len(served[0]) * shape[1]] * shape[0]
    selection = Selection(
        len(served[0]),
        leaked,
        donor_visible,
        share,
        overlap=overlap,
        source_kept=(any(s in donor[0] for s in picks[0][0]), any(s in donor[1] for s in picks[1][0])),
        kept=ranges([members[0].positions[s] for s in served[0]]),
        held_rows=int(sum(per_layer)),
        heads=_pack(heads[0]) if heads[0] is not None else None,
        picked=(len(picks[0][0]), len(picks[1][0])),
        members_differ_matched=matched,
        # The served cache holds every row any head keeps, in every head (a head's dropped rows are
        # masked, not freed), plus the per-head mask; a ragged per-head cache would need only its own.
        served_bytes=len(served[0]) * shape[1] * sum(row_bytes) + (heads[0].size if heads[0] is not None else 0),
        needed_bytes=int(sum(int(n) * b for n, b in zip(per_layer, row_bytes))),
    )
    return served, heads, selection


def _count_matched_leak(
    policy: ServingPolicy,
    arm: Arm,
    members,
    caches,
    contexts,
    shape,
    span: int,
    marks: list[np.ndarray],
    outside: np.ndarray,
) -> bool:
    """Whether the members' picks still differ outside the donor events when member B keeps as
    many rows as member A. A ratio budget keeps int(T x (1 - r)) rows of a member's T, and donor
    values of different token lengths change that count: the picks of even a position-only policy
    then differ through the count alone. Here B is picked again with A's count as a token budget."""
    budget = getattr(policy, "budget", None)
    if not policy.budgeted or budget is None or budget.ratio is None:
        return True
    count = budget.n_kept(len(members[0].input_ids))
    if count == budget.n_kept(len(members[1].input_ids)):
        return True
    twin = policy.with_budget(Budget(tokens=count))
    again = _checked(twin, twin.keep(arm, members[1], caches[1], contexts[1]), members[1], shape)
    return bool((marks[0][:, :, outside] != _marks(again, members[1], shape, span)[:, :, outside]).any())


def _marks(pick: tuple[tuple[int, ...], np.ndarray | None], member: MemberLayout, shape, span: int) -> np.ndarray:
    """`[L, H_kv, span]` bool: which (layer, head, original position) the member's pick keeps."""
    slots, chosen = pick
    mark = np.zeros((*shape, span), dtype=bool)
    mark[:, :, [member.positions[s] for s in slots]] = True if chosen is None else chosen
    return mark


def _jaccard(a: np.ndarray, b: np.ndarray) -> tuple[float, ...]:
    """Per layer, |a & b| / |a | b| over (head, position); 1.0 where both are empty."""
    inter = (a & b).reshape(a.shape[0], -1).sum(1)
    union = (a | b).reshape(a.shape[0], -1).sum(1)
    return tuple(round(float(i / u), 6) if u else 1.0 for i, u in zip(inter, union))


def ranges(positions: list[int]) -> str:
    """Sorted positions as `0-14,20,22-30`."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive positions
    for p in positions:
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ",".join(f"{first}-{last}" if last != first else f"{first}" for first, last in runs)


def _pack(heads: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(np.packbits(heads.astype(bool).ravel()).tobytes(), 9)).decode()


def unpack_heads(text: str, shape: tuple[int, int, int]) -> np.ndarray:
    """The `[L, H_kv, kept_tokens]` bool array `Selection.heads` encodes."""
    bits = np.unpackbits(np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=np.uint8))
    return bits[: int(np.prod(shape))].reshape(shape).astype(bool)
