"""Sliding-window evaluator (kv_swgate.py): far-row donor-follow by gap, in one serving mode.

A run of this suite writes one results file per serving mode (`--serving auto` runs compact and
native): each reports, per gap, the paper's far-root donor-follow classes (follow: each member
reads its own far row), far-row accuracy (item-level 95% CI) and, beside them (matbench's), the
donor margin shift. Compact minus native, gap by gap, is the over-exposure compact serving gives a
sliding-window model; a full-attention model's two files agree (gate B).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.data_gen.sliding_window import GAPS
from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import PairRecord

ARM = "far_near"


@EVALUATORS.register("sliding_window")
class SlidingWindowEvaluator(Evaluator):
    order = 22  # the experiments after the seven contract suites
    contract = (
        Metric(
            "follow_by_gap",
            "headline.follow_by_gap",
            "far-row follow by gap",
            "kv_swgate: pairs whose "
            "members each read their own far row, share per gap (nominal filler tokens between far row and "
            "near row); compare the compact and native files",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        Metric(
            "accuracy_by_gap",
            "headline.accuracy_by_gap",
            "far-row accuracy by gap",
            "answers naming the member's own far-row state, per gap (chance .5)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "shift_by_gap",
            "headline.shift_by_gap",
            "donor shift by gap",
            "far-row donor margin shift per gap (SPEC 2.7), the mean",
            Scale.SHIFT,
            Format.MAPPING,
        ),
        Metric(
            "far_classes",
            f"arms.{ARM}.classes",
            "far f:a (all gaps)",
            "far-row donor classes over every gap",
            Scale.FOLLOW,
            Format.CLASSES,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        gaps = [f"gap{g}" for g in GAPS if any(r.variant == f"gap{g}" for r in records)]
        by_gap = {g: arm_metrics([r for r in records if r.variant == g], ARM) for g in gaps}
        metrics["by_gap"] = by_gap
        metrics["headline"] = {
            "follow_by_gap": {g: m["classes"]["follow"] / m["n_pairs"] for g, m in by_gap.items()},
            "accuracy_by_gap": {g: m["menu_accuracy"] for g, m in by_gap.items()},
            "accuracy_ci_by_gap": {g: m["menu_accuracy_ci"] for g, m in by_gap.items()},
            "shift_by_gap": {g: m["donor_shift"]["mean"] for g, m in by_gap.items()},
        }
        return metrics
