"""One way of choosing the rows a policy governs: the policy, the source mode, whose picks."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from matbench.engine.policies.base import ServingPolicy, parse_policy
from matbench.engine.policies.oracle import OracleEvents
from matbench.errors import MatbenchError

SOURCE_MODES = ("natural", "evicted")
KEPT_FROM = ("a", "b")


@dataclass(frozen=True)
class PolicySetting:
    """`source`: "natural" (the policy may keep the source's rows; results split by whether it
    did) or "evicted" (the rows of every donor-dependent event are banned and the policy spends
    its budget on the rest); `kept_from`: whose picks both donor members are served, member A's
    ("a") or B's. The oracle has one setting, the paper's protocol."""

    policy: ServingPolicy = field(default_factory=OracleEvents)
    source: str = "natural"
    kept_from: str = "a"

    def __post_init__(self) -> None:
        if self.source not in SOURCE_MODES:
            raise MatbenchError(f"unknown source mode {self.source!r}; use {' or '.join(SOURCE_MODES)}")
        if self.kept_from not in KEPT_FROM:
            raise MatbenchError(f"unknown kept-from member {self.kept_from!r}; use {' or '.join(KEPT_FROM)}")
        if self.policy.is_oracle and (self.source, self.kept_from) != ("natural", "a"):
            raise MatbenchError("the oracle serves the suite's declared events: --source-mode and --kept-from "
                                "apply to other policies only")

    @property
    def key(self) -> tuple[str, str, str]:
        """(policy spec, source, kept_from): how run specs and combos name the setting."""
        return self.policy.spec, self.source, self.kept_from


@lru_cache(maxsize=None)
def setting_for(policy: str, source: str = "natural", kept_from: str = "a") -> PolicySetting:
    """The setting a run spec names (policy specs parse once)."""
    return PolicySetting(parse_policy(policy), source, kept_from)
