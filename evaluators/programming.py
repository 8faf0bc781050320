"""Programming evaluator (SPEC 3.5; the paper's kv_mater2 X9 and kv_mater3 X10).

The paper's metric is the headline: per carrier kind, how many donor pairs *follow* (member A
answers EXCEEDED and member B NORMAL) with the decoy, the unrelated register, the carrier and the
review served (`both`; Qwen3-8B: pas 11/192 -> nld 97/192), and the fixed-query-position
comparison of X10 (the review row alone, `rev`: .00; + the nld carrier: .42; + the exp carrier:
1.00). Under a generating readout the classes are those of the paper's parse (upper-cased
substrings, `paper_answers`), the ones its counts were made with; under the probe, the probe's.
Beside them: the target-addressed question (bind, dir, exp), the unrelated-register echo control
(its answer must not move with the donor), the text floor `sel`, and matbench's additions.

Items come in groups of ten that share every draw (five carrier kinds x two templates), so the
kinds are also compared *paired*: nld - pas per (group, template), with a bootstrap CI over
groups, an exact McNemar test on the paired follow outcomes, and the same contrast on the donor
margin shift (the signal of models too small to flip an argmax).

kv_mater2's pre-registered contrasts, with carrier and review served (`both`), each with its
verdict: follow(dir) - follow(pas) has a 95% CI that excludes 0; dir vs bind is equivalent
within +-.075 (TOST through the 90% interval); the unrelated-register question is
const-dominant (no global echo: `const` is the most frequent outcome class of its pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord

GROUP = 10  # items per group of shared draws (data_gen/programming.py)
EQUIVALENCE_BOUND = 0.075  # kv_mater2's pre-registered TOST bound for dir vs bind
KIND_ORDER = ("pas", "bind", "dir", "nld", "exp")


def _index(record: PairRecord) -> int:
    return int(record.item_id.rsplit("-", 1)[1])


def _kind(record: PairRecord) -> str:
    return (record.variant or "").split("/")[0]


def paper_answers(entry: ArmRecord) -> tuple[str | None, str | None]:
    """The answers the paper's numbers are made of: its own parse of the generated texts where
    there are texts, else the readout's answers (the probe's)."""
    return entry.paper_answers if entry.paper_answers is not None else entry.answers


def paper_outcome(record: PairRecord, arm: str) -> str:
    return outcome(tuple(paper_answers(record.arms[arm])), tuple(record.arm_values(arm)))


def follow_count(records: Sequence[PairRecord], arm: str) -> dict[str, Any]:
    """kv_mater2's count: pairs whose member A answers its gold and member B its own, of all
    pairs, with the item-level Wilson 95% CI (one outcome per pair)."""
    classes = {c: 0 for c in ("follow", "anti", "const", "other")}
    for r in records:
        classes[paper_outcome(r, arm)] += 1
    n = len(records)
    return {
        "follow": classes["follow"],
        "n": n,
        "rate": classes["follow"] / n,
        "ci": stats.wilson(classes["follow"], n).as_list(),
        "classes": classes,
    }


def unrelated_echo(records: Sequence[PairRecord], arm: str = "unrel") -> dict[str, Any]:
    """kv_mater2's echo control: pairs whose unrelated-register answer differs across the donors
    (`u_hi != u_lo`; must stay near 0), and the share of answers equal to the register's state."""
    flips = sum(a != b for a, b in (paper_answers(r.arms[arm]) for r in records))
    per_pair = [sum(a == r.arms[arm].expected for a in paper_answers(r.arms[arm])) for r in records]
    n = len(records)
    return {
        "flips": flips,
        "n": n,
        "flip_rate": flips / n,
        "flip_ci": stats.wilson(flips, n).as_list(),
        "accuracy": sum(per_pair) / (2 * n),
        "accuracy_ci": stats.clustered_wilson(per_pair, 2).as_list(),
    }


def text_floor(records: Sequence[PairRecord], arm: str = "sel") -> dict[str, Any]:
    """kv_mater2's `sel`: the served events re-read as text. For kinds whose carrier is the same in
    both members it is donor-blind by construction (the paper prints how often member A says
    EXCEEDED); for exp it is the text upper bound (follow)."""
    n = len(records)
    exceeded = sum(paper_answers(r.arms[arm])[0] == r.arm_values(arm)[0] for r in records)
    return {
        "member_a_exceeded": exceeded,
        "n": n,
        **{k: v for k, v in follow_count(records, arm).items() if k in ("follow", "rate", "classes")},
    }


def paired_contrast(records: Sequence[PairRecord], kind: str, base: str, arm: str) -> dict[str, Any] | None:
    """`kind` - `base` on `arm`, paired by (group, template): follow (the paper's parse) and shift,
    with the 95% and (for a TOST) the 90% cluster bootstrap interval of the follow difference."""
    cells: dict[tuple[int, str], dict[str, PairRecord]] = {}
    for r in records:
        if arm in r.arms:
            k, template = (r.variant or "").split("/")
            cells.setdefault((_index(r) // GROUP, template), {})[k] = r
    pairs = [(c[kind], c[base], group) for (group, _), c in sorted(cells.items()) if kind in c and base in c]
    if not pairs:
        return None
    follow = [(paper_outcome(a, arm) == "follow", paper_outcome(b, arm) == "follow") for a, b, _ in pairs]
    diff = [float(x) - float(y) for x, y in follow]
    shift = [a.arms[arm].shift - b.arms[arm].shift for a, b, _ in pairs]
    groups = [g for *_, g in pairs]
    return {
        "n_paired": len(pairs),
        "follow_difference": sum(diff) / len(diff),
        "follow_difference_ci": stats.cluster_bootstrap_mean_ci(diff, groups, seed=0).as_list(),
        "follow_difference_ci90": stats.cluster_bootstrap_mean_ci(diff, groups, seed=0, confidence=0.90).as_list(),
        "mcnemar_p": stats.mcnemar_exact(sum(x and not y for x, y in follow), sum(y and not x for x, y in follow)),
        "shift_difference": sum(shift) / len(shift),
        "shift_difference_ci": stats.cluster_bootstrap_mean_ci(shift, groups, seed=0).as_list(),
        "shift_wilcoxon_p": stats.wilcoxon_p(shift),
    }


def preregistered(records: Sequence[PairRecord]) -> dict[str, Any]:
    """kv_mater2's three pre-registered claims, each with its numbers and its verdict (None where the
    run lacks the kinds or arms it needs); the unrelated question's classes are the paper's parse."""
    unrel = [paper_outcome(r, "unrel") for r in records if "unrel" in r.arms]
    unrelated_classes = {c: unrel.count(c) for c in ("follow", "anti", "const", "other")} if unrel else None
    dir_pas = paired_contrast(records, "dir", "pas", "both")
    dir_bind = paired_contrast(records, "dir", "bind", "both")
    out: dict[str, Any] = {"dir_minus_pas": None, "dir_vs_bind": None, "unrelated_const_dominant": None}
    if dir_pas:
        low, high = dir_pas["follow_difference_ci"]
        out["dir_minus_pas"] = {**dir_pas, "excludes_zero": low > 0 or high < 0}
    if dir_bind:
        ci90 = stats.Interval(*dir_bind["follow_difference_ci90"])
        out["dir_vs_bind"] = {
            **dir_bind,
            "tost_bound": EQUIVALENCE_BOUND,
            "equivalent": stats.equivalent_by_ci(ci90, EQUIVALENCE_BOUND),
        }
    if unrelated_classes:
        const = unrelated_classes["const"]
        out["unrelated_const_dominant"] = all(const > n for c, n in unrelated_classes.items() if c != "const")
        out["unrelated_classes"] = unrelated_classes
    return out


def _common_arms(records: Sequence[PairRecord]) -> list[str]:
    common = set(records[0].arms)
    for r in records[1:]:
        common &= set(r.arms)
    return [a for a in records[0].arms if a in common]


@EVALUATORS.register("programming")
class ProgrammingEvaluator(Evaluator):
    order = 5
    contract = (
        Metric(
            "follow_both",
            "headline.follow_both",
            "follow (car + rev)",
            "the paper's X9 headline: donor-follow "
            "rate per carrier kind with decoy, unrelated register, carrier and review served (kv_mater2 counts; "
            "Qwen3-8B pas 11/192, nld 97/192); the paper's parse under generating readouts",
            Scale.FOLLOW_RATE,
            Format.MAPPING,
            overview=True,
            overview_key="nld",
        ),
        Metric(
            "fixed_query",
            "headline.fixed_query",
            "fixed query position",
            "X10 at the fixed query position "
            "(asked after the review row): donor-follow with the review row alone (nld items), with the nld "
            "carrier beside it, and with the exp carrier (Qwen3-8B .00 / .42 / 1.00)",
            Scale.FOLLOW_RATE,
            Format.MAPPING,
        ),
        Metric(
            "nld_minus_pas",
            "nld_minus_pas.both",
            "nld − pas",
            "carrier + review served: donor-follow rate of the "
            "natural-language directive minus the passive mention, paired by group (cluster bootstrap CI; "
            "exact McNemar in the results)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            fields=("follow_difference", "follow_difference_ci"),
            overview=True,
        ),
        Metric(
            "nld_minus_pas_shift",
            "nld_minus_pas.both",
            "nld − pas shift",
            "the same paired contrast on the donor margin shift (SPEC 2.7): sub-threshold materialization",
            Scale.SHIFT,
            Format.SIGNED_CI,
            fields=("shift_difference", "shift_difference_ci"),
        ),
        Metric(
            "target_follow",
            "headline.target_follow",
            "follow, target asked",
            "the target-addressed question "
            '("What verdict is recorded for status register T?") with carrier and review served, per kind '
            "that names a target",
            Scale.FOLLOW_RATE,
            Format.MAPPING,
        ),
        Metric(
            "dir_minus_pas",
            "preregistered.dir_minus_pas",
            "dir − pas",
            "kv_mater2's pre-registered "
            "contrast (carrier + review served): donor-follow of the structured directive minus the passive "
            "mention, paired by group (cluster bootstrap 95% CI; the claim: it excludes 0)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            fields=("follow_difference", "follow_difference_ci"),
        ),
        Metric(
            "dir_vs_bind",
            "preregistered.dir_vs_bind",
            "dir − bind (90% CI)",
            "kv_mater2's pre-registered "
            "equivalence: directive minus grounded binding, paired, with the 90% interval of its TOST at ±.075",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.ZERO,
            fields=("follow_difference", "follow_difference_ci90"),
        ),
        Metric(
            "dir_bind_equivalent",
            "preregistered.dir_vs_bind.equivalent",
            "dir ≡ bind",
            "the TOST verdict: the 90% interval of dir − bind lies inside ±.075",
            Scale.CHECK,
            Format.BOOL,
            Direction.NONE,
            optional=True,
        ),
        Metric(
            "unrelated_const_dominant",
            "preregistered.unrelated_const_dominant",
            "unrelated const-dominant",
            "kv_mater2's pre-registered echo check: `const` is the most frequent outcome class of the "
            "unrelated-register question (no global echo)",
            Scale.CHECK,
            Format.BOOL,
            Direction.NONE,
        ),
        Metric(
            "unrelated_flip_rate",
            "headline.unrelated_flip_rate",
            "unrelated echo",
            "echo control: share of "
            "pairs whose answer about the unrelated register differs across the donors (must stay near 0)",
            Scale.FOLLOW_RATE,
            direction=Direction.LOWER,
        ),
        CONTROL_CLEAN,
        Metric(
            "follow_rate",
            "headline.follow_rate",
            "follow rate by carrier",
            "donor-follow rate per carrier kind and serve set (the leaderboard's bar chart)",
            Scale.FOLLOW_RATE,
            Format.MAPPING,
            in_scorecard=False,
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics: dict[str, Any] = {"arms": {arm: arm_metrics(records, arm) for arm in _common_arms(records)}}
        present = {_kind(r) for r in records}
        kinds = [k for k in KIND_ORDER if k in present] + sorted(present - set(KIND_ORDER))
        subsets = {kind: [r for r in records if _kind(r) == kind] for kind in kinds}
        metrics["by_carrier"] = {
            kind: {arm: arm_metrics(sub, arm) for arm in _common_arms(sub)} for kind, sub in subsets.items()
        }
        counts = {kind: {arm: follow_count(sub, arm) for arm in _common_arms(sub)} for kind, sub in subsets.items()}
        metrics["follow"] = counts
        contrasts = {arm: paired_contrast(records, "nld", "pas", arm) for arm in ("car", "both", "car@L")}
        metrics["nld_minus_pas"] = contrasts

        def rate(kind: str, arm: str) -> float | None:
            return counts.get(kind, {}).get(arm, {}).get("rate")

        fixed = {
            "review": rate("nld", "rev"),
            "review + nld carrier": rate("nld", "both"),
            "review + exp carrier": rate("exp", "both"),
        }
        unrel = [r for r in records if "unrel" in r.arms]
        sel = {kind: text_floor(sub) for kind, sub in subsets.items() if all("sel" in r.arms for r in sub)}
        echo = unrelated_echo(unrel) if unrel else None
        metrics["unrelated"] = echo
        metrics["text_floor"] = sel
        metrics["preregistered"] = preregistered(records)
        metrics["headline"] = {
            "follow_both": {k: rate(k, "both") for k in kinds if rate(k, "both") is not None},
            "follow_both_counts": {
                k: [counts[k]["both"]["follow"], counts[k]["both"]["n"]] for k in kinds if "both" in counts[k]
            },
            "fixed_query": {k: v for k, v in fixed.items() if v is not None},
            "target_follow": {k: rate(k, "tgt_both") for k in kinds if rate(k, "tgt_both") is not None},
            "unrelated_flip_rate": echo["flip_rate"] if echo else None,
            "follow_rate": {kind: {arm: c["rate"] for arm, c in arms.items()} for kind, arms in counts.items()},
            "nld_minus_pas_both": contrasts["both"]["follow_difference"] if contrasts["both"] else None,
            "nld_minus_pas_both_ci": contrasts["both"]["follow_difference_ci"] if contrasts["both"] else None,
            "nld_minus_pas_shift": contrasts["both"]["shift_difference"] if contrasts["both"] else None,
            "control_clean": control_clean(metrics["arms"]["control"]),
        }
        return metrics
