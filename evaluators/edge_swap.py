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


def chain_reading(records: Sequence[PairRecord], arm: str, paper: bool = False) -> dict[str, Any]:
    """Accuracy against the referenced chain's values and against the other chain's (each with its
    item-level 95% CI); `paper`: the answers of the paper's parse."""
    tracking, wrong = [], []
    for r in records:
        answers = r.arms[arm].paper_answers if paper else r.arms[arm].answers
        values = r.arm_values(arm)
        tracking.append(sum(a == v for a, v in zip(answers, values)))
        wrong.append(sum(a == v for a, v in zip(answers, values[::-1])))
    n = 2 * len(records)
    return {"accuracy": sum(tracking) / n, "ci": stats.clustered_wilson(tracking, 2).as_list(),
            "wrong_chain": sum(wrong) / n, "wrong_chain_ci": stats.clustered_wilson(wrong, 2).as_list()}


@EVALUATORS.register("edge_swap")
class EdgeSwapEvaluator(Evaluator):
    order = 11  # the experiments after the seven contract suites; first, as a test of discovery
    contract = (
        Metric("edge_tracking", "headline.edge_tracking", "edge-tracking", "the paper's edge-tracking: edge-arm "
               "answers equal to the referenced root's dropped value (serve decoy + both roots + leaf, ask T), both "
               "leaves, item-level 95% CI; chance .5", Scale.ACCURACY, Format.RATE_CI, chance=CHANCE,
               fields=("accuracy", "ci")),
        Metric("edge_tracking_paper", "headline.edge_tracking_paper", "edge-tracking (paper parse)", "the same, "
               "the generated answers read with the paper's parse (kv_causal's pick_last)", Scale.ACCURACY,
               Format.RATE_CI, chance=CHANCE, fields=("accuracy", "ci"), readouts=GENERATING_READOUTS),
        Metric("wrong_chain", "headline.wrong_chain", "wrong chain", "edge-arm answers equal to the other root's "
               "dropped value (the paper's wrong-chain rate)", Scale.ACCURACY, Format.NUMBER, Direction.LOWER),
        Metric("edge_classes", "arms.edge.classes", "edge f:a", "edge arm: pairs by outcome class; follow = both "
               "members track the referenced chain, anti = both track the other chain", Scale.FOLLOW,
               Format.CLASSES),
        Metric("edge_shift", "arms.edge.donor_shift", "edge donor shift", "edge-arm donor margin shift toward the "
               "referenced chain's values (SPEC 2.7): mean with bootstrap 95% CI", Scale.SHIFT, Format.SIGNED_CI),
        Metric("by_leaf", "headline.follow_anti_by_leaf", "f:a per leaf", "edge-arm follow:anti when the leaf "
               "references chain a and chain b", Scale.FOLLOW, Format.MAPPING),
        Metric("comprehension", "arms.txt.menu_accuracy", "comprehension", "full-context (txt) accuracy against "
               "the referenced chain's value", Scale.ACCURACY, chance=CHANCE),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        leaves = sorted({r.variant for r in records})
        by_leaf = {}
        for leaf in leaves:
            edge = arm_metrics([r for r in records if r.variant == leaf], "edge")
            by_leaf[leaf] = f"{edge['classes']['follow']}:{edge['classes']['anti']}"
        reading = chain_reading(records, "edge")
        paper = chain_reading(records, "edge", paper=True) if "paper_parse" in arms["edge"] else None
        metrics["headline"] = {
            "edge_tracking": {"accuracy": reading["accuracy"], "ci": reading["ci"]},
            **({"edge_tracking_paper": {"accuracy": paper["accuracy"], "ci": paper["ci"]}} if paper else {}),
            "wrong_chain": reading["wrong_chain"],
            "wrong_chain_ci": reading["wrong_chain_ci"],
            "edge_follow_anti": [arms["edge"]["classes"]["follow"], arms["edge"]["classes"]["anti"]],
            "edge_p": arms["edge"]["follow_anti_p"],
            "follow_anti_by_leaf": by_leaf,
            "edge_shift_pos_neg": [arms["edge"]["donor_shift"]["positive"], arms["edge"]["donor_shift"]["negative"]],
            "comprehension": arms["txt"]["menu_accuracy"],
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
