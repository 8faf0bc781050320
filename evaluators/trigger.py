"""Trigger evaluator (SPEC 3.2): comprehension (txt) and write-through (kv) per construction.

The W / U / N classification with its tests and BH-FDR across the 16 constructions belongs to
the statistics of the evaluators issue; this reports the per-construction evidence it rests on.
"""

from __future__ import annotations

from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics, control_clean


@EVALUATORS.register("trigger")
class TriggerEvaluator(Evaluator):
    def summarize(self, records: list[dict]) -> dict[str, Any]:
        metrics = super().summarize(records)
        by_construction = {}
        for variant in sorted({r["variant"] for r in records}):
            subset = [r for r in records if r["variant"] == variant]
            kv, txt = arm_metrics(subset, "kv"), arm_metrics(subset, "txt")
            by_construction[variant] = {
                "n_pairs": len(subset),
                "comprehension": txt["menu_accuracy"],
                "comprehension_ci": txt["menu_accuracy_ci"],
                "write_through": kv["classes"]["follow"] / len(subset),
                "kv_classes": kv["classes"],
                "kv_follow_anti_p": kv["follow_anti_p"],
                "kv_donor_shift": kv["donor_shift"],
            }
        metrics["by_construction"] = by_construction
        metrics["headline"] = {
            "write_through": {v: m["write_through"] for v, m in by_construction.items()},
            "comprehension": {v: m["comprehension"] for v, m in by_construction.items()},
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
