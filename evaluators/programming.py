"""Programming evaluator (SPEC 3.5): donor-follow per carrier kind and serve set, nld - pas."""

from __future__ import annotations

from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics, control_clean


def _follow_rate(metrics: dict) -> float:
    return metrics["classes"]["follow"] / metrics["n_pairs"]


@EVALUATORS.register("programming")
class ProgrammingEvaluator(Evaluator):
    def summarize(self, records: list[dict]) -> dict[str, Any]:
        metrics = super().summarize(records)
        kinds = sorted({r["variant"].split("/")[0] for r in records})
        by_kind = {}
        for kind in kinds:
            subset = [r for r in records if r["variant"].split("/")[0] == kind]
            by_kind[kind] = {arm: arm_metrics(subset, arm) for arm in subset[0]["arms"]}
        metrics["by_carrier"] = by_kind
        follow = {kind: {arm: _follow_rate(m) for arm, m in arms.items()} for kind, arms in by_kind.items()}
        metrics["headline"] = {
            "follow_rate": follow,
            "nld_minus_pas_both": (follow["nld"]["both"] - follow["pas"]["both"]) if {"nld", "pas"} <= set(follow) else None,
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
