"""The paper's protocol: keep the header and the events the suite declares for the arm."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.engine.policies.base import POLICIES, ServingPolicy


@POLICIES.register("oracle")
@dataclass(frozen=True)
class OracleEvents(ServingPolicy):
    """Every token of the arm's served events (`Arm.served`), chosen when the suite was generated."""

    name = "oracle"

    @property
    def is_oracle(self) -> bool:
        return True

    def keep(self, arm, member, cache, context=None) -> tuple[int, ...]:
        slots = list(range(*member.header_span))
        for i in sorted(arm.served):
            slots.extend(range(*member.event_spans[i]))
        return tuple(slots)
