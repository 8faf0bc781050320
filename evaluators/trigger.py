"""Trigger evaluator (SPEC 3.2; kv_parabank's analysis contract): which constructions write, per
construction of the 16-construction bank.

Per construction, on the paper's scale:
- write-through = kv-arm accuracy against the gold (chance .5): each member's answer against its
  own donor value, over both members of every pair, with the item-level (clustered Wilson) 95% CI;
- comprehension = txt-arm accuracy (the source visible), same interval; comprehended when the
  interval's lower bound is above .5.

Classes (kv_parabank: "written-through (kv high, txt high) / understands-but-no-write-through (kv
~chance, txt high) / not-understood (txt low; excluded from claims)"): W = comprehended and
write-through significantly above .5; U = comprehended, write-through not; N = not comprehended.

"Significantly above .5" is a one-sided exact sign test on pairs, Benjamini-Hochberg across the 16
constructions (W when q < .05). A pair's score is how many of its two members answer right: 2
(both right), 1 (one right) or 0 (both wrong); its pair accuracy exceeds .5 exactly when both are
right, falls below it exactly when both are wrong, so "accuracy > .5" over pairs is the sign test
of both-right against both-wrong pairs (one-right pairs are ties). The pair is the unit (its two
members share every served token and are not independent answers), and the test is exact: where
the kept rows carry nothing from the dropped source, both members see the same tokens and give
the same answer (one right, or none), so a donor-blind model never scores above .5. With every
answer parsed, both-right pairs are the follow pairs and both-wrong pairs the anti pairs.

Beside the paper's numbers (matbench's additions): the kv follow rate, the same classes from the
kv donor shift (`class_shift`: positive vs negative shifts, one-sided sign test, BH; on small
models the only signal there is), and under a generating readout the paper's own parse of the same
texts (`paper_parse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import PairRecord

FDR = 0.05
CHANCE = 0.5
CLASSES = ("W", "U", "N")


def classify(comprehended: bool, q: float) -> str:
    if not comprehended:
        return "N"
    return "W" if q < FDR else "U"


def pair_scores(records: Sequence[PairRecord], arm: str, paper: bool = False) -> list[int]:
    """Per pair, how many of its two members answer their own donor value (0, 1 or 2); `paper`:
    the answers of the paper's parse."""
    out = []
    for r in records:
        answers = r.arms[arm].paper_answers if paper else r.arms[arm].answers
        out.append(sum(a == v for a, v in zip(answers, r.arm_values(arm))))
    return out


def accuracy_test(scores: list[int]) -> dict[str, Any]:
    """Accuracy over members with its item-level 95% CI, and the one-sided exact sign test of
    both-right against both-wrong pairs (H1: accuracy above .5)."""
    right, wrong = scores.count(2), scores.count(0)
    return {
        "accuracy": sum(scores) / (2 * len(scores)),
        "ci": stats.clustered_wilson(scores, 2).as_list(),
        "both_right": right,
        "both_wrong": wrong,
        "p": stats.binomial_greater(right, right + wrong, CHANCE),
    }


@EVALUATORS.register("trigger")
class TriggerEvaluator(Evaluator):
    order = 2
    contract = (
        Metric(
            "classes",
            "headline.classes",
            "W/U/N",
            "constructions by class: W write-through (kv accuracy) "
            "significantly above .5 (BH q < .05) and comprehended, U comprehended only, N not comprehended",
            Scale.COUNT,
            Format.COUNTS,
            overview=True,
        ),
        Metric(
            "write_through",
            "headline.write_through_accuracy",
            "write-through",
            "kv-arm accuracy against the gold per construction (the paper's write-through; chance .5)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
        ),
        Metric(
            "write_through_paper",
            "headline.write_through_accuracy_paper",
            "write-through (paper parse)",
            "the same, the generated answers read with the paper's parse (upper-cased substrings, last menu word)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
            readouts=GENERATING_READOUTS,
        ),
        Metric(
            "comprehension",
            "headline.comprehension_summary",
            "comprehension",
            "txt-arm accuracy (every event served): mean and minimum over the constructions",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
            comprehension=True,
        ),
        Metric(
            "classes_shift",
            "headline.classes_shift",
            "W/U/N by shift",
            "the same classes from the kv donor shift",
            Scale.COUNT,
            Format.COUNTS,
        ),
        Metric(
            "kv_shift_toward_donor",
            "headline.kv_shift_toward_donor",
            "shift → donor",
            "constructions whose kv donor shift leans toward the donor (one-sided sign test, BH q < .05)",
            Scale.COUNT,
            overview=True,
        ),
        Metric(
            "kv_shift_mean",
            "headline.kv_shift_mean",
            "kv shift mean",
            "mean kv donor shift over all pairs",
            Scale.SHIFT,
        ),
        CONTROL_CLEAN,
        Metric(
            "by_construction",
            "by_construction",
            "per construction",
            "write-through (kv accuracy), class, "
            "comprehension, follow rate and kv shift of each construction (the leaderboard's heat maps)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=CHANCE,
            in_scorecard=False,
        ),
    )

    @classmethod
    def decide(cls, metric: Metric, value: Any) -> int | bool | None:
        """Both headline metrics count constructions that passed a BH-corrected test: one is a
        yes (W write-through constructions, or shifts toward the donor), none is undecided."""
        if metric.key == "classes":
            return 1 if value["W"] > 0 else 0
        if metric.key == "kv_shift_toward_donor":
            return 1 if value > 0 else 0
        return super().decide(metric, value)

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        constructions = sorted({r.variant for r in records})
        paper = "paper_parse" in metrics["arms"]["kv"]
        rows = {}
        for variant in constructions:
            subset = [r for r in records if r.variant == variant]
            kv, txt = arm_metrics(subset, "kv"), arm_metrics(subset, "txt")
            write = accuracy_test(pair_scores(subset, "kv"))
            shift = kv["donor_shift"]
            rows[variant] = {
                "n_pairs": len(subset),
                "write_through_accuracy": write["accuracy"],
                "write_through_ci": write["ci"],
                "write_pairs": {"both_right": write["both_right"], "both_wrong": write["both_wrong"]},
                "write_p": write["p"],
                "comprehension": txt["menu_accuracy"],
                "comprehension_ci": txt["menu_accuracy_ci"],
                "comprehended": txt["menu_accuracy_ci"][0] > CHANCE,
                "follow_rate": kv["classes"]["follow"] / len(subset),
                "kv_classes": kv["classes"],
                "kv_donor_shift": shift,
                "shift_p": stats.binomial_greater(shift["positive"], shift["positive"] + shift["negative"], CHANCE),
            }
            if paper:
                paper_write = accuracy_test(pair_scores(subset, "kv", paper=True))
                rows[variant]["paper_parse"] = {
                    "write_through_accuracy": paper_write["accuracy"],
                    "write_through_ci": paper_write["ci"],
                    "comprehension": txt["paper_parse"]["menu_accuracy"],
                    "comprehension_ci": txt["paper_parse"]["menu_accuracy_ci"],
                }
        for key, q_key in (("write_p", "write_q"), ("shift_p", "shift_q")):
            for variant, q in zip(constructions, stats.benjamini_hochberg([rows[v][key] for v in constructions])):
                rows[variant][q_key] = q
        for row in rows.values():
            row["class"] = classify(row["comprehended"], row["write_q"])
            row["class_shift"] = classify(row["comprehended"], row["shift_q"])
        metrics["by_construction"] = rows

        def counts(key: str, family: str = "") -> dict[str, int]:
            return {c: sum(r[key] == c for v, r in rows.items() if v.startswith(family)) for c in CLASSES}

        comprehension = [r["comprehension"] for r in rows.values()]
        families = sorted({v.split("/")[0] for v in constructions})
        metrics["headline"] = {
            "classes": counts("class"),
            "classes_by_family": {f: counts("class", f + "/") for f in families},
            "any_written": any(r["class"] == "W" for r in rows.values()),
            "classes_shift": counts("class_shift"),
            "write_through_accuracy": {v: r["write_through_accuracy"] for v, r in rows.items()},
            **(
                {
                    "write_through_accuracy_paper": {
                        v: r["paper_parse"]["write_through_accuracy"] for v, r in rows.items()
                    }
                }
                if paper
                else {}
            ),
            "comprehension": {v: r["comprehension"] for v, r in rows.items()},
            "comprehension_summary": {"mean": sum(comprehension) / len(comprehension), "min": min(comprehension)},
            "follow_rate": {v: r["follow_rate"] for v, r in rows.items()},
            # The shift evidence on its own, before comprehension gates a class: on small models
            # whose full-text arm answers at chance it is the only signal there is (SPEC 2.7).
            "kv_shift_toward_donor": sum(r["shift_q"] < FDR for r in rows.values()),
            "kv_shift_mean": metrics["arms"]["kv"]["donor_shift"]["mean"],
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
