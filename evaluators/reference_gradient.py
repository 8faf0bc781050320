"""Reference-gradient evaluator (kv_refcarrier.py): recall of the dropped verdict per carrier wording.

The paper's table, on its scale (accuracy against the gold, chance .5, item-level 95% CI): harv
(decoy + carrier rows of the global prefill) and sel (the same two events re-read as text: the leak
check, donor-blind by construction) per carrier. Its prediction: copy ~ state > outcome > neutral ~
chance. Beside it (matbench's additions), with the four carriers of a group sharing every draw: the
paired contrasts state - neutral and copy - neutral of harv accuracy (bootstrap CI over groups),
harv's follow:anti and donor margin shift per carrier, comprehension (txt) and the control gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean, group_contrast
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import PairRecord

KINDS = ("neutral", "outcome", "state", "copy")
CHANCE = 0.5


def contrast(records: Sequence[PairRecord], kind: str, base: str = "neutral") -> dict[str, Any] | None:
    """harv accuracy of `kind` minus `base`, paired per group of shared draws (bootstrap 95% CI)."""
    return group_contrast(records, len(KINDS), lambda r: r.variant or "", kind, base, "harv")


@EVALUATORS.register("reference_gradient")
class ReferenceGradientEvaluator(Evaluator):
    order = 13  # the experiments after the seven contract suites
    contract = (
        Metric(
            "harv_accuracy",
            "headline.harv_accuracy",
            "harv accuracy by carrier",
            "the paper's table: accuracy "
            "of the decoy + carrier rows against the dropped verdict per carrier wording (chance .5)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
        ),
        Metric(
            "sel_accuracy",
            "headline.sel_accuracy",
            "sel accuracy (leak check)",
            "the same two events re-read as text: donor-blind by construction, so at most one member right per pair",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
        ),
        Metric(
            "state_minus_neutral",
            "headline.state_minus_neutral",
            "state − neutral",
            "harv accuracy with the "
            "state-bearing flag carrier minus the neutral checkpoint, paired per group (bootstrap 95% CI)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
        ),
        Metric(
            "copy_minus_neutral",
            "headline.copy_minus_neutral",
            "copy − neutral",
            "the explicit copy relation (asked of T) minus the neutral checkpoint, paired per group",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
        ),
        Metric(
            "harv_classes",
            "headline.harv_classes",
            "harv f:a by carrier",
            "harv follow:anti per carrier",
            Scale.FOLLOW,
            Format.MAPPING,
        ),
        Metric(
            "harv_shift",
            "headline.harv_shift",
            "harv donor shift by carrier",
            "mean harv donor margin shift per carrier (SPEC 2.7)",
            Scale.SHIFT,
            Format.MAPPING,
        ),
        Metric(
            "comprehension",
            "arms.txt.menu_accuracy",
            "comprehension",
            "full-context (txt) accuracy",
            Scale.ACCURACY,
            chance=CHANCE,
            comprehension=True,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        kinds = [k for k in KINDS if any(r.variant == k for r in records)]
        by_carrier = {
            k: {arm: arm_metrics([r for r in records if r.variant == k], arm) for arm in ("harv", "sel")} for k in kinds
        }
        metrics["by_carrier"] = by_carrier
        metrics["headline"] = {
            "harv_accuracy": {k: by_carrier[k]["harv"]["menu_accuracy"] for k in kinds},
            "harv_accuracy_ci": {k: by_carrier[k]["harv"]["menu_accuracy_ci"] for k in kinds},
            "sel_accuracy": {k: by_carrier[k]["sel"]["menu_accuracy"] for k in kinds},
            "state_minus_neutral": contrast(records, "state"),
            "copy_minus_neutral": contrast(records, "copy"),
            "harv_classes": {
                k: f"{c['follow']}:{c['anti']}" for k in kinds for c in [by_carrier[k]["harv"]["classes"]]
            },
            "harv_shift": {k: by_carrier[k]["harv"]["donor_shift"]["mean"] for k in kinds},
            "comprehension": metrics["arms"]["txt"]["menu_accuracy"],
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
