"""Access evaluator (SPEC 3.4): recovery of the dropped value by payload size and encoding.

The headline is the paper's metric, read the paper's way, for each question (kv_sweepmenu.py,
kv_digit.py): accuracy of the dropped value over every member answer, with an item-level 95% CI
(`stats.clustered_wilson`: the two members of a pair share their served rows), beside its chance
rate, for harv_kv and its isolation control sel_ikv (the same rows encoded without the rest of
the trajectory: materialization shows as harv_kv - sel_ikv), sel_txt and full_txt.

How each question is read:
- bin2 / dir4 / name8 (kv_sweepmenu: the first menu word of a short generation, upper-cased
  substring search): under a generating readout the texts' `paper_answers`; under the probe the
  candidate-logit argmax (matbench's readout; there is no text to parse);
- digit3 exact (kv_digit: the first three-digit number of a 12-token generation, chance ~1/900):
  read from the generated texts, so present only in runs that generated them; runs without texts
  (the probe) leave it out rather than report the probe's choice between the two donor numbers;
- digit3 above500 / first_digit (kv_digit: candidate logits after "Answer:"): the probe's answers,
  which every run records, whatever its readout;
- phrase verbatim / polarity: matbench's own questions (no released paper script), read by the
  run's readout; menu accuracy, not the paper's pair-transfer rates (.097 / .08 / .64).

Beside the paper's metric every entry keeps matbench's additions: follow:anti classes of the same
answers with their sign test, the method-of-moments recall share, and the mean donor margin shift.
`by_variant` holds every arm's full metrics (`arm_metrics`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    arm_metrics,
    control_clean,
)
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.protocol.outcomes import OUTCOMES, outcome
from matbench.protocol.readouts import GENERATING_READOUTS
from matbench.protocol.records import ArmRecord, PairRecord

ENCODINGS = ("harv_kv", "sel_ikv", "sel_txt", "full_txt")
EXACT_CHANCE = 1 / 900  # a three-digit number, 100..999
NUMBER = re.compile(r"\d{3}")  # kv_digit: re.search(r"\d{3}", o), compared with the value


def first_number(text: str) -> str | None:
    """kv_digit's parse of an exact answer: the first run of three digits in the text."""
    found = NUMBER.search(text)
    return found.group() if found else None


def _paper_or_probe(arm: ArmRecord) -> tuple | None:
    return arm.paper_answers if arm.paper_answers is not None else arm.answers


def _exact(arm: ArmRecord) -> tuple | None:
    return tuple(first_number(t) for t in arm.texts) if arm.texts is not None else None


def _probe(arm: ArmRecord) -> tuple | None:
    return arm.probe_answers


def _readout(arm: ArmRecord) -> tuple | None:
    return arm.answers


# Per question: how its answers are read, and what that reading is (recorded in the results).
READS: dict[str, tuple[Callable[[ArmRecord], tuple | None], str]] = {
    "": (
        _paper_or_probe,
        (
            "kv_sweepmenu: first menu word, upper-cased substring parse (generating readouts); "
            "candidate-logit argmax under the probe"
        ),
    ),
    "exact": (_exact, "kv_digit: first three-digit number of the generated text"),
    "above500": (_probe, "kv_digit: candidate logits after 'Answer:' (YES vs NO)"),
    "first_digit": (_probe, "kv_digit: candidate logits after 'Answer:' (1..9)"),
    "verbatim": (_readout, "matbench's own question: the run's readout"),
    "polarity": (_readout, "matbench's own question: the run's readout"),
}


def recovery(
    records: Sequence[PairRecord], arm: str, read: Callable[[ArmRecord], tuple | None], chance: float
) -> dict[str, Any] | None:
    """Accuracy of `read`'s answers against each member's own donor value, with its item-level 95%
    CI, and the classes of the same answers; None when some record has no answers to read."""
    answers = [read(r.arms[arm]) for r in records]
    if any(a is None for a in answers):
        return None
    per_pair, counts = [], dict.fromkeys(OUTCOMES, 0)
    for r, (a, b) in zip(records, answers):  # type: ignore[misc]
        values = r.arm_values(arm)
        per_pair.append((a == values[0]) + (b == values[1]))
        counts[outcome((a, b), tuple(values))] += 1
    accuracy = sum(per_pair) / (2 * len(records))
    ci = stats.clustered_wilson(per_pair, 2).as_list()
    shifts = [r.arms[arm].shift for r in records]
    return {
        "accuracy": accuracy,
        "ci": ci,
        "chance": chance,
        "correct": sum(per_pair),
        "answers": 2 * len(records),
        "recall_share": stats.recall_share(accuracy, chance),
        "recall_share_ci": [stats.recall_share(x, chance) for x in ci],
        "follow_anti": [counts["follow"], counts["anti"]],
        "follow_anti_p": stats.sign_test(counts["follow"], counts["anti"]),
        "classes": counts,
        "shift_mean": sum(shifts) / len(shifts),
    }


def _metric(
    key: str,
    question: str,
    label: str,
    what: str,
    chance: float,
    overview: bool = False,
    readouts: tuple[str, ...] | None = None,
    optional: bool = False,
) -> Metric:
    """harv_kv's entry of headline question `question` ("bin2", "digit3/exact", ...)."""
    return Metric(
        key,
        f"headline.{question}.harv_kv",
        label,
        what,
        Scale.ACCURACY,
        Format.RATE_CI,
        chance=chance,
        readouts=readouts,
        overview=overview,
        fields=("accuracy", "ci"),
        optional=optional,
    )


@EVALUATORS.register("access")
class AccessEvaluator(Evaluator):
    order = 4
    contract = (
        *(
            _metric(
                pool,
                pool,
                f"{pool} recovery",
                f"harv_kv recovery of the dropped {pool} state (kv_sweepmenu's metric): accuracy over member "
                "answers with its item-level 95% CI; the first menu word by the paper's parse under a generating "
                "readout, the probe's argmax under the probe",
                chance,
                overview=True,
            )
            for pool, chance in (("bin2", 0.5), ("dir4", 0.25), ("name8", 0.125))
        ),
        Metric(
            "bin2_shift",
            "by_variant.bin2.arms.harv_kv.donor_shift",
            "bin2 donor shift",
            "harv_kv on bin2 "
            "items: the donor margin shift toward the dropped state (SPEC 2.7), mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        # Open recovery by generation (kv_digit: 12 tokens, the first three-digit number): the exact
        # arms carry kv_digit's 12-token budget under every generating readout; a probe run has no
        # text and leaves the metric out (the probe could only choose between the two donor numbers).
        _metric(
            "digit3_exact",
            "digit3/exact",
            "digit3 exact",
            "harv_kv exact recovery of the dropped three-digit number (kv_digit's metric: the first three-digit "
            "number of a 12-token generation; chance ~1/900)",
            EXACT_CHANCE,
            readouts=GENERATING_READOUTS,
            optional=True,
        ),
        _metric(
            "digit3_above500",
            "digit3/above500",
            "digit3 > 500",
            "harv_kv: is the dropped number above 500, by kv_digit's candidate-logit probe (YES/NO after 'Answer:')",
            0.5,
        ),
        _metric(
            "digit3_first_digit",
            "digit3/first_digit",
            "digit3 first digit",
            "harv_kv: the dropped number's first digit, by kv_digit's candidate-logit probe (1-9 after 'Answer:')",
            1 / 9,
        ),
        _metric(
            "phrase_verbatim",
            "phrase/verbatim",
            "phrase verbatim (matbench)",
            "matbench's own question, no paper script: which of 12 notes the dropped source logged (menu "
            "accuracy, chance 1/12); not the paper's verbatim pair-transfer rate",
            1 / 12,
        ),
        _metric(
            "phrase_polarity",
            "phrase/polarity",
            "phrase polarity (matbench)",
            "matbench's own question, no paper script: was the dropped note good or bad news (menu accuracy, "
            "chance .5); not the paper's polarity pair-transfer rate",
            0.5,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        by_variant: dict[str, Any] = {}
        headline: dict[str, Any] = {}
        clean = True
        for variant in sorted({r.variant for r in records}):
            subset = [r for r in records if r.variant == variant]
            arms = {arm: arm_metrics(subset, arm) for arm in subset[0].arms}
            by_variant[variant] = {"n_pairs": len(subset), "arms": arms}
            clean &= control_clean(arms["control"])
            for arm in arms:
                if not arm.startswith("harv_kv"):
                    continue
                question = arm.partition("/")[2]
                key = f"{variant}/{question}" if question else variant
                read, how = READS[question]
                chance = EXACT_CHANCE if question == "exact" else 1 / len(subset[0].arm_menu(arm))
                entry = {name: recovery(subset, arm.replace("harv_kv", name, 1), read, chance) for name in ENCODINGS}
                if entry["harv_kv"] is None:
                    continue  # nothing to read this way in this run (exact recovery without generated text)
                headline[key] = {
                    "read": how,
                    "n_pairs": len(subset),
                    **entry,
                    "harv_minus_ikv": entry["harv_kv"]["accuracy"] - entry["sel_ikv"]["accuracy"],
                }
        headline["control_clean"] = clean
        return {"by_variant": by_variant, "headline": headline}
