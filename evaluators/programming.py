"""Programming evaluator (SPEC 3.5): donor-follow per carrier kind and serve set, nld - pas.

Items come in groups of ten that share every draw (five carrier kinds x two templates), so the
carrier kinds are compared *paired*: nld - pas per (group, template), with a bootstrap CI over
groups, an exact McNemar test on the paired follow outcomes, and the same contrast on the donor
shift (the signal of models too small to flip an argmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import ArmRecord, PairRecord

GROUP = 10  # items per group of shared draws (data_gen/programming.py)


def _follow_rate(metrics: dict) -> float:
    return metrics["classes"]["follow"] / metrics["n_pairs"]


def _index(record: PairRecord) -> int:
    return int(record.item_id.rsplit("-", 1)[1])


def paired_contrast(records: Sequence[PairRecord], kind: str, base: str, arm: str) -> dict[str, Any] | None:
    """`kind` - `base` on `arm`, paired by (group, template)."""
    cells: dict[tuple[int, str], dict[str, ArmRecord]] = {}
    for r in records:
        k, template = r.variant.split("/")
        cells.setdefault((_index(r) // GROUP, template), {})[k] = r.arms[arm]
    pairs = [(c[kind], c[base], group) for (group, _), c in sorted(cells.items()) if kind in c and base in c]
    if not pairs:
        return None
    follow = [(a.outcome == "follow", b.outcome == "follow") for a, b, _ in pairs]
    diff = [float(x) - float(y) for x, y in follow]
    shift = [a.shift - b.shift for a, b, _ in pairs]
    groups = [g for *_, g in pairs]
    return {
        "n_paired": len(pairs),
        "follow_difference": sum(diff) / len(diff),
        "follow_difference_ci": stats.cluster_bootstrap_mean_ci(diff, groups, seed=0).as_list(),
        "mcnemar_p": stats.mcnemar_exact(sum(x and not y for x, y in follow), sum(y and not x for x, y in follow)),
        "shift_difference": sum(shift) / len(shift),
        "shift_difference_ci": stats.cluster_bootstrap_mean_ci(shift, groups, seed=0).as_list(),
        "shift_wilcoxon_p": stats.wilcoxon_p(shift),
    }


@EVALUATORS.register("programming")
class ProgrammingEvaluator(Evaluator):
    order = 5
    contract = (
        Metric("nld_minus_pas", "nld_minus_pas.both", "nld − pas", "carrier + review served: donor-follow rate of the "
               "natural-language directive minus the passive mention, paired by group (cluster bootstrap CI)",
               Scale.DIFFERENCE, Format.SIGNED_CI, fields=("follow_difference", "follow_difference_ci"), overview=True),
        CONTROL_CLEAN,
        Metric("follow_rate", "headline.follow_rate", "follow rate by carrier", "donor-follow rate per carrier kind "
               "and serve set (the leaderboard's bar chart)", Scale.FOLLOW_RATE, Format.MAPPING, in_scorecard=False),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        kinds = sorted({r.variant.split("/")[0] for r in records})
        by_kind = {}
        for kind in kinds:
            subset = [r for r in records if r.variant.split("/")[0] == kind]
            by_kind[kind] = {arm: arm_metrics(subset, arm) for arm in subset[0].arms}
        metrics["by_carrier"] = by_kind
        follow = {kind: {arm: _follow_rate(m) for arm, m in arms.items()} for kind, arms in by_kind.items()}
        contrasts = {arm: paired_contrast(records, "nld", "pas", arm) for arm in ("carrier", "both", "both@L")}
        metrics["nld_minus_pas"] = contrasts
        metrics["headline"] = {
            "follow_rate": follow,
            "nld_minus_pas_both": contrasts["both"]["follow_difference"] if contrasts["both"] else None,
            "nld_minus_pas_both_ci": contrasts["both"]["follow_difference_ci"] if contrasts["both"] else None,
            "nld_minus_pas_shift": contrasts["both"]["shift_difference"] if contrasts["both"] else None,
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
