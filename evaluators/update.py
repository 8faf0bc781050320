"""Update evaluator (SPEC 3.7): patch win rate, old-value leak, donor-follow despite the patch,
the patch's margin gain, and controls that must not move."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from matbench import stats
from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    control_clean,
    signed_summary,
)
from matbench.protocol.margins import donor_margin
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

PATCHED = ("bare", "versioned", "structured")
CONTROLS = ("wrong_register", "dummy")


def _expected_margin(record: PairRecord, arm: str, expected: str) -> float:
    """Mean over members of the probe's donor margin of `expected`: log p(expected) minus the
    logsumexp of the other menu words (the other word's log p on a two-word menu)."""
    logp = np.asarray(record.arms[arm].probe_logp, dtype=np.float64)
    margins = donor_margin(logp, tuple(record.arm_menu(arm)), expected).tolist()
    return sum(margins) / len(margins)


def despite_patch(records: Sequence[PairRecord], arm: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """Whether the dropped donor still steers an arm that was served a patch; `metrics` is the
    arm's `arm_metrics`, whose follow/anti counts and sign test are reported again here.

    Both members receive the same patch, so a model that reads it answers the same word in both
    (const). An old-value leak in a const pair is the patch losing to a one-word habit that meets
    the donor by chance (half the stale members of a two-word menu); a leak in a follow pair is
    the materialized donor beating the patch. `margin_gain` is how far the patch moves the probe
    margin of its value over the unpatched `base` arm: the signal when argmax never moves.
    """
    leaks_follow = leaks_other = 0
    gains = []
    for r in records:
        entry = r.arms[arm]
        expected = entry.expected
        cls = entry.outcome
        for answer, value in zip(entry.answers, r.values):
            if value != expected and answer == value:
                if cls == "follow":
                    leaks_follow += 1
                else:
                    leaks_other += 1
        gains.append(_expected_margin(r, arm, expected) - _expected_margin(r, "base", expected))
    return {
        "follow": metrics["classes"]["follow"],
        "anti": metrics["classes"]["anti"],
        "follow_anti_p": metrics["follow_anti_p"],
        "leaks_in_follow_pairs": leaks_follow,
        "leaks_in_other_pairs": leaks_other,
        "margin_gain": signed_summary(gains),
    }


@EVALUATORS.register("update")
class UpdateEvaluator(Evaluator):
    order = 7
    contract = (
        Metric("patch_win_rate", "headline.patch_win_rate", "patch wins", "share of answers equal to the served "
               "patch's value, per patch form", Scale.ACCURACY, Format.MAPPING, overview=True, overview_key="bare"),
        Metric("old_value_leaks", "headline.old_value_leaks", "old-value leaks", "members answering their dropped "
               "donor value against the patch : members at risk", Scale.COUNT, Format.MAPPING, Direction.LOWER),
        Metric("donor_follow_despite_patch", "headline.donor_follow_despite_patch", "donor f:a despite patch",
               "follow:anti of the dropped donor in patched arms", Scale.FOLLOW, Format.MAPPING, Direction.LOWER,
               overview=True, overview_key="bare"),
        Metric("patch_margin_gain", "headline.patch_margin_gain", "patch margin gain", "probe margin of the patch "
               "value, patched minus unpatched arm", Scale.SHIFT, Format.MAPPING),
        Metric("controls_unchanged", "headline.controls_unchanged", "controls unchanged", "answers unchanged by a "
               "wrong-register or dummy patch", Scale.ACCURACY, Format.MAPPING),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        unchanged = {}
        for control in CONTROLS:
            same = sum(a == b for r in records
                       for a, b in zip(r.arms[control].answers, r.arms["base"].answers))
            unchanged[control] = {"rate": same / (2 * len(records)), "ci": stats.wilson(same, 2 * len(records)).as_list()}
        metrics["controls_unchanged"] = unchanged
        metrics["despite_patch"] = {p: despite_patch(records, p, arms[p]) for p in PATCHED}
        metrics["headline"] = {
            "patch_win_rate": {p: arms[p]["expected_win_rate"] for p in PATCHED},
            "old_value_leaks": {p: [arms[p]["old_value_leaks"], arms[p]["old_value_at_risk"]] for p in PATCHED},
            "donor_follow_despite_patch": {p: [d["follow"], d["anti"]] for p, d in metrics["despite_patch"].items()},
            "donor_shift_despite_patch": {p: arms[p]["donor_shift"]["mean"] for p in PATCHED},
            "patch_margin_gain": {p: d["margin_gain"]["mean"] for p, d in metrics["despite_patch"].items()},
            "controls_unchanged": {c: v["rate"] for c, v in unchanged.items()},
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
