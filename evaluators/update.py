"""Update evaluator (SPEC 3.7): patch win rate, old-value leak, controls that must not move."""

from __future__ import annotations

from typing import Any

from matbench.evaluators.base import EVALUATORS, Evaluator, control_clean

from matbench import stats

PATCHED = ("bare", "versioned", "structured")
CONTROLS = ("wrong_register", "dummy")


@EVALUATORS.register("update")
class UpdateEvaluator(Evaluator):
    def summarize(self, records: list[dict]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        unchanged = {}
        for control in CONTROLS:
            same = sum(a == b for r in records
                       for a, b in zip(r["arms"][control]["answers"], r["arms"]["base"]["answers"]))
            unchanged[control] = {"rate": same / (2 * len(records)), "ci": stats.wilson(same, 2 * len(records)).as_list()}
        metrics["controls_unchanged"] = unchanged
        metrics["headline"] = {
            "patch_win_rate": {p: arms[p]["expected_win_rate"] for p in PATCHED},
            "old_value_leaks": {p: [arms[p]["old_value_leaks"], arms[p]["old_value_at_risk"]] for p in PATCHED},
            "controls_unchanged": {c: v["rate"] for c, v in unchanged.items()},
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
