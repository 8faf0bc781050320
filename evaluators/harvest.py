"""Harvest evaluator (SPEC 3.6): natural carriers in real dialogs, and the injected control.

Natural items: recognition accuracy per arm; harv - iso (what the full-history prefill adds to
the carrier rows beyond their own text) with a 95% interval clustered by conversation, and a
TOST equivalence test at +-0.05 through the 90% clustered interval. LoCoMo carries the
inference; REALTALK (3 connected participant components) is reported descriptively.
Injected items: follow / anti of the counterfactual donor pair for `harv`, and `iso`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

EQUIVALENCE_BOUND = 0.05
NATURAL_ARMS = ("harv", "iso", "text", "none", "goldev")


def _correct(record: PairRecord, arm: str) -> float:
    return float(record.arms[arm].answers[0] == record.values[0])


def natural_summary(records: Sequence[PairRecord]) -> dict[str, Any]:
    n = len(records)
    out: dict[str, Any] = {"n_items": n, "n_conversations": len({r.variant for r in records})}
    for arm in NATURAL_ARMS:
        hits = int(sum(_correct(r, arm) for r in records))
        out[arm] = {"accuracy": hits / n, "ci": stats.wilson(hits, n).as_list()}
    delta = [_correct(r, "harv") - _correct(r, "iso") for r in records]
    clusters = [r.variant for r in records]
    ci95 = stats.cluster_bootstrap_mean_ci(delta, clusters, seed=0)
    ci90 = stats.cluster_bootstrap_mean_ci(delta, clusters, seed=0, confidence=0.90)
    out["harv_minus_iso"] = {
        "mean": sum(delta) / n, "ci": ci95.as_list(), "ci90": ci90.as_list(), "clustered_by": "conversation",
        "tost_bound": EQUIVALENCE_BOUND, "equivalent": stats.equivalent_by_ci(ci90, EQUIVALENCE_BOUND),
    }
    return out


@EVALUATORS.register("harvest")
class HarvestEvaluator(Evaluator):
    order = 6
    contract = (
        Metric("locomo", "natural.locomo.harv_minus_iso", "harv − iso (LoCoMo)", "recognition accuracy with rows "
               "from the full-history prefill minus the same turns encoded alone; 95% CI clustered by conversation, "
               "TOST at ±.05", Scale.DIFFERENCE, Format.SIGNED_CI, Direction.ZERO, overview=True, optional=True),
        Metric("realtalk", "natural.realtalk.harv_minus_iso", "harv − iso (REALTALK)", "as for LoCoMo, descriptive "
               "(3 connected participant components)", Scale.DIFFERENCE, Format.SIGNED_CI, Direction.ZERO,
               optional=True),
        Metric("injected_follow_anti", "headline.injected_follow_anti", "injected f:a", "injected counterfactual "
               "carrier (positive control): follow:anti of harv", Scale.FOLLOW, Format.CLASSES, optional=True),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics: dict[str, Any] = {"natural": {}, "injected": {}}
        headline: dict[str, Any] = {}
        for corpus in ("locomo", "realtalk"):
            natural = [r for r in records if r.variant.startswith(f"natural/{corpus}/")]
            if natural:
                metrics["natural"][corpus] = summary = natural_summary(natural)
                headline[f"{corpus}_harv_minus_iso"] = summary["harv_minus_iso"]["mean"]
                headline[f"{corpus}_harv_minus_iso_ci"] = summary["harv_minus_iso"]["ci"]
                headline[f"{corpus}_equivalent"] = summary["harv_minus_iso"]["equivalent"]
        injected = [r for r in records if r.variant.startswith("injected/")]
        if injected:
            arms = {arm: arm_metrics(injected, arm) for arm in ("harv", "iso")}
            metrics["injected"] = {"n_pairs": len(injected), "arms": arms}
            headline["injected_follow_anti"] = [arms["harv"]["classes"]["follow"], arms["harv"]["classes"]["anti"]]
            headline["injected_shift_mean"] = arms["harv"]["donor_shift"]["mean"]
            headline["injected_iso_follow"] = arms["iso"]["classes"]["follow"]
        metrics["headline"] = headline
        return metrics
