"""Harvest free-form evaluator (kv_harvest3.py, cross_judge.py): free answers on real dialogs, and the window dose.

Each answer is read four ways, every one reported: `judge` (the judge model's yes/no, where the run
named one with `--judge`: the paper's reading), `contains` (matbench's parse: the gold as a whole
phrase in the answer), `paper_contains` (the gold as an upper-cased substring) and `f1` (SQuAD-style
token F1 against the gold, LoCoMo's own QA metric). The headline reading is the judge where there is
one, else `contains`.

Per corpus and window: accuracy per arm (item-level Wilson 95% CI), harv - iso and harv - text with
95% intervals clustered by conversation (REALTALK: by participant component, descriptive), TOST at
+-.05 on LoCoMo, and the strong stratum (kv_harvest3's primary contrast). The dose: for each window
w > 0, harv - iso at w minus harv - iso at window 0 on the same QAs, clustered likewise.

Items are unpaired (the dialog is the same in both members), so there are no donor classes and no
donor margin shift: the harvest suite's injected items are the paired positive control.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.harvest_freeform import WINDOWS
from matbench.evaluators.base import EVALUATORS, Evaluator
from matbench.evaluators.harvest import clustered_contrast, clusters_of
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import ArmRecord, PairRecord

ARMS = ("harv", "iso", "text", "none", "goldev")


def normalize_answer(text: str) -> list[str]:
    """SQuAD's normalization (lower case, no punctuation, no articles), as tokens."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


def token_f1(answer: str, gold: str) -> float:
    pred, ref = normalize_answer(answer), normalize_answer(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or not common:
        return float(pred == ref)
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


# How an arm's answer scores, member A (both members are the same dialog).
READINGS: dict[str, Callable[[ArmRecord, str], float | None]] = {
    "judge": lambda a, gold: float(a.judged[0]) if a.judged is not None else None,
    "contains": lambda a, gold: float(a.answers[0] == gold),
    "paper_contains": lambda a, gold: float(a.paper_answers[0] == gold) if a.paper_answers is not None else None,
    "f1": lambda a, gold: token_f1(a.texts[0], gold) if a.texts is not None else None,
}


def parts(record: PairRecord) -> dict[str, str]:
    """corpus, conversation, stratum, qa and window of `natural/<corpus>/<conv>/<stratum>/q<n>/w<k>`."""
    _, corpus, conversation, stratum, qa, window = record.variant.split("/")
    return {"corpus": corpus, "conversation": conversation, "stratum": stratum, "qa": qa, "window": window}


def readings_of(records: Sequence[PairRecord]) -> list[str]:
    """The readings every arm of every record has, headline first."""
    return [
        name
        for name in READINGS
        if all(READINGS[name](a, r.values[0]) is not None for r in records for a in r.arms.values())
    ]


def scores(records: Sequence[PairRecord], arm: str, reading: str) -> list[float]:
    return [READINGS[reading](r.arms[arm], r.values[0]) for r in records]  # type: ignore[misc]


def window_summary(records: Sequence[PairRecord], corpus: str, readings: list[str]) -> dict[str, Any]:
    clusters, unit = clusters_of(records, corpus)
    tost = corpus != "realtalk"
    n = len(records)
    out: dict[str, Any] = {"n_items": n, "clustered_by": unit, "n_clusters": len(set(clusters)), "readings": {}}
    for reading in readings:
        per_arm = {arm: scores(records, arm, reading) for arm in ARMS}
        arms = {}
        for arm, values in per_arm.items():
            mean = sum(values) / n
            binary = reading != "f1"
            arms[arm] = {"mean": mean, **({"ci": stats.wilson(round(sum(values)), n).as_list()} if binary else {})}
        summary = {
            "arms": arms,
            "harv_minus_iso": clustered_contrast(
                [h - i for h, i in zip(per_arm["harv"], per_arm["iso"])], clusters, unit, tost
            ),
            "harv_minus_text": clustered_contrast(
                [h - t for h, t in zip(per_arm["harv"], per_arm["text"])], clusters, unit, tost=False
            ),
        }
        strong = [k for k, r in enumerate(records) if parts(r)["stratum"] == "strong"]
        if strong:
            summary["strong"] = {
                "n_items": len(strong),
                "harv_minus_iso": clustered_contrast(
                    [per_arm["harv"][k] - per_arm["iso"][k] for k in strong], [clusters[k] for k in strong], unit, tost
                ),
            }
        out["readings"][reading] = summary
    return out


def dose(records: Sequence[PairRecord], corpus: str, window: int, reading: str) -> dict[str, Any] | None:
    """(harv - iso at `window`) - (harv - iso at window 0), paired by QA, clustered by conversation."""
    by_qa: dict[tuple[str, str], dict[str, PairRecord]] = {}
    for r in records:
        p = parts(r)
        by_qa.setdefault((p["conversation"], p["qa"]), {})[p["window"]] = r
    both = [(c[f"w{window}"], c["w0"]) for c in by_qa.values() if f"w{window}" in c and "w0" in c]
    if not both:
        return None

    def gap(r: PairRecord) -> float:
        return READINGS[reading](r.arms["harv"], r.values[0]) - READINGS[reading](r.arms["iso"], r.values[0])

    clusters, unit = clusters_of([w for w, _ in both], corpus)
    return {"n_qas": len(both), **clustered_contrast([gap(w) - gap(b) for w, b in both], clusters, unit, tost=False)}


@EVALUATORS.register("harvest_freeform")
class HarvestFreeformEvaluator(Evaluator):
    order = 30
    paired = False  # kv_harvest3 asks natural QAs only; harvest's injected items are the paired control
    contract = (
        Metric(
            "locomo",
            "headline.locomo_harv_minus_iso",
            "harv − iso (LoCoMo, w0)",
            "free-answer accuracy with the "
            "carrier rows of the full-dialog prefill minus the same turns encoded alone in runs with no header "
            "(kv_harvest3's iso), window 0; judged where the run named a judge, else the gold named in the "
            "answer; 95% CI clustered by conversation",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.ZERO,
            optional=True,
        ),
        Metric(
            "locomo_dose",
            "headline.locomo_dose",
            "dose (LoCoMo)",
            "harv − iso at each carrier window ±w minus at window 0, the same QAs (kv_harvest3 --win)",
            Scale.DIFFERENCE,
            Format.MAPPING,
            optional=True,
        ),
        Metric(
            "realtalk",
            "headline.realtalk_harv_minus_iso",
            "harv − iso (REALTALK, w0)",
            "as for LoCoMo, descriptive: clustered by the 3 participant components",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
            optional=True,
        ),
        Metric(
            "locomo_arms",
            "headline.locomo_arms",
            "arm accuracy (LoCoMo, w0)",
            "accuracy of each arm at window "
            "0 under the headline reading: none (floor), text, iso, harv, goldev (oracle)",
            Scale.ACCURACY,
            Format.MAPPING,
            optional=True,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        readings = readings_of(records)
        metrics: dict[str, Any] = {"reading": readings[0], "readings": readings, "natural": {}}
        headline: dict[str, Any] = {"reading": readings[0]}
        for corpus in ("locomo", "realtalk"):
            mine = [r for r in records if parts(r)["corpus"] == corpus]
            if not mine:
                continue
            windows = [w for w in WINDOWS if any(parts(r)["window"] == f"w{w}" for r in mine)]
            by_window = {
                f"w{w}": window_summary([r for r in mine if parts(r)["window"] == f"w{w}"], corpus, readings)
                for w in windows
            }
            doses = {f"w{w}": {reading: dose(mine, corpus, w, reading) for reading in readings} for w in windows if w}
            metrics["natural"][corpus] = {"by_window": by_window, "dose": doses}
            if "w0" in by_window:
                top = by_window["w0"]["readings"][readings[0]]
                headline[f"{corpus}_harv_minus_iso"] = {k: top["harv_minus_iso"][k] for k in ("mean", "ci")}
                headline[f"{corpus}_arms"] = {arm: s["mean"] for arm, s in top["arms"].items()}
            headline[f"{corpus}_dose"] = {w: d[readings[0]]["mean"] for w, d in doses.items() if d[readings[0]]}
        metrics["headline"] = headline
        return metrics
