"""Note-knob evaluator (kv_noteknob2.py): does an answer-free audit note at slot m+1 carry the dropped
value into its rows, against a neutral filler in the same slot on the same items?

The paper's numbers, on its scale (accuracy against the gold, chance 1/2, 1/900, 1/2), per setting
(bin2, num, verdict) over the groups that hold both variants: full_txt, sel_txt (the floor: the
served events as text, identical across donors) and harv_drop (decoy, knob and downstream rows of the
global prefill), filler -> note, as kv_noteknob2 prints them, with harv_complete beside them; and
harv_drop's discordant items (note right and filler wrong, and the reverse) with the exact McNemar
test of them (binomial at 1/2; kv_noteknob2 prints the counts). Read as the paper reads: under a
generating readout kv_noteknob2's `match` of each generated text (the gold anywhere in it: a
substring, or for num one of its numbers); under the probe the candidate-logit answer, except for
num, whose probe could only choose between the two donor numbers (left out, as access leaves out
exact digits). The paper's items are the members whose stimulus is the paper's: both in num and
verdict; in bin2 the member whose gold the served decoy negates (kv_noteknob2's decoy is always
the negation; data_gen/note_knob.py counterbalances it, so the other member sees its own state).
In num and verdict the two members of a pair are two of the paper's items, and McNemar counts them
as such, though they share their served text (the paired bootstrap below resamples whole groups).

Not reported: kv_noteknob2's slotlen (the knob's token count: a property of the tokenizer, which
the layout gives) and its recorded but unprinted decoy readout (harv_drop_dec).

Beside them (matbench's additions), over both members of every pair: harv_drop's follow:anti and
donor margin shift per setting and variant (`by_variant` holds every arm's `arm_metrics`), note -
filler harv_drop accuracy paired per group of shared draws with its bootstrap 95% CI, and the
control gate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.note_knob import KCARD, KINDS, SETTINGS, bin2_decoy
from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    arm_metrics,
    control_clean,
    group_contrast,
    group_pairs,
    item_index,
)
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

ARMS = ("full_txt", "sel_txt", "harv_drop", "harv_complete")
READS = {
    "text": "kv_noteknob2's match of the generated text: the gold anywhere in it (num: one of its numbers)",
    "answer": "the run's answer (no generated text): the candidate-logit argmax under the probe",
}


def match(text: str, gold: str) -> int:
    """kv_noteknob2.match, verbatim: a number must be one of the text's numbers, a word a substring."""
    if gold.isdigit():
        return int(gold in re.findall(r"\d+", text))
    return int(gold.lower() in text.lower())


def setting_of(record: PairRecord) -> str:
    return (record.variant or "").split("/")[1]


def kind_of(record: PairRecord) -> str:
    return (record.variant or "").split("/")[0]


def paper_members(record: PairRecord) -> tuple[int, ...]:
    """The members that are kv_noteknob2 items: both, but in bin2 only the one whose gold the served
    decoy negates (the other member's gold equals the decoy)."""
    if setting_of(record) == "bin2":
        decoy = bin2_decoy(item_index(record))
        return tuple(k for k in (0, 1) if record.values[k] != decoy)
    return (0, 1)


def paper_hits(record: PairRecord, arm: str) -> tuple[int, ...] | None:
    """kv_noteknob2's score of each paper member's answer under `arm` (1 right, 0 not); None for num
    without generated text."""
    entry, values = record.arms[arm], record.arm_values(arm)
    if entry.texts is not None:
        return tuple(match(entry.texts[k] or "", values[k]) for k in paper_members(record))
    if setting_of(record) == "num":
        return None
    return tuple(int(entry.answers[k] == values[k]) for k in paper_members(record))


def paper_table(records: Sequence[PairRecord], setting: str) -> dict[str, Any] | None:
    """kv_noteknob2's summary line for `setting` over its paired groups; None without one (or for num
    without generated text)."""
    groups = group_pairs([r for r in records if setting_of(r) == setting], len(KINDS), kind_of, "note", "filler")
    if not groups:
        return None
    hits = {arm: [(paper_hits(note, arm), paper_hits(filler, arm)) for note, filler in groups] for arm in ARMS}
    if any(h is None for pairs in hits.values() for pair in pairs for h in pair):
        return None
    table: dict[str, Any] = {}
    for arm, pairs in hits.items():
        table[arm] = {
            kind: sum(sum(p[j]) for p in pairs) / sum(len(p[j]) for p in pairs)  # type: ignore[arg-type]
            for j, kind in enumerate(KINDS)
        }
    flat = [(n, f) for note, filler in hits["harv_drop"] for n, f in zip(note, filler)]  # type: ignore[arg-type]
    note_only, filler_only = sum(n > f for n, f in flat), sum(f > n for n, f in flat)
    return {
        "read": READS["text" if groups[0][0].arms["harv_drop"].texts is not None else "answer"],
        "n_groups": len(groups),
        "n_items": len(flat),
        "chance": 1 / KCARD[setting],
        "arms": table,
        "harv_drop_discordant": [note_only, filler_only],
        "mcnemar_p": stats.mcnemar_exact(note_only, filler_only),
    }


@EVALUATORS.register("note_knob")
class NoteKnobEvaluator(Evaluator):
    order = 20  # the experiments after the seven contract suites
    contract = (
        Metric(
            "harv_drop",
            "headline.harv_drop",
            "harv_drop by setting/variant",
            "the paper's number: drop_mid "
            "harvest (decoy, knob and downstream rows of the global prefill) accuracy of the paper's items, "
            "filler and note on the same items (chance .5 bin2 and verdict, 1/900 num)",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        Metric(
            "harv_drop_discordant",
            "headline.harv_drop_discordant",
            "note-only:filler-only",
            "harv_drop items "
            "right with the note and wrong with the filler, and the reverse (kv_noteknob2's disc +b/-c)",
            Scale.COUNT,
            Format.MAPPING,
            Direction.NONE,
        ),
        Metric(
            "mcnemar_p",
            "headline.mcnemar_p",
            "McNemar p",
            "exact two-sided McNemar test of harv_drop note vs filler on the discordant items, per setting",
            Scale.P_VALUE,
            Format.MAPPING,
            Direction.NONE,
        ),
        Metric(
            "sel_txt_floor",
            "headline.sel_txt_floor",
            "sel_txt floor",
            "the same served events re-read as text (the paper's sel_drop): the floor, donor-blind by construction",
            Scale.ACCURACY,
            Format.MAPPING,
            Direction.NONE,
        ),
        *(
            Metric(
                f"note_minus_filler_{s}",
                f"headline.note_minus_filler.{s}",
                f"{s} note − filler",
                f"{s}: harv_drop accuracy with the note minus with the filler, both members, paired per group of "
                "shared draws (bootstrap 95% CI)",
                Scale.DIFFERENCE,
                Format.SIGNED_CI,
                optional=True,
            )
            for s in SETTINGS
        ),
        Metric(
            "harv_drop_classes",
            "headline.harv_drop_classes",
            "harv_drop f:a",
            "harv_drop follow:anti per setting and variant",
            Scale.FOLLOW,
            Format.MAPPING,
        ),
        Metric(
            "harv_drop_shift",
            "headline.harv_drop_shift",
            "harv_drop donor shift",
            "mean harv_drop donor margin shift per setting and variant (SPEC 2.7)",
            Scale.SHIFT,
            Format.MAPPING,
        ),
        Metric(
            "comprehension",
            "headline.comprehension",
            "comprehension",
            "full_txt accuracy of the paper's items per setting and variant",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        cells = [
            (s, k) for s in SETTINGS for k in KINDS if any(setting_of(r) == s and kind_of(r) == k for r in records)
        ]
        by_variant = {
            f"{s}/{k}": {
                arm: arm_metrics([r for r in records if setting_of(r) == s and kind_of(r) == k], arm)
                for arm in (*ARMS, "control")
            }
            for s, k in cells
        }
        metrics["by_variant"] = by_variant
        paper = {s: paper_table(records, s) for s in SETTINGS if any(setting_of(r) == s for r in records)}
        metrics["paper"] = paper
        tables = {s: t for s, t in paper.items() if t is not None}

        def flat(arm: str) -> dict[str, float] | None:  # None (a dash) without a paired group
            return {f"{s}/{k}": t["arms"][arm][k] for s, t in tables.items() for k in KINDS} or None

        metrics["headline"] = {
            "harv_drop": flat("harv_drop"),
            "harv_drop_discordant": {s: t["harv_drop_discordant"] for s, t in tables.items()} or None,
            "mcnemar_p": {s: t["mcnemar_p"] for s, t in tables.items()} or None,
            "sel_txt_floor": flat("sel_txt"),
            "harv_complete": flat("harv_complete"),
            "comprehension": flat("full_txt"),
            "note_minus_filler": {
                s: group_contrast(
                    [r for r in records if setting_of(r) == s], len(KINDS), kind_of, "note", "filler", "harv_drop"
                )
                for s in paper
            },
            "harv_drop_classes": {
                v: f"{c['follow']}:{c['anti']}"
                for v, arms in by_variant.items()
                for c in [arms["harv_drop"]["classes"]]
            },
            "harv_drop_shift": {v: arms["harv_drop"]["donor_shift"]["mean"] for v, arms in by_variant.items()},
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
