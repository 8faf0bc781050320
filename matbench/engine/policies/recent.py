"""StreamingLLM without sinks beyond the header: keep the header and the most recent tokens."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES, ServingPolicy
from matbench.errors import MatbenchError


@POLICIES.register("recent")
@dataclass(frozen=True)
class RecentTokens(ServingPolicy):
    """The header and every trajectory token whose original position is among the last `n`
    positions before the query (positions, not slots: both donor members keep the same window);
    in source-evicted mode, without the banned source rows."""

    n: int
    name = "recent"
    usage = "recent:N"

    @classmethod
    def from_args(cls, args: str | None) -> RecentTokens:
        if args is None or not args.isdigit() or int(args) < 1:
            raise MatbenchError(f"policy recent needs a positive token count, as recent:64 (got {args!r})")
        return cls(int(args))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.n}"

    def keep(self, arm, member, cache, context=None) -> tuple[int, ...]:
        end = max(member.positions) + 1
        header = range(*member.header_span)
        banned = context.banned if context is not None else frozenset()
        recent = (
            s
            for s in range(member.header_span[1], len(member.positions))
            if member.positions[s] >= end - self.n and s not in banned
        )
        return (*header, *recent)
