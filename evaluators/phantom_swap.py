"""Phantom-swap evaluator (kv_phantom.py E1): does the served event's row answer from the unseen prefix?

The paper's numbers: the follow-donor rate (each member's answer names its own prefix's value and
not the other: the swap arm's accuracy against the donor values, item-level 95% CI) and how often
the isolated encoding of the same event names either value (`iso_names_any`: it must not, as it
never saw the prefix). Beside them (matbench's additions): the swap arm's follow:anti with its sign
test, its donor margin shift, and comprehension (every step as text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import PairRecord


@EVALUATORS.register("phantom_swap")
class PhantomSwapEvaluator(Evaluator):
    order = 14  # the experiments after the seven contract suites
    contract = (
        Metric(
            "follow_donor",
            "headline.follow_donor",
            "follow-donor rate",
            "the paper's E1 number: answers that "
            "name their own unseen prefix's value (serve the header and the event only), item-level 95% CI",
            Scale.ACCURACY,
            Format.RATE_CI,
            fields=("accuracy", "ci"),
        ),
        Metric(
            "swap_classes",
            "arms.swap.classes",
            "swap f:a",
            "swap arm: pairs by outcome class (follow: each member answers its own prefix's value)",
            Scale.FOLLOW,
            Format.CLASSES,
        ),
        Metric(
            "swap_shift",
            "arms.swap.donor_shift",
            "swap donor shift",
            "swap-arm donor margin shift (SPEC 2.7): mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        Metric(
            "iso_names_any",
            "headline.iso_names_any",
            "iso names a value",
            "the event encoded alone after the "
            "header: share of answers naming either value (the paper's iso_names_any; it never saw the prefix); a "
            "generated answer only, since a probe always names one",
            Scale.ACCURACY,
            direction=Direction.NONE,
            readouts=GENERATING_READOUTS,
        ),
        Metric(
            "comprehension", "arms.txt.menu_accuracy", "comprehension", "every step as text: accuracy", Scale.ACCURACY
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        swap = metrics["arms"]["swap"]
        iso_named = sum(a is not None for r in records for a in r.arms["iso"].answers)
        metrics["headline"] = {
            "follow_donor": {"accuracy": swap["menu_accuracy"], "ci": swap["menu_accuracy_ci"]},
            "swap_follow_anti": [swap["classes"]["follow"], swap["classes"]["anti"]],
            "swap_p": swap["follow_anti_p"],
            "iso_names_any": iso_named / (2 * len(records)),
            "comprehension": metrics["arms"]["txt"]["menu_accuracy"],
        }
        return metrics
