"""Variable-tracking evaluator (kv_vartrack.py, kv_vardecomp.py): chain resolution by hops and span.

The paper's tables on its scale (accuracy against the member's own V; the probe chooses between
the two members' values, chance .5): every arm per cell (h1/h2/h4 x near/far), with item-level
95% CIs. kv_vardecomp's decomposition, paired per item over every cell (bootstrap 95% CIs):
routing = sel_txt - full_txt, pre-digestion = harv_kv - sel_txt, joint conditioning = harv_kv -
sel_ikv. Beside them (matbench's additions): follow:anti and the donor margin shift of every arm
(`arms`), and harv_kv's shift per cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.data_gen.var_tracking import CELLS
from matbench.evaluators.base import EVALUATORS, Evaluator, arm_difference, arm_metrics
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

ARMS = ("full_txt", "sel_txt", "harv_kv", "sel_ikv", "iso", "anch")
CHANCE = 0.5
# kv_vardecomp.py's decomposition: (name, arm, minus arm).
DECOMPOSITION = (
    ("routing", "sel_txt", "full_txt"),
    ("pre_digestion", "harv_kv", "sel_txt"),
    ("joint_conditioning", "harv_kv", "sel_ikv"),
)
CELL_NAMES = tuple(f"h{hops}/{'far' if far else 'near'}" for hops, far in CELLS)


def _per_cell(name: str, arm: str, what: str) -> Metric:
    return Metric(
        f"{arm}_by_cell", f"headline.table_by_arm.{arm}", name, what, Scale.ACCURACY, Format.MAPPING, chance=CHANCE
    )


@EVALUATORS.register("var_tracking")
class VarTrackingEvaluator(Evaluator):
    order = 17  # the experiments after the seven contract suites
    contract = (
        _per_cell(
            "harv_kv by cell",
            "harv_kv",
            "kv_vartrack's harvest: the chain's rows from the global prefill, accuracy per cell (hops / span)",
        ),
        _per_cell(
            "iso by cell",
            "iso",
            "every step encoded after the header alone, all served: where independent encoding breaks as hops grow",
        ),
        _per_cell("full_txt by cell", "full_txt", "everything as text (the ceiling with distractors)"),
        *(
            Metric(
                name,
                f"headline.decomposition.{name}",
                f"{name.replace('_', '-')} ({arm} − {base})",
                f"kv_vardecomp: {arm} − {base} accuracy, paired per item over every cell (bootstrap 95% CI)",
                Scale.DIFFERENCE,
                Format.SIGNED_CI,
                Direction.NONE,
            )
            for name, arm, base in DECOMPOSITION
        ),
        Metric(
            "harv_kv_shift",
            "arms.harv_kv.donor_shift",
            "harv_kv donor shift",
            "harv_kv donor margin shift (SPEC 2.7) toward the member's own V, mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        cells = [c for c in CELL_NAMES if any(r.variant == c for r in records)]
        by_cell = {c: {arm: arm_metrics([r for r in records if r.variant == c], arm) for arm in ARMS} for c in cells}
        metrics["by_cell"] = by_cell

        metrics["headline"] = {
            "table": {c: {arm: by_cell[c][arm]["menu_accuracy"] for arm in ARMS} for c in cells},
            "table_by_arm": {arm: {c: by_cell[c][arm]["menu_accuracy"] for c in cells} for arm in ARMS},
            "decomposition": {name: arm_difference(records, arm, base) for name, arm, base in DECOMPOSITION},
        }
        return metrics
