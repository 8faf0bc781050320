"""Decoy-audit evaluator (kv_decoyctl2.py): recall by decoy mode, and what the decoy adds.

The paper's table, on its scale (accuracy against the gold, chance .5), per mode (opposite,
independent, none) and arm (full_txt, sel_txt, sel_ikv, harv_kv), with the item-level 95% CI, and
harv_none (answers naming no state word). Beside it (matbench's additions), with the three modes
of a group sharing every draw:
- decoy inflation = harv_kv accuracy under the opposite decoy minus under the independent one,
  paired per group (bootstrap CI): what eliminating a served wrong value is worth;
- harv_kv's donor classes and donor margin shift under `none` (no served state word) and
  `independent` (opposite's arms are donor-visible: its decoy restates the donor's negation);
- the decoy echo: harv_kv answers equal to the served decoy's value (independent mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean, group_contrast
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

MODES = ("opposite", "independent", "none")
ARMS = ("full_txt", "sel_txt", "sel_ikv", "harv_kv")
CHANCE = 0.5


def mode_of(record: PairRecord) -> str:
    """The item's decoy mode (an independent item's variant also names its decoy's state)."""
    return (record.variant or "").split("/")[0]


@EVALUATORS.register("decoy_audit")
class DecoyAuditEvaluator(Evaluator):
    order = 12  # the experiments after the seven contract suites
    contract = (
        Metric(
            "harv_kv_accuracy",
            "headline.harv_kv_accuracy",
            "harv_kv accuracy by mode",
            "the paper's table: "
            "harv_kv (decoy + carrier rows of the global prefill) accuracy against the gold per decoy mode "
            "(chance .5)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
        ),
        Metric(
            "decoy_inflation",
            "headline.decoy_inflation",
            "opposite − independent",
            "harv_kv accuracy with a "
            "served opposite decoy minus with an independent one, paired per group of shared draws (bootstrap "
            "95% CI): recall bought by eliminating the decoy",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
        ),
        Metric(
            "none_classes",
            "by_mode.none.harv_kv.classes",
            "no-decoy f:a",
            "harv_kv donor classes with no served state word (none mode)",
            Scale.FOLLOW,
            Format.CLASSES,
            optional=True,
        ),
        Metric(
            "none_shift",
            "by_mode.none.harv_kv.donor_shift",
            "no-decoy donor shift",
            "harv_kv donor margin shift in none mode (SPEC 2.7)",
            Scale.SHIFT,
            Format.SIGNED_CI,
            optional=True,
        ),
        Metric(
            "independent_shift",
            "by_mode.independent.harv_kv.donor_shift",
            "independent donor shift",
            "harv_kv donor margin shift with an independent decoy (access bin2's design)",
            Scale.SHIFT,
            Format.SIGNED_CI,
            optional=True,
        ),
        Metric(
            "decoy_echo",
            "headline.decoy_echo",
            "decoy echo",
            "independent mode: harv_kv answers equal to the served decoy's value",
            Scale.ACCURACY,
            direction=Direction.NONE,
        ),
        Metric(
            "comprehension",
            "headline.comprehension",
            "comprehension",
            "full_txt accuracy per mode",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
            comprehension=True,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        # Arms shared by every mode; control only where the decoy is donor-independent.
        metrics: dict[str, Any] = {"arms": {arm: arm_metrics(records, arm) for arm in ARMS}}
        controlled = [r for r in records if "control" in r.arms]
        metrics["arms"]["control"] = arm_metrics(controlled, "control") if controlled else None
        modes = [m for m in MODES if any(mode_of(r) == m for r in records)]
        by_mode = {m: {arm: arm_metrics([r for r in records if mode_of(r) == m], arm) for arm in ARMS} for m in modes}
        for m in modes:
            subset = [r for r in records if mode_of(r) == m]
            by_mode[m]["harv_none"] = sum(a is None for r in subset for a in r.arms["harv_kv"].answers) / (
                2 * len(subset)
            )
        metrics["by_mode"] = by_mode
        independent = [r for r in records if mode_of(r) == "independent"]
        echo = None
        if independent:
            hits = [sum(a == r.variant.split("/")[1] for a in r.arms["harv_kv"].answers) for r in independent]
            echo = sum(hits) / (2 * len(independent))
        metrics["headline"] = {
            "harv_kv_accuracy": {m: by_mode[m]["harv_kv"]["menu_accuracy"] for m in modes},
            "harv_kv_accuracy_ci": {m: by_mode[m]["harv_kv"]["menu_accuracy_ci"] for m in modes},
            "table": {
                m: {arm: by_mode[m][arm]["menu_accuracy"] for arm in ARMS} | {"harv_none": by_mode[m]["harv_none"]}
                for m in modes
            },
            "decoy_inflation": group_contrast(records, len(MODES), mode_of, "opposite", "independent", "harv_kv"),
            "decoy_echo": echo,
            "comprehension": {m: by_mode[m]["full_txt"]["menu_accuracy"] for m in modes},
            "control_clean": control_clean(metrics["arms"]["control"]) if controlled else None,
        }
        return metrics
