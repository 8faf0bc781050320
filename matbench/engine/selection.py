"""The donor discipline of a serving policy's selection (the engine's, never the policy's).

A policy that scores rows may keep different rows in the two donor members, because rows after
the source can carry the donor: that is itself a measurement (a "selection leak"). The engine
asks the policy on both members, records whether their kept positions differ, and serves both
members the union, by original position: the same positions in both, except inside
donor-dependent events, whose tokens differ in number. Where the union holds a donor-dependent
token the arm sees the donor directly: recorded as `donor_visible`, and its outcome is no
evidence of materialization. Otherwise the served token ids and positions must be identical in
both members (the identity gate, on the selection actually served). A per-layer, per-KV-head
choice (`KeptRows`) is united the same way, head by head: every row any head keeps is gathered,
and each head sees only the rows it (in either member) kept.
"""

from __future__ import annotations

import numpy as np

from matbench.engine.layout import MemberLayout, PairLayout
from matbench.engine.policies.base import KeptRows, ServingPolicy
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


def _checked(policy: ServingPolicy, kept: tuple[int, ...] | KeptRows, member: MemberLayout,
             shape: tuple[int, int]) -> tuple[tuple[int, ...], np.ndarray | None]:
    """The policy's slots and per-head choice ([L, H_kv, len(slots)] bool, or None), checked."""
    slots, heads = (kept.slots, np.asarray(kept.heads, dtype=bool)) if isinstance(kept, KeptRows) else (kept, None)
    header = tuple(range(*member.header_span))
    if (list(slots) != sorted(set(slots)) or not slots or slots[0] < 0 or slots[-1] >= len(member.input_ids)
            or tuple(slots[:len(header)]) != header):
        raise MatbenchError(f"policy {policy.spec!r} returned slots that are not sorted, distinct, within the "
                            "prefill and led by the header's; fix the policy's keep()")
    if heads is not None and (heads.shape != (*shape, len(slots)) or not heads[:, :, :len(header)].all()):
        raise MatbenchError(f"policy {policy.spec!r} returned a per-head choice of shape {heads.shape}, not "
                            f"{(*shape, len(slots))} with the header kept by every head; fix the policy's keep()")
    return tuple(slots), heads


def select(policy: ServingPolicy, pair: DonorPair, layout: PairLayout, caches, arm: Arm, shape: tuple[int, int]
           ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray | None, np.ndarray | None], Selection]:
    """Both members' served slots for `arm` under `policy`, their per-head choice when the policy
    makes one (`shape` = (layers, KV heads)), and what the selection did."""
    members = layout.members
    picks = [_checked(policy, policy.keep(arm, members[m], caches[m]), members[m], shape) for m in (0, 1)]
    positions = [{members[m].positions[s] for s in picks[m][0]} for m in (0, 1)]
    union = positions[0] | positions[1]
    served = tuple(tuple(s for s, p in enumerate(members[m].positions) if p in union) for m in (0, 1))
    heads, heads_differ, share = (None, None), False, None
    if any(h is not None for _, h in picks):
        heads, heads_differ = _union_by_head(picks, served, members, shape)
        share = float(np.mean([h.mean() for h in heads]))
    varying = pair.varying()
    donor_visible = any(members[m].event_spans[i][0] <= s < members[m].event_spans[i][1]
                        for m in (0, 1) for s in served[m] for i in varying)
    if not donor_visible:
        ids = [tuple(members[m].input_ids[s] for s in served[m]) for m in (0, 1)]
        if ids[0] != ids[1]:
            raise GateFailure(f"identity gate: item {pair.item_id}, arm {arm.name}: policy {policy.spec!r} serves "
                              "different token ids at the same positions in the two donor members")
    selection = Selection(len(served[0]), positions[0] != positions[1] or heads_differ, donor_visible, share)
    return served, heads, selection


def _union_by_head(picks, served, members, shape) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
    """Per layer and KV head, the union by position of both members' choices, over each member's
    served slots ([L, H_kv, len(served)] bool each), and whether the members' choices differed."""
    span = max(max(m.positions) for m in members) + 1
    marks = []
    for m, (slots, chosen) in enumerate(picks):
        mark = np.zeros((*shape, span), dtype=bool)
        where = np.asarray([members[m].positions[s] for s in slots])
        mark[:, :, where] = True if chosen is None else chosen
        marks.append(mark)
    both = marks[0] | marks[1]
    heads = tuple(both[:, :, np.asarray([members[m].positions[s] for s in served[m]])] for m in (0, 1))
    return heads, bool((marks[0] != marks[1]).any())
