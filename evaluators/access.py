"""Access evaluator (SPEC 3.4): recovery of the dropped value by payload size and encoding.

Per variant (bin2, dir4, name8, digit3, phrase) and question, every arm's metrics; the headline
puts harv_kv recovery beside its chance rate and beside sel_ikv (the isolation control: the same
rows encoded without the rest of the trajectory), so materialization shows as harv_kv - sel_ikv.
"Exact" three-digit recovery is only meaningful under a generating readout (short, trace): the
probe can only choose between the two donor numbers' first tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    arm_metrics,
    control_clean,
)
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import PairRecord


def _recovery(metrics: dict, chance: float) -> dict[str, Any]:
    return {"accuracy": metrics["menu_accuracy"], "ci": metrics["menu_accuracy_ci"], "chance": chance,
            "recall_share": metrics["recall_share"], "recall_share_ci": metrics["recall_share_ci"],
            "follow_anti": [metrics["classes"]["follow"], metrics["classes"]["anti"]],
            "shift_mean": metrics["donor_shift"]["mean"]}


GENERATING = ("short", "trace")


def _recovery_metric(key: str, pool: str, chance: float | None, overview: bool = False,
                     readouts: tuple[str, ...] | None = None) -> Metric:
    return Metric(key, f"headline.{pool}.harv_kv", f"{pool} recovery", f"harv_kv recovery of the dropped {pool} value: "
                  "menu accuracy with its Wilson 95% CI (chance and sel_ikv beside it in the results)",
                  Scale.ACCURACY, Format.RATE_CI, chance=chance, readouts=readouts, overview=overview,
                  fields=("accuracy", "ci"))


@EVALUATORS.register("access")
class AccessEvaluator(Evaluator):
    order = 4
    contract = (
        *(_recovery_metric(key, pool, chance, overview=True)
          for key, pool, chance in (("bin2", "bin2", 0.5), ("dir4", "dir4", 0.25), ("name8", "name8", 0.125))),
        # Exact recovery of a three-digit number means something only when the model writes it: the
        # probe chooses between the two donors' first tokens (its chance is in the value itself).
        _recovery_metric("digit3_exact", "digit3/exact", None, readouts=GENERATING),
        _recovery_metric("digit3_above500", "digit3/above500", 0.5),
        _recovery_metric("digit3_first_digit", "digit3/first_digit", 1 / 9),
        _recovery_metric("phrase_verbatim", "phrase/verbatim", None),
        _recovery_metric("phrase_polarity", "phrase/polarity", 0.5),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        by_variant: dict[str, Any] = {}
        headline: dict[str, Any] = {}
        clean = True
        for variant in sorted({r.variant for r in records}):
            subset = [r for r in records if r.variant == variant]
            arms = {arm: arm_metrics(subset, arm) for arm in subset[0].arms}
            by_variant[variant] = {"n_pairs": len(subset), "arms": arms}
            clean &= control_clean(arms["control"])
            for arm in arms:
                if not arm.startswith("harv_kv"):
                    continue
                question = arm.partition("/")[2]
                key = f"{variant}/{question}" if question else variant
                chance = 1 / len(subset[0].arm_menu(arm))
                isolated = arms[arm.replace("harv_kv", "sel_ikv", 1)]
                headline[key] = {
                    "harv_kv": _recovery(arms[arm], chance),
                    "sel_ikv": _recovery(isolated, chance),
                    "harv_minus_ikv": arms[arm]["menu_accuracy"] - isolated["menu_accuracy"],
                    "full_txt": arms[arm.replace("harv_kv", "full_txt", 1)]["menu_accuracy"],
                }
        headline["control_clean"] = clean
        return {"by_variant": by_variant, "headline": headline}
