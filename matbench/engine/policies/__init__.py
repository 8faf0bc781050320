"""Serving policies: which rows of a prefilled member a serving system keeps.

A policy is a small dataclass with one method, `keep` (see `base.ServingPolicy`), registered by
name in `POLICIES`; `--policy NAME[:ARGS]` picks one (`parse_policy`). The engine, not the policy,
owns the donor discipline (`matbench.engine.selection`). Importing this package registers the
built-in policies: `oracle` (the suite's declared events, the paper's protocol and the default)
and `recent:N` (the header and the last N positions of the trajectory).
"""

from matbench.engine.policies import oracle, recent  # noqa: F401  (they register)
from matbench.engine.policies.base import POLICIES, ServingPolicy, parse_policy

__all__ = ["POLICIES", "ServingPolicy", "parse_policy"]
