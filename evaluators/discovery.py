"""Discovery evaluator (SPEC 3.1): root and chain write-through, txt comprehension, control."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, control_clean
from matbench.protocol.records import PairRecord


@EVALUATORS.register("discovery")
class DiscoveryEvaluator(Evaluator):
    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        metrics["headline"] = {
            "root_follow_anti": [arms["root"]["classes"]["follow"], arms["root"]["classes"]["anti"]],
            "root_p": arms["root"]["follow_anti_p"],
            "root_prevalence": arms["root"]["prevalence"],
            "chain_follow_anti": [arms["chain"]["classes"]["follow"], arms["chain"]["classes"]["anti"]],
            "comprehension": arms["txt"]["menu_accuracy"],
            "root_shift_pos_neg": [arms["root"]["donor_shift"]["positive"], arms["root"]["donor_shift"]["negative"]],
            "root_shift_p": arms["root"]["donor_shift"]["sign_p"],
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
