"""The donor discipline of a serving policy's selection (the engine's, never the policy's).

A policy that scores rows may keep different rows in the two donor members, because rows after
the source can carry the donor: that is itself a measurement (a "selection leak"). The engine
asks the policy on both members, records whether their kept positions differ, and serves both
members the union, by original position: the same positions in both, except inside
donor-dependent events, whose tokens differ in number. Where the union holds a donor-dependent
token the arm sees the donor directly: recorded as `donor_visible`, and its outcome is no
evidence of materialization. Otherwise the served token ids and positions must be identical in
both members (the identity gate, on the selection actually served).
"""

from __future__ import annotations

from matbench.engine.layout import MemberLayout, PairLayout
from matbench.engine.policies.base import ServingPolicy
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


def _checked(policy: ServingPolicy, slots: tuple[int, ...], member: MemberLayout) -> tuple[int, ...]:
    header = tuple(range(*member.header_span))
    if (list(slots) != sorted(set(slots)) or not slots or slots[0] < 0 or slots[-1] >= len(member.input_ids)
            or slots[:len(header)] != header):
        raise MatbenchError(f"policy {policy.spec!r} returned slots that are not sorted, distinct, within the "
                            "prefill and led by the header's; fix the policy's keep()")
    return slots


def select(policy: ServingPolicy, pair: DonorPair, layout: PairLayout, caches, arm: Arm
           ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], Selection]:
    """Both members' served slots for `arm` under `policy`, and what the selection did."""
    picks = [_checked(policy, policy.keep(arm, layout.members[m], caches[m]), layout.members[m]) for m in (0, 1)]
    positions = [{layout.members[m].positions[s] for s in picks[m]} for m in (0, 1)]
    union = positions[0] | positions[1]
    served = tuple(tuple(s for s, p in enumerate(layout.members[m].positions) if p in union) for m in (0, 1))
    varying = pair.varying()
    donor_visible = any(layout.members[m].event_spans[i][0] <= s < layout.members[m].event_spans[i][1]
                        for m in (0, 1) for s in served[m] for i in varying)
    if not donor_visible:
        ids = [tuple(layout.members[m].input_ids[s] for s in served[m]) for m in (0, 1)]
        if ids[0] != ids[1]:
            raise GateFailure(f"identity gate: item {pair.item_id}, arm {arm.name}: policy {policy.spec!r} serves "
                              "different token ids at the same positions in the two donor members")
    return served, Selection(len(served[0]), positions[0] != positions[1], donor_visible)
