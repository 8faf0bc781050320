"""Edge-swap evaluator (kv_causal.py Part B): does the served edge select which dropped root is read?

The paper's numbers, on its scale (kv_causal's summary, va != vb half):
- edge-tracking = P(answer == the referenced root's value) over both leaves and members, chance
  .5: the edge arm's accuracy against its donor values, with the item-level 95% CI;
- wrong-chain = P(answer == the other root's value), the same over the other chain's values.

Beside them (matbench's additions): the edge arm's outcome classes pooled and per leaf (follow =
both members track the referenced chain, anti = both track the other chain), the donor margin
shift toward the referenced chain, comprehension (txt) and the control gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import PairRecord

CHANCE = 0.5


def wrong_chain(records: Sequence[PairRecord], arm: str) -> dict[str, Any]:
    """Answers equal to the other chain's value (the edge arm's donor values reversed), with the
    item-level 95% CI; the tracking accuracy is the arm's own `menu_accuracy`."""
    per_pair = [sum(a == v for a, v in zip(r.arms[arm].answers, r.arm_values(arm)[::-1])) for r in records]
    return {"rate": sum(per_pair) / (2 * len(records)), "ci": stats.clustered_wilson(per_pair, 2).as_list()}


@EVALUATORS.register("edge_swap")
class EdgeSwapEvaluator(Evaluator):
    order = 11  # the experiments after the seven contract suites; first, as a test of discovery
    contract = (
        Metric(
            "edge_tracking",
            "headline.edge_tracking",
            "edge-tracking",
            "the paper's edge-tracking: edge-arm "
            "answers equal to the referenced root's dropped value (serve decoy + both roots + leaf, ask T), both "
            "leaves, item-level 95% CI; chance .5",
            Scale.ACCURACY,
            Format.RATE_CI,
            chance=CHANCE,
            fields=("accuracy", "ci"),
        ),
        Metric(
            "edge_tracking_paper",
            "headline.edge_tracking_paper",
            "edge-tracking (paper parse)",
            "the same, the generated answers read with the paper's parse (kv_causal's pick_last)",
            Scale.ACCURACY,
            Format.RATE_CI,
            chance=CHANCE,
            fields=("accuracy", "ci"),
            readouts=GENERATING_READOUTS,
        ),
        Metric(
            "wrong_chain",
            "headline.wrong_chain",
            "wrong chain",
            "edge-arm answers equal to the other root's dropped value (the paper's wrong-chain rate)",
            Scale.ACCURACY,
            Format.NUMBER,
            Direction.LOWER,
        ),
        Metric(
            "edge_classes",
            "arms.edge.classes",
            "edge f:a",
            "edge arm: pairs by outcome class; follow = both "
            "members track the referenced chain, anti = both track the other chain",
            Scale.FOLLOW,
            Format.CLASSES,
        ),
        Metric(
            "edge_shift",
            "arms.edge.donor_shift",
            "edge donor shift",
            "edge-arm donor margin shift toward the referenced chain's values (SPEC 2.7): mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        Metric(
            "by_leaf",
            "headline.follow_anti_by_leaf",
            "f:a per leaf",
            "edge-arm follow:anti when the leaf references chain a and chain b",
            Scale.FOLLOW,
            Format.MAPPING,
        ),
        Metric(
            "comprehension",
            "arms.txt.menu_accuracy",
            "comprehension",
            "full-context (txt) accuracy against the referenced chain's value",
            Scale.ACCURACY,
            chance=CHANCE,
            comprehension=True,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        leaves = sorted({r.variant for r in records})
        by_leaf = {}
        for leaf in leaves:
            classes = arm_metrics([r for r in records if r.variant == leaf], "edge")["classes"]
            by_leaf[leaf] = f"{classes['follow']}:{classes['anti']}"
        edge = arms["edge"]
        wrong = wrong_chain(records, "edge")
        paper = edge.get("paper_parse")
        metrics["headline"] = {
            "edge_tracking": {"accuracy": edge["menu_accuracy"], "ci": edge["menu_accuracy_ci"]},
            **(
                {"edge_tracking_paper": {"accuracy": paper["menu_accuracy"], "ci": paper["menu_accuracy_ci"]}}
                if paper
                else {}
            ),
            "wrong_chain": wrong["rate"],
            "wrong_chain_ci": wrong["ci"],
            "edge_follow_anti": [arms["edge"]["classes"]["follow"], arms["edge"]["classes"]["anti"]],
            "edge_p": arms["edge"]["follow_anti_p"],
            "follow_anti_by_leaf": by_leaf,
            "edge_shift_pos_neg": [arms["edge"]["donor_shift"]["positive"], arms["edge"]["donor_shift"]["negative"]],
            "comprehension": arms["txt"]["menu_accuracy"],
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
