"""The serving-policy contract (a kvpress-style press: a dataclass, one method to override)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from matbench.errors import MatbenchError
from matbench.registry import Registry

if TYPE_CHECKING:
    from matbench.engine.cache import EventCache
    from matbench.engine.layout import MemberLayout
    from matbench.protocol.pairs import Arm


@dataclass(frozen=True)
class KeptRows:
    """A selection that differs by layer and KV head: `slots` as `keep` returns them (every row any
    head keeps), and `heads[l, h, i]` whether layer l's KV head h keeps `slots[i]` (bool array
    `[layers, kv_heads, len(slots)]`; header rows must be kept by every head)."""

    slots: tuple[int, ...]
    heads: Any  # numpy bool array [L, H_kv, len(slots)]


@dataclass(frozen=True)
class ServingPolicy:
    """Chooses the rows of one prefilled member that a serving system keeps for one arm.

    `keep(arm, member, cache)` returns token slots of the member's global prefill, sorted and
    without repeats, the header's slots included (they precede every event and are served
    always), kept in every layer and KV head; or a `KeptRows` when the choice differs by layer
    and KV head (SnapKV-style per-head selection). `member` gives each slot's token id and original position (`input_ids`,
    `positions`, `header_span`, `event_spans`); `cache` its K/V rows, one tensor per layer of
    shape `[1, kv_heads, T, head_dim]`, for policies that score rows. The engine calls `keep` on
    both donor members and serves both the same kept set (see `matbench.engine.selection`).

    `name` is the registry name; `spec` the string that rebuilds the policy (`name:args`),
    recorded in results files and run specs.
    """

    name: ClassVar[str] = ""

    @classmethod
    def from_args(cls, args: str | None) -> ServingPolicy:
        """The policy from the text after `NAME:` (None when absent)."""
        if args:
            raise MatbenchError(f"policy {cls.name!r} takes no arguments (got {args!r})")
        return cls()

    @property
    def spec(self) -> str:
        return self.name

    @property
    def is_oracle(self) -> bool:
        """True for the suite's own event selection (the paper's protocol)."""
        return False

    def keep(self, arm: Arm, member: MemberLayout, cache: EventCache) -> tuple[int, ...] | KeptRows:
        raise NotImplementedError


POLICIES: Registry[type[ServingPolicy]] = Registry("serving policy")


def parse_policy(spec: str) -> ServingPolicy:
    """`NAME` or `NAME:ARGS` -> a policy; an unknown name or bad arguments is one line."""
    name, _, args = spec.partition(":")
    return POLICIES.get(name).from_args(args or None)
