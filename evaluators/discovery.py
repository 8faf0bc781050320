"""Discovery evaluator (SPEC 3.1): root and chain write-through, txt comprehension, control."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, control_clean
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import PairRecord


@EVALUATORS.register("discovery")
class DiscoveryEvaluator(Evaluator):
    order = 1
    contract = (
        Metric(
            "root_classes",
            "arms.root.classes",
            "root f:a",
            "root arm (serve decoy + root, ask M): pairs by outcome class; follow:anti among donor-sensitive pairs",
            Scale.FOLLOW,
            Format.CLASSES,
            overview=True,
            rank=True,
        ),
        Metric(
            "root_classes_paper",
            "arms.root.paper_parse.classes",
            "root f:a (paper parse)",
            "the root arm's "
            "generated answers read with the paper's looser parse (upper-cased substrings, last menu word): the "
            "figure comparable with the paper's 99:0",
            Scale.FOLLOW,
            Format.CLASSES,
            readouts=GENERATING_READOUTS,
        ),
        Metric(
            "root_follow_anti_p",
            "arms.root.follow_anti_p",
            "root p",
            "exact two-sided sign test of follow vs anti",
            Scale.P_VALUE,
            Format.P_VALUE,
            Direction.LOWER,
        ),
        Metric(
            "chain_classes",
            "arms.chain.classes",
            "chain f:a",
            "chain arm (serve every carrier, ask T): follow:anti of the source's donor two hops away",
            Scale.FOLLOW,
            Format.CLASSES,
            verdict=True,
        ),
        Metric(
            "chain_classes_paper",
            "arms.chain.paper_parse.classes",
            "chain f:a (paper parse)",
            "the chain arm's answers read with the paper's parse (kv_causal's full arm)",
            Scale.FOLLOW,
            Format.CLASSES,
            readouts=GENERATING_READOUTS,
        ),
        Metric(
            "root_shift",
            "arms.root.donor_shift",
            "root donor shift",
            "root arm donor margin shift (SPEC 2.7): mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
            overview=True,
        ),
        Metric(
            "chain_shift",
            "arms.chain.donor_shift",
            "chain donor shift",
            "chain arm donor margin shift (SPEC 2.7): mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
            verdict=True,
        ),
        Metric(
            "comprehension",
            "arms.txt.menu_accuracy",
            "comprehension",
            "full-context (txt) menu accuracy",
            Scale.ACCURACY,
            chance=0.5,
            comprehension=True,
        ),
        CONTROL_CLEAN,
    )

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
