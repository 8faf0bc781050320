"""Landing evaluator (SPEC 3.3): root x edge cells, depth-3 with and without the root, perturbation."""

from __future__ import annotations

from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, control_clean


def _fa(arm: dict) -> list[int]:
    return [arm["classes"]["follow"], arm["classes"]["anti"]]


def downstream_effect(records: list[dict], same: str, cross: str) -> dict[str, Any]:
    """Does the downstream row's donor matter? P(answer = root donor) with the downstream rows of
    the same member minus with those of the other member, and how often the answers agree."""
    n = 2 * len(records)
    def follow(arm):
        return sum(a == v for r in records for a, v in zip(r["arms"][arm]["answers"], r["values"]))
    agree = sum(a == b for r in records for a, b in zip(r["arms"][same]["answers"], r["arms"][cross]["answers"]))
    return {"follow_root_same": follow(same) / n, "follow_root_cross": follow(cross) / n,
            "difference": (follow(same) - follow(cross)) / n, "concordance": agree / n}


@EVALUATORS.register("landing")
class LandingEvaluator(Evaluator):
    def summarize(self, records: list[dict]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        metrics["headline"] = {
            # Does the edge carry the root's donor only when the root is served?
            "root_edge_follow_anti": _fa(arms["root_edge"]),
            # Root donor x downstream donor: follow = the root's donor, anti = the downstream row's.
            "root_edge_cross_follow_anti": _fa(arms["root_edge_cross"]),
            "perturb_cross_follow_anti": _fa(arms["perturb_cross"]),
            "downstream_effect": downstream_effect(records, "root_edge", "root_edge_cross"),
            "edge_only_follow_anti": _fa(arms["edge_only"]),
            "root_only_follow_anti": _fa(arms["root_only"]),
            "depth3_root_follow_rate": arms["depth3_root"]["classes"]["follow"] / arms["depth3_root"]["n_pairs"],
            "depth3_noroot_follow_rate": arms["depth3_noroot"]["classes"]["follow"] / arms["depth3_noroot"]["n_pairs"],
            "perturb_prevalence": arms["perturb"]["prevalence"],
            "neutral_prevalence": arms["neutral"]["prevalence"],
            "root_edge_shift_pos_neg": [arms["root_edge"]["donor_shift"]["positive"], arms["root_edge"]["donor_shift"]["negative"]],
            "edge_only_shift_pos_neg": [arms["edge_only"]["donor_shift"]["positive"], arms["edge_only"]["donor_shift"]["negative"]],
            "comprehension": arms["txt"]["menu_accuracy"],
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
