"""Serving policies: which rows of a prefilled member a serving system keeps.

A policy is a small dataclass with one method, `keep` (see `base.ServingPolicy`), registered by
name in `POLICIES`; `--policy NAME[:ARGS][@BUDGET]` picks one (`parse_policy`). The engine, not
the policy, owns the donor discipline (`matbench.engine.selection`). Importing this package
registers the built-in policies: `oracle` (the suite's declared events, the paper's protocol and
the default), `recent:N`, and the scoring policies (`scored.ScoredPolicy`, kvpress's ScorerPress:
one `score` method each) `random`, `streaming_llm`, `knorm`, `keydiff`, `snapkv`, `tova`, `h2o`,
`pyramidkv`, `expected_attention` and `adakv`, which keep a budget of rows per layer and KV head;
`merging`, the positive control that folds dropped values into kept rows;
and `kvpress:PRESS(...)`, any kvpress press that chooses rows (`kvpress_adapter`).
"""

from matbench.engine.policies import (  # noqa: F401  (they register)
    adakv,
    expected_attention,
    h2o,
    keydiff,
    knorm,
    kvpress_adapter,
    merging,
    oracle,
    pyramidkv,
    random_rows,
    recent,
    snapkv,
    streaming_llm,
    tova,
)
from matbench.engine.policies.base import POLICIES, SelectionContext, ServingPolicy, parse_policy
from matbench.engine.policies.budget import Budget, parse_budgets

__all__ = ["POLICIES", "Budget", "SelectionContext", "ServingPolicy", "parse_budgets", "parse_policy"]
