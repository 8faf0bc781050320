"""Landing evaluator (SPEC 3.3): root x edge cells, depth-3 with and without the root, perturbation."""

from __future__ import annotations

from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, control_clean


def _fa(arm: dict) -> list[int]:
    return [arm["classes"]["follow"], arm["classes"]["anti"]]


@EVALUATORS.register("landing")
class LandingEvaluator(Evaluator):
    def summarize(self, records: list[dict]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        metrics["headline"] = {
            # Does the edge carry the root's donor only when the root is served?
            "root_edge_follow_anti": _fa(arms["root_edge"]),
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
