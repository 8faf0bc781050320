"""One way of choosing the rows a policy governs: the policy, the source mode, whose picks."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from matbench.engine.policies.base import POLICIES, ServingPolicy, parse_policy
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
        if self.source == "evicted" and not self.policy.honours_banned:
            raise MatbenchError(
                f"policy {self.policy.spec} chooses its rows in its own kvpress hook and cannot spend its budget "
                "around the banned source rows: --source-mode evicted takes a scoring press or a built-in policy"
            )
        if self.policy.is_oracle and (self.source, self.kept_from) != ("natural", "a"):
            raise MatbenchError(
                "the oracle serves the suite's declared events: --source-mode and --kept-from "
                "apply to other policies only"
            )

    @property
    def key(self) -> tuple[str, str, str]:
        """(policy spec, source, kept_from): how run specs and combos name the setting."""
        return self.policy.spec, self.source, self.kept_from


@cache
def setting_for(policy: str, source: str = "natural", kept_from: str = "a") -> PolicySetting:
    """The setting a run spec names (policy specs parse once)."""
    return PolicySetting(parse_policy(policy), source, kept_from)


def expand_settings(
    policies: tuple[str, ...],
    budgets: tuple[str, ...] = (),
    sources: tuple[str, ...] = ("natural",),
    kept_from: tuple[str, ...] = ("a",),
) -> list[PolicySetting]:
    """Every setting a run asks for: each policy (a scoring policy without `@BUDGET` at each of
    `budgets`) under each source mode and kept-from member; the oracle once, as the paper serves."""
    from matbench.engine.policies.budget import parse_budgets

    parsed_budgets = parse_budgets(",".join(budgets)) if budgets else ()
    out: list[PolicySetting] = []
    used_budgets = False
    for spec in policies:
        head = spec.partition("@")[0]
        name, _, args = head.partition(":")
        budgeted = POLICIES.get(name).from_args(args or None).budgeted
        if budgeted and "@" not in spec and parsed_budgets:
            variants = [parse_policy(spec, b) for b in parsed_budgets]
            used_budgets = True
        else:
            variants = [parse_policy(spec)]
        for policy in variants:
            modes = [("natural", "a")] if policy.is_oracle else [(s, k) for s in sources for k in kept_from]
            out += [PolicySetting(policy, s, k) for s, k in modes]
    if all(o.policy.is_oracle for o in out) and (tuple(sources), tuple(kept_from)) != (("natural",), ("a",)):
        raise MatbenchError(
            "--source-mode and --kept-from apply to serving policies other than the oracle; name one with --policy"
        )
    if parsed_budgets and not used_budgets:
        raise MatbenchError(
            "--budget applies to scoring policies named without @BUDGET (snapkv, knorm, ...); none of --policy is one"
        )
    return list(dict.fromkeys(out))
