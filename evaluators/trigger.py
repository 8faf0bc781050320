"""Trigger evaluator (SPEC 3.2): which constructions write, per construction of the bank.

Per construction: comprehension (txt menu accuracy; comprehended when its Wilson 95% lower bound
is above chance .5) and write-through (kv: follow rate; tested one-sided, follow > anti, by an
exact sign test), Benjamini-Hochberg across the 16 constructions. Classes: W = comprehended and
write-through significant (BH q < .05), U = comprehended, write-through not significant, N = not
comprehended (excluded from claims). The same classification from the donor shift
(positive > negative, one-sided sign test, BH) is reported as `class_shift`: on small models
it is the only signal there is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import PairRecord

FDR = 0.05
CHANCE = 0.5


def classify(comprehended: bool, q: float) -> str:
    if not comprehended:
        return "N"
    return "W" if q < FDR else "U"


@EVALUATORS.register("trigger")
class TriggerEvaluator(Evaluator):
    order = 2
    contract = (
        Metric("classes", "headline.classes", "W/U/N", "constructions by class: W write-through (BH q < .05) and "
               "comprehended, U comprehended only, N not comprehended", Scale.COUNT, Format.COUNTS, overview=True),
        Metric("classes_shift", "headline.classes_shift", "W/U/N by shift", "the same classes from the kv donor shift",
               Scale.COUNT, Format.COUNTS),
        Metric("kv_shift_toward_donor", "headline.kv_shift_toward_donor", "shift → donor", "constructions whose kv "
               "donor shift leans toward the donor (one-sided sign test, BH q < .05)", Scale.COUNT, overview=True),
        Metric("kv_shift_mean", "headline.kv_shift_mean", "kv shift mean", "mean kv donor shift over all pairs",
               Scale.SHIFT),
        CONTROL_CLEAN,
        Metric("by_construction", "by_construction", "per construction", "write-through, class and kv shift of each "
               "construction (the leaderboard's heat maps)", Scale.FOLLOW_RATE, Format.MAPPING, in_scorecard=False),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        constructions = sorted({r.variant for r in records})
        rows = {}
        for variant in constructions:
            subset = [r for r in records if r.variant == variant]
            kv, txt = arm_metrics(subset, "kv"), arm_metrics(subset, "txt")
            follow, anti = kv["classes"]["follow"], kv["classes"]["anti"]
            shift = kv["donor_shift"]
            rows[variant] = {
                "n_pairs": len(subset),
                "comprehension": txt["menu_accuracy"],
                "comprehension_ci": txt["menu_accuracy_ci"],
                "comprehended": txt["menu_accuracy_ci"][0] > CHANCE,
                "write_through": follow / len(subset),
                "kv_classes": kv["classes"],
                "write_p": stats.binomial_greater(follow, follow + anti, 0.5),
                "kv_donor_shift": shift,
                "shift_p": stats.binomial_greater(shift["positive"], shift["positive"] + shift["negative"], 0.5),
            }
        for key, q_key in (("write_p", "write_q"), ("shift_p", "shift_q")):
            for variant, q in zip(constructions, stats.benjamini_hochberg([rows[v][key] for v in constructions])):
                rows[variant][q_key] = q
        for row in rows.values():
            row["class"] = classify(row["comprehended"], row["write_q"])
            row["class_shift"] = classify(row["comprehended"], row["shift_q"])
        metrics["by_construction"] = rows

        def counts(key: str) -> dict[str, int]:
            return {c: sum(r[key] == c for r in rows.values()) for c in ("W", "U", "N")}

        metrics["headline"] = {
            "classes": counts("class"),
            "classes_shift": counts("class_shift"),
            "write_through": {v: r["write_through"] for v, r in rows.items()},
            "comprehension": {v: r["comprehension"] for v, r in rows.items()},
            # The shift evidence on its own, before comprehension gates a class: on small models
            # whose full-text arm answers at chance it is the only signal there is (SPEC 2.7).
            "kv_shift_toward_donor": sum(r["shift_q"] < FDR for r in rows.values()),
            "kv_shift_mean": metrics["arms"]["kv"]["donor_shift"]["mean"],
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
