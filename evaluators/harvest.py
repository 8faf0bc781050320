"""Harvest evaluator (SPEC 3.6; the paper's kv_harvest4.py and kv_harvnative.py).

Natural items: recognition accuracy per arm, and harv - iso: what the full-history prefill adds
to the carrier rows beyond their own text (the paper's iso: each turn encoded alone, no header).
LoCoMo carries the inference: a 95% interval clustered by conversation and a TOST equivalence
test at +-0.05 through the 90% clustered interval (kv_harvest4.py's pre-registration). REALTALK
is descriptive: its 10 chats join 10 participants into 3 connected components (x8_audit2.py), so
its interval is clustered by component and no equivalence verdict is drawn; per component and
leave-one-participant-out means go beside it. Both corpora report the strong stratum (a carrier
shares a word with the question that occurs in at most two sessions; kv_harvest3.py's primary
stratum) beside the whole.

Readings: every answer the run recorded is scored. The headline reads the paper's way where the
run has one: under a generating readout, the paper's parse of the text (`paper_answers`: the
first standalone A/B of the upper-cased text, kv_harvest4.py `pick_ab`; the paper generated 8
tokens); otherwise matbench's probe (candidate probabilities of " A"+"A" after "Answer:"), which
is not the paper's native readout (the logit of " A" vs " B" with no "Answer:",
kv_harvnative.py) and is labelled as such. The other readings of the same run (matbench's
parse, the probe, and first-token logits where the engine records them) are reported beside it.

Injected items (the positive control): follow / anti of the counterfactual donor pair for `harv`
and `iso`, with the paper's parse where the run generated text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.dialogs import participant_components, participants
from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import ArmRecord, PairRecord

EQUIVALENCE_BOUND = 0.05
NATURAL_ARMS = ("harv", "iso", "text", "none", "goldev")
STRATA = ("strong", "weak")

Reading = Callable[[ArmRecord], "str | None"]


def _first(values) -> str | None:
    return values[0] if values is not None else None


# How an arm's answer is read (member A: natural items have identical members).
READINGS: dict[str, Reading] = {
    # The paper's reading: its parse of generated text, or under the logit readout the " A" vs
    # " B" first-token logit with no "Answer:" (kv_harvnative), recorded as paper_answers.
    "paper_parse": lambda a: _first(a.paper_answers),
    "readout": lambda a: a.answers[0],  # the run's readout, matbench's parse
    "probe": lambda a: a.probe_answers[0],  # matbench's probe after "Answer:"
}


def readings_of(records: Sequence[PairRecord]) -> list[str]:
    """The readings every record has, headline first: the paper's parse of generated text, else
    the probe; `readout` only where it differs from the probe (a generating readout)."""

    def present(name: str) -> bool:
        attribute = {"paper_parse": "paper_answers"}.get(name)
        return attribute is None or all(
            getattr(a, attribute, None) is not None for r in records for a in r.arms.values()
        )

    generating = all(a.texts is not None for r in records for a in r.arms.values())
    names = [n for n in ("paper_parse",) if present(n)]
    names += (["readout"] if generating else []) + ["probe"]
    return names


def variant_parts(variant: str) -> tuple[str, str, str, str | None]:
    """(kind, corpus, conversation, stratum) of `<kind>/<corpus>/<conversation>[/<stratum>]`
    (logs of suite version 1 have no stratum)."""
    parts = variant.split("/")
    return parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else None


def clusters_of(records: Sequence[PairRecord], corpus: str) -> tuple[list[str], str]:
    """Each record's cluster and the unit's name: the conversation (LoCoMo), the participant
    component (REALTALK: chats that share a participant are one cluster)."""
    conversations = [variant_parts(r.variant)[2] for r in records]
    if corpus != "realtalk":
        return conversations, "conversation"
    components = participant_components(sorted(set(conversations)))
    return [components[c] for c in conversations], "participant component"


def _correct(records: Sequence[PairRecord], arm: str, read: Reading) -> list[float]:
    return [float(read(r.arms[arm]) == r.values[0]) for r in records]


def clustered_contrast(delta: list[float], clusters: list[str], unit: str, tost: bool) -> dict[str, Any]:
    ci95 = stats.cluster_bootstrap_mean_ci(delta, clusters, seed=0)
    out: dict[str, Any] = {
        "mean": sum(delta) / len(delta),
        "ci": ci95.as_list(),
        "clustered_by": unit,
        "n_clusters": len(set(clusters)),
    }
    if tost:
        ci90 = stats.cluster_bootstrap_mean_ci(delta, clusters, seed=0, confidence=0.90)
        out.update(
            ci90=ci90.as_list(),
            tost_bound=EQUIVALENCE_BOUND,
            equivalent=stats.equivalent_by_ci(ci90, EQUIVALENCE_BOUND),
        )
    else:
        out["descriptive"] = True
    return out


def _reading_summary(
    records: Sequence[PairRecord], read: Reading, clusters: list[str], unit: str, tost: bool
) -> dict[str, Any]:
    n = len(records)
    correct = {arm: _correct(records, arm, read) for arm in NATURAL_ARMS}
    arms = {}
    for arm in NATURAL_ARMS:
        hits = int(sum(correct[arm]))
        parsed = sum(read(r.arms[arm]) is not None for r in records)
        # One answer per item (the members are identical): an item-level interval.
        arms[arm] = {"accuracy": hits / n, "ci": stats.wilson(hits, n).as_list(), "parsed": parsed / n}
    delta = [h - i for h, i in zip(correct["harv"], correct["iso"])]
    return {
        "arms": arms,
        "harv_minus_iso": clustered_contrast(delta, clusters, unit, tost),
        "harv_minus_text": clustered_contrast(
            [h - t for h, t in zip(correct["harv"], correct["text"])], clusters, unit, tost=False
        ),
    }


def natural_summary(records: Sequence[PairRecord], corpus: str) -> dict[str, Any]:
    """The natural items of one corpus: every reading, the headline reading's arms and contrasts
    at the top, the strata, and for REALTALK the per-component and leave-one-participant-out means."""
    clusters, unit = clusters_of(records, corpus)
    tost = corpus != "realtalk"
    names = readings_of(records)
    by_reading = {name: _reading_summary(records, READINGS[name], clusters, unit, tost) for name in names}
    headline = by_reading[names[0]]
    read = READINGS[names[0]]
    out: dict[str, Any] = {
        "n_items": len(records),
        "n_conversations": len({variant_parts(r.variant)[2] for r in records}),
        "clustered_by": unit,
        "n_clusters": len(set(clusters)),
        "reading": names[0],
        **headline,
        "readings": {
            name: {
                "arms": {a: s["accuracy"] for a, s in summary["arms"].items()},
                "harv_minus_iso": {k: summary["harv_minus_iso"][k] for k in ("mean", "ci")},
            }
            for name, summary in by_reading.items()
        },
        "strata": {},
    }
    for stratum in STRATA:
        keep = [k for k, r in enumerate(records) if variant_parts(r.variant)[3] == stratum]
        if keep:
            subset = [records[k] for k in keep]
            summary = _reading_summary(subset, read, [clusters[k] for k in keep], unit, tost)
            out["strata"][stratum] = {
                "n_items": len(keep),
                "arms": {a: summary["arms"][a] for a in ("harv", "iso")},
                "harv_minus_iso": summary["harv_minus_iso"],
            }
    if corpus == "realtalk":
        delta = [h - i for h, i in zip(_correct(records, "harv", read), _correct(records, "iso", read))]
        out["by_component"] = {
            c: {
                "n_items": sum(x == c for x in clusters),
                "harv_minus_iso": sum(d for d, x in zip(delta, clusters) if x == c) / sum(x == c for x in clusters),
            }
            for c in sorted(set(clusters))
        }
        people = [participants(variant_parts(r.variant)[2]) for r in records]
        out["leave_one_participant_out"] = {}
        for person in sorted({p for ps in people for p in ps}):
            kept = [d for d, ps in zip(delta, people) if person not in ps]
            if kept:
                out["leave_one_participant_out"][person] = sum(kept) / len(kept)
    return out


def _injected(records: Sequence[PairRecord]) -> tuple[dict[str, Any], dict[str, Any]]:
    arms = {arm: arm_metrics(records, arm) for arm in ("harv", "iso")}
    paper = "paper_parse" in arms["harv"]
    classes = {arm: (m["paper_parse"] if paper else m)["classes"] for arm, m in arms.items()}
    headline = {
        "injected_follow_anti": [classes["harv"]["follow"], classes["harv"]["anti"]],
        "injected_reading": "paper_parse" if paper else "readout",
        "injected_shift_mean": arms["harv"]["donor_shift"]["mean"],
        "injected_iso_follow": classes["iso"]["follow"],
    }
    return {"n_pairs": len(records), "reading": headline["injected_reading"], "arms": arms}, headline


@EVALUATORS.register("harvest")
class HarvestEvaluator(Evaluator):
    order = 6
    contract = (
        Metric(
            "locomo",
            "natural.locomo.harv_minus_iso",
            "harv − iso (LoCoMo)",
            "recognition accuracy with the "
            "carrier rows of the full-history prefill minus the same turns each encoded alone with no header (the "
            "paper's iso); read the paper's way under a generating readout (its parse of the greedy text; the paper "
            "generated 8 tokens, compact: Qwen3 −.044), else by matbench's probe after \"Answer:\" (the paper's "
            'native Gemma-4 −.011 read the " A"/" B" logit without it); 95% CI clustered by conversation, '
            "TOST at ±.05",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.ZERO,
            overview=True,
            optional=True,
        ),
        Metric(
            "locomo_strong",
            "natural.locomo.strata.strong.harv_minus_iso",
            "harv − iso (LoCoMo, strong)",
            "as for LoCoMo, on the strong stratum only (a carrier shares a word with the question that occurs in "
            "at most two sessions; kv_harvest3.py's primary stratum)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.ZERO,
            optional=True,
        ),
        Metric(
            "realtalk",
            "natural.realtalk.harv_minus_iso",
            "harv − iso (REALTALK)",
            "as for LoCoMo, descriptive: "
            "95% CI clustered by the 3 connected participant components, no equivalence verdict",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
            optional=True,
        ),
        Metric(
            "injected_follow_anti",
            "headline.injected_follow_anti",
            "injected f:a",
            "injected counterfactual "
            "carrier (positive control): follow:anti of harv (the paper's parse under a generating readout)",
            Scale.FOLLOW,
            Format.CLASSES,
            optional=True,
        ),
        Metric(
            "injected_shift",
            "injected.arms.harv.donor_shift",
            "injected donor shift",
            "injected counterfactual carrier: harv's donor margin shift (SPEC 2.7), mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
            optional=True,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics: dict[str, Any] = {"natural": {}, "injected": {}}
        headline: dict[str, Any] = {}
        for corpus in ("locomo", "realtalk"):
            natural = [r for r in records if variant_parts(r.variant)[:2] == ("natural", corpus)]
            if natural:
                metrics["natural"][corpus] = summary = natural_summary(natural, corpus)
                contrast = summary["harv_minus_iso"]
                headline[f"{corpus}_reading"] = summary["reading"]
                headline[f"{corpus}_harv_minus_iso"] = contrast["mean"]
                headline[f"{corpus}_harv_minus_iso_ci"] = contrast["ci"]
                if "equivalent" in contrast:
                    headline[f"{corpus}_equivalent"] = contrast["equivalent"]
                if "strong" in summary["strata"]:
                    headline[f"{corpus}_strong_harv_minus_iso"] = summary["strata"]["strong"]["harv_minus_iso"]["mean"]
        injected = [r for r in records if r.variant.startswith("injected/")]
        if injected:
            metrics["injected"], more = _injected(injected)
            headline.update(more)
        metrics["headline"] = headline
        return metrics
