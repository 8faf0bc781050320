"""Landing evaluator (SPEC 3.3): root x edge cells, depth-3 with and without the root, perturbation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, control_clean
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord


def _fa(arm: dict) -> list[int]:
    return [arm["classes"]["follow"], arm["classes"]["anti"]]


DOWNSTREAM_BOUND = 0.075  # the paper's pre-registered equivalence bound for the downstream marginal


def downstream_effect(records: Sequence[PairRecord], same: str, cross: str) -> dict[str, Any]:
    """Does the downstream row's donor matter? P(answer = root donor) with the downstream rows of
    the same member minus with those of the other member (paired per item, bootstrap CI, TOST at
    +-0.075 through the 90% interval), and how often the answers agree."""
    def follow(record: PairRecord, arm: str) -> float:
        return sum(a == v for a, v in zip(record.arms[arm].answers, record.values)) / 2

    diffs = [follow(r, same) - follow(r, cross) for r in records]
    agree = sum(a == b for r in records for a, b in zip(r.arms[same].answers, r.arms[cross].answers))
    ci90 = stats.bootstrap_mean_ci(diffs, seed=0, confidence=0.90)
    return {"follow_root_same": sum(follow(r, same) for r in records) / len(records),
            "follow_root_cross": sum(follow(r, cross) for r in records) / len(records),
            "difference": sum(diffs) / len(diffs), "ci": stats.bootstrap_mean_ci(diffs, seed=0).as_list(),
            "ci90": ci90.as_list(), "tost_bound": DOWNSTREAM_BOUND,
            "equivalent": stats.equivalent_by_ci(ci90, DOWNSTREAM_BOUND),
            "concordance": agree / (2 * len(records))}


@EVALUATORS.register("landing")
class LandingEvaluator(Evaluator):
    order = 3
    contract = (
        Metric("root_edge_follow_anti", "headline.root_edge_follow_anti", "root+edge f:a", "root and edge served, "
               "ask T: follow:anti of the root's donor", Scale.FOLLOW, Format.CLASSES, overview=True),
        Metric("edge_only_follow_anti", "headline.edge_only_follow_anti", "edge-only f:a", "edge served without the "
               "root, ask T", Scale.FOLLOW, Format.CLASSES),
        Metric("downstream_effect", "headline.downstream_effect", "downstream effect", "P(root donor) with the "
               "downstream rows of the same member minus the other member's (TOST at ±.075)", Scale.DIFFERENCE,
               Format.MAPPING, Direction.ZERO),
        Metric("depth3_root_follow_rate", "headline.depth3_root_follow_rate", "depth-3 follow (root)",
               "depth-3 chain with the root served: follow rate", Scale.FOLLOW_RATE),
        Metric("depth3_noroot_follow_rate", "headline.depth3_noroot_follow_rate", "depth-3 follow (no root)",
               "depth-3 chain without the root: follow rate", Scale.FOLLOW_RATE),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
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
