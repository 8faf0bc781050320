"""Recompute-matrix evaluator (kv_recomp.py): after an out-of-band update of the dropped source, which
write-time state (A_mat materialized, B_oper operands only, C_high high cardinality) is fixed by
which appended delta (stale / d_src / d_mtn / d_der / oracle)?

The paper's matrix, on its scale: per row and arm, the share of answers equal to the arm's gold
(stale: the write-time answer, kv_recomp's stale_gold, which is each member's donor value; every
delta arm: the current answer after the update), with item-level 95% CIs (the two members of a
pair share their served text and delta). Read two ways: the run's answers (the readout's parse; the
probe's candidate argmax), and under a generating readout kv_recomp's own score of each generated
text (A and B: `pick2`, the later of the two menu words; C: the gold among the text's numbers),
the figure comparable with the paper's (B's prompt is the paper's under `--readout trace`). Beside
it the paper's attributions, paired per item: d_der - d_src (does the delta need the derived
answer, i.e. a recompute, or does the source update suffice?) and oracle - d_src.

matbench's additions, per row and arm: the donor classes (follow: each member answers its own
dropped write-time value) with the donor margin shift (SPEC 2.7), and in the delta arms the
old-value leaks (members whose write-time answer differs from the current one answering it): does
the dropped donor still steer an answer the delta should settle? And the control gate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.recompute_matrix import ARMS, DELTAS, ROWS
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean, mean_with_ci
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import PairRecord

READS = {
    "answer": "the run's answers (the readout's parse; the probe's candidate argmax)",
    "text": "kv_recomp's score of the generated text: pick2 (the later menu word) in A and B, the gold among "
    "the text's numbers in C",
}
CONTRASTS = (("d_der", "d_src"), ("oracle", "d_src"))


def row_of(record: PairRecord) -> str:
    return record.variant or ""


def gold(record: PairRecord, arm: str, member: int) -> str:
    """The arm's gold for `member`: the current answer where the arm delivers the update, else the
    member's write-time answer (its donor value)."""
    expected = record.arms[arm].expected
    return expected if expected is not None else record.arm_values(arm)[member]


def pick2(text: str, a: str, b: str) -> str | None:
    """kv_recomp.pick2, verbatim: of two words, the one whose last occurrence comes later."""
    u = text.upper()
    ia, ib = u.rfind(a), u.rfind(b)
    if ia < 0 and ib < 0:
        return None
    if ia < 0:
        return b
    if ib < 0:
        return a
    return a if ia > ib else b


def paper_score(record: PairRecord, arm: str, member: int, text: str) -> int:
    """kv_recomp's `score` of one generated text against the arm's gold."""
    target = gold(record, arm, member)
    if row_of(record) == "C_high":
        return int(target in re.findall(r"\d+", text))
    first, second = record.menu
    return int(pick2(text, first, second) == target)


def item_hits(record: PairRecord, arm: str, read: str) -> int | None:
    """How many of the pair's two members answer the arm's gold (None: no text to read)."""
    entry = record.arms[arm]
    if read == "text":
        if entry.texts is None:
            return None
        return sum(paper_score(record, arm, m, entry.texts[m] or "") for m in (0, 1))
    return sum(entry.answers[m] == gold(record, arm, m) for m in (0, 1))


def cell(records: Sequence[PairRecord], arm: str, read: str = "answer") -> dict[str, Any] | None:
    """One matrix cell: the share of answers equal to the gold, with its item-level 95% CI."""
    per_item = [item_hits(r, arm, read) for r in records]
    if any(h is None for h in per_item):
        return None
    hits = sum(per_item)  # type: ignore[arg-type]
    n = 2 * len(per_item)
    return {"rate": hits / n, "hits": hits, "n": n, "ci": stats.clustered_wilson(per_item, 2).as_list()}


def rows_present(records: Sequence[PairRecord]) -> list[str]:
    return [row for row in ROWS if any(row_of(r) == row for r in records)]


def matrix(records: Sequence[PairRecord], read: str = "answer") -> dict[str, dict[str, Any]] | None:
    """kv_recomp's RECOMPUTE-NECESSITY MATRIX: per row and arm, a `cell`; None when `read` is
    "text" and the run generated none."""
    out = {}
    for row in rows_present(records):
        subset = [r for r in records if row_of(r) == row]
        cells = {arm: cell(subset, arm, read) for arm in ARMS}
        if any(c is None for c in cells.values()):
            return None
        out[row] = cells
    return out


def contrast(records: Sequence[PairRecord], arm: str, base: str) -> dict[str, Any]:
    """`arm`'s accuracy minus `base`'s, paired per item (the same served rows, only the delta
    differs), with a bootstrap 95% CI over the items."""
    diffs = [(item_hits(r, arm, "answer") - item_hits(r, base, "answer")) / 2 for r in records]  # type: ignore[operator]
    return {"n_items": len(diffs), **mean_with_ci(diffs)}


def flat(table: dict[str, dict[str, Any]] | None, key) -> dict[str, Any] | None:
    """{"row/arm": key(cell)} over a per-row, per-arm table; None without one."""
    if table is None:
        return None
    return {f"{row}/{arm}": key(value) for row, arms in table.items() for arm, value in arms.items()}


@EVALUATORS.register("recompute_matrix")
class RecomputeMatrixEvaluator(Evaluator):
    order = 21  # the experiments after the seven contract suites
    contract = (
        Metric(
            "matrix",
            "headline.matrix",
            "recompute matrix",
            "the paper's number (kv_recomp): per row and arm, "
            "answers equal to the gold (stale: the write-time answer; d_src, d_mtn, d_der, oracle: the current "
            "one after the update), as the run read them; item-level 95% CIs in paper_matrix",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        Metric(
            "matrix_paper_score",
            "headline.matrix_paper_score",
            "matrix (kv_recomp score)",
            "the same, each "
            "generated text scored as kv_recomp scores it (pick2: the later menu word; C: the gold among the "
            "text's numbers): the figure comparable with the paper's (row B's prompt is the paper's under the "
            "trace readout)",
            Scale.ACCURACY,
            Format.MAPPING,
            readouts=GENERATING_READOUTS,
            optional=True,
        ),
        Metric(
            "delta_contrasts",
            "headline.delta_contrasts",
            "d_der − d_src, oracle − d_src",
            "per row, the derived "
            "delta's and the oracle's accuracy minus the source delta's, paired per item: what the source update "
            "alone leaves for a recompute to do",
            Scale.DIFFERENCE,
            Format.MAPPING,
        ),
        Metric(
            "donor_classes",
            "headline.donor_classes",
            "donor f:a",
            "per row and arm, follow:anti of the dropped "
            "write-time value (matbench): does it still steer an answer the delta should settle?",
            Scale.FOLLOW,
            Format.MAPPING,
            Direction.NONE,
        ),
        Metric(
            "donor_shift",
            "headline.donor_shift",
            "donor shift",
            "per row and arm, the mean donor margin shift (SPEC 2.7; matbench)",
            Scale.SHIFT,
            Format.MAPPING,
            Direction.NONE,
        ),
        Metric(
            "old_value_leaks",
            "headline.old_value_leaks",
            "old-value leaks",
            "per row and delta arm, members "
            "whose write-time answer differs from the current one answering it : such members",
            Scale.COUNT,
            Format.MAPPING,
            Direction.LOWER,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        present = rows_present(records)
        by_row = {
            row: {arm: arm_metrics([r for r in records if row_of(r) == row], arm) for arm in (*ARMS, "control")}
            for row in present
        }
        metrics["by_row"] = by_row
        answers, texts = matrix(records), matrix(records, "text")
        metrics["paper_matrix"] = {"read": READS["answer"], "rows": answers}
        if texts is not None:
            metrics["paper_matrix_text"] = {"read": READS["text"], "rows": texts}
        contrasts = {
            row: {f"{a}-{b}": contrast([r for r in records if row_of(r) == row], a, b) for a, b in CONTRASTS}
            for row in present
        }
        metrics["contrasts"] = contrasts
        metrics["headline"] = {
            "matrix": flat(answers, lambda c: c["rate"]),
            "matrix_paper_score": flat(texts, lambda c: c["rate"]),
            "delta_contrasts": flat(contrasts, lambda c: c["mean"]),
            "donor_classes": flat(by_row, lambda m: [m["classes"]["follow"], m["classes"]["anti"]]),
            "donor_shift": flat(by_row, lambda m: m["donor_shift"]["mean"]),
            "old_value_leaks": {
                f"{row}/{arm}": [by_row[row][arm]["old_value_leaks"], by_row[row][arm]["old_value_at_risk"]]
                for row in present
                for arm in DELTAS
            },
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
