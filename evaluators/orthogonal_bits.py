"""Orthogonal-bits evaluator (kv_orthobit2.py): the 4-way menu against two orthogonal bits.

The paper's numbers on its scale (accuracy against the member's own state or bit, item-level 95%
CIs): harv_kv's 4-way accuracy (chance .25), each bit (chance .5), and the 4-way state
reconstructed from the two bit answers; sel_txt's three as the floor. Bits near .5 say the rows
carry little; bits well above it with a 4-way near chance say the cliff is the readout's. Beside
them (matbench's additions): follow:anti and the donor margin shift of every harv_kv question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.orthogonal_bits import RECONSTRUCT
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, control_clean
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.records import PairRecord

QUESTIONS = ("q4", "bit_a", "bit_b")


def reconstructed(records: Sequence[PairRecord], encoding: str) -> dict[str, Any]:
    """Share of members whose two bit answers name their own state (kv_orthobit2's REC)."""
    per_pair = []
    for r in records:
        a, b = r.arms[f"{encoding}/bit_a"].answers, r.arms[f"{encoding}/bit_b"].answers
        per_pair.append(sum(RECONSTRUCT.get((x, y)) == v for x, y, v in zip(a, b, r.values)))
    return {"accuracy": sum(per_pair) / (2 * len(records)), "ci": stats.clustered_wilson(per_pair, 2).as_list()}


@EVALUATORS.register("orthogonal_bits")
class OrthogonalBitsEvaluator(Evaluator):
    order = 18  # the experiments after the seven contract suites
    contract = (
        *(
            Metric(
                f"harv_{q}",
                f"arms.harv_kv/{q}",
                f"harv_kv {q}",
                f"kv_orthobit2: harv_kv accuracy on {q} (chance {'.25' if q == 'q4' else '.5'}), item-level 95% CI",
                Scale.ACCURACY,
                Format.RATE_CI,
                fields=("menu_accuracy", "menu_accuracy_ci"),
                chance=0.25 if q == "q4" else 0.5,
            )
            for q in QUESTIONS
        ),
        Metric(
            "harv_reconstructed",
            "headline.reconstructed.harv_kv",
            "harv_kv reconstructed 4-way",
            "the state named by the two bit answers together (chance .25)",
            Scale.ACCURACY,
            Format.RATE_CI,
            fields=("accuracy", "ci"),
            chance=0.25,
        ),
        Metric(
            "sel_floor",
            "headline.sel_txt",
            "sel_txt floor",
            "the served text alone, per question (it names no state of the source)",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        Metric(
            "bit_a_shift",
            "arms.harv_kv/bit_a.donor_shift",
            "bit_a donor shift",
            "harv_kv's axis-bit donor margin shift (SPEC 2.7)",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        Metric(
            "bit_b_shift",
            "arms.harv_kv/bit_b.donor_shift",
            "bit_b donor shift",
            "harv_kv's diagonal-bit donor margin shift",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]
        metrics["headline"] = {
            "harv_kv": {q: arms[f"harv_kv/{q}"]["menu_accuracy"] for q in QUESTIONS},
            "sel_txt": {q: arms[f"sel_txt/{q}"]["menu_accuracy"] for q in QUESTIONS},
            "full_txt": {q: arms[f"full_txt/{q}"]["menu_accuracy"] for q in QUESTIONS},
            "reconstructed": {enc: reconstructed(records, enc) for enc in ("harv_kv", "sel_txt", "full_txt")},
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
