"""Phantom-erase evaluator (kv_phantom.py E2): does a deleted value come back from the rows after it?

The paper's numbers, on its scale (shares of answers, item-level 95% CI): without a later update,
the erased arm's leak rate (answers naming the member's own deleted OLD) beside the oracle's (the
same trajectory without step 1, as fresh text: what guessing gives); with a conflicting later update,
leak-old (answers naming the deleted OLD where the survivor says NEW) and has-new. Beside them
(matbench's additions): the erased arm's follow:anti with its sign test and its donor margin shift
per variant (on small models the shift is the signal), and comprehension.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

VARIANTS = ("noconflict", "conflict")
ARMS = ("erased", "oracle", "txt")


@EVALUATORS.register("phantom_erase")
class PhantomEraseEvaluator(Evaluator):
    order = 15  # the experiments after the seven contract suites
    contract = (
        Metric(
            "leak",
            "headline.leak",
            "leak (no update)",
            "the paper's E2 number: erased-arm answers naming the "
            "member's own deleted value, no later update (item-level 95% CI)",
            Scale.ACCURACY,
            Format.RATE_CI,
            Direction.NONE,
            fields=("accuracy", "ci"),
            optional=True,
        ),
        Metric(
            "oracle_leak",
            "headline.oracle_leak",
            "oracle leak",
            "the same trajectory without step 1 as fresh "
            "text, no later update: answers naming the member's value (the guessing floor)",
            Scale.ACCURACY,
            direction=Direction.NONE,
            optional=True,
        ),
        Metric(
            "noconflict_classes",
            "by_variant.noconflict.erased.classes",
            "erased f:a",
            "no later update: erased-arm pairs by outcome class (follow: each member names its own deleted value)",
            Scale.FOLLOW,
            Format.CLASSES,
            optional=True,
        ),
        Metric(
            "noconflict_shift",
            "by_variant.noconflict.erased.donor_shift",
            "erased donor shift",
            "no later update: erased-arm donor margin shift (SPEC 2.7), mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
            optional=True,
        ),
        Metric(
            "conflict_leak_old",
            "headline.conflict_leak_old",
            "leak-old (update)",
            "a later update to NEW: erased-arm answers naming the deleted value",
            Scale.ACCURACY,
            direction=Direction.NONE,
            optional=True,
        ),
        Metric(
            "conflict_has_new",
            "headline.conflict_has_new",
            "has-new (update)",
            "a later update to NEW: erased-arm answers naming the survivor NEW",
            Scale.ACCURACY,
            optional=True,
        ),
        Metric(
            "conflict_shift",
            "by_variant.conflict.erased.donor_shift",
            "update donor shift",
            "a later update: erased-arm donor margin shift between the two deleted values",
            Scale.SHIFT,
            Format.SIGNED_CI,
            optional=True,
        ),
        Metric(
            "comprehension",
            "headline.comprehension",
            "comprehension",
            "every step as text: the member's value without an update, NEW with one",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        variants = [v for v in VARIANTS if any(r.variant == v for r in records)]
        by_variant = {
            v: {arm: arm_metrics([r for r in records if r.variant == v], arm) for arm in ARMS} for v in variants
        }
        metrics["by_variant"] = by_variant
        quiet, update = by_variant.get("noconflict"), by_variant.get("conflict")
        metrics["headline"] = {
            "leak": {"accuracy": quiet["erased"]["menu_accuracy"], "ci": quiet["erased"]["menu_accuracy_ci"]}
            if quiet
            else None,
            "oracle_leak": quiet["oracle"]["menu_accuracy"] if quiet else None,
            "conflict_leak_old": (
                update["erased"]["old_value_leaks"] / update["erased"]["old_value_at_risk"] if update else None
            ),
            "conflict_has_new": update["erased"]["expected_win_rate"] if update else None,
            "comprehension": {
                "noconflict": quiet["txt"]["menu_accuracy"] if quiet else None,
                "conflict": update["txt"]["expected_win_rate"] if update else None,
            },
        }
        return metrics
