"""Landing evaluator (SPEC 3.3): the reference edge, the depth-3 chain and the perturbation.

Per item kind (data_gen/landing.py: edge, depth3, perturb/mention, perturb/refswap) every arm's
metrics, and a headline per experiment on the paper's own scale:

- edge (kv_causal3): follow:anti of the root's donor asking T through the served edge, with the
  edge alone, and the root alone; the downstream effect P(answer = root donor | edge rows of the
  same member) - P(... | the other member's), with the pre-registered TOST at +-.075.
- depth3 (kv_hops): accuracy against the donor value (the paper's "acc", chance .5; item-level
  Wilson CI) of every arm A1..A5 and the text floor, with the follow rate and the donor shift
  beside it; the paired A5 - A4 drop.
- perturbation (kv_poscontrol, X11): the root effect P(answer = member A's value | root donor A)
  - P(... | root donor B), averaged over both slot-18 donors, under the mention, the referent
  swap and with slot 18 absent; the position-controlled mention effect root(mention) -
  root(refswap), the position effect root(refswap) - root(absent) and their confounded sum; the
  root donor sensitivity per condition (kv_causal2's count) and the donor shift contrasts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.errors import MatbenchError
from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    arm_metrics,
    control_clean,
    signed_summary,
)
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

KINDS = ("edge", "depth3", "perturb/mention", "perturb/refswap")  # data_gen/landing.py, suite v3
GROUP = len(KINDS)  # items per group of one seed
DOWNSTREAM_BOUND = 0.075  # the paper's pre-registered equivalence bound for the downstream marginal
DEPTH3_ARMS = ("depth3_c1", "depth3_c2", "depth3_c3", "depth3_noroot", "depth3_root", "depth3_floor")


def _fa(arm: dict) -> list[int]:
    return [arm["classes"]["follow"], arm["classes"]["anti"]]


def _index(record: PairRecord) -> int:
    return int(record.item_id.rsplit("-", 1)[1])


def downstream_effect(records: Sequence[PairRecord], same: str, cross: str) -> dict[str, Any]:
    """Does the downstream row's donor matter? P(answer = root donor) with the downstream rows of
    the same member minus with those of the other member (paired per item, bootstrap CI, TOST at
    +-0.075 through the 90% interval), and how often the answers agree."""

    def follow(record: PairRecord, arm: str) -> float:
        return sum(a == v for a, v in zip(record.arms[arm].answers, record.values)) / 2

    diffs = [follow(r, same) - follow(r, cross) for r in records]
    agree = sum(a == b for r in records for a, b in zip(r.arms[same].answers, r.arms[cross].answers))
    ci90 = stats.bootstrap_mean_ci(diffs, seed=0, confidence=0.90)
    return {
        "follow_root_same": sum(follow(r, same) for r in records) / len(records),
        "follow_root_cross": sum(follow(r, cross) for r in records) / len(records),
        "difference": sum(diffs) / len(diffs),
        "ci": stats.bootstrap_mean_ci(diffs, seed=0).as_list(),
        "ci90": ci90.as_list(),
        "tost_bound": DOWNSTREAM_BOUND,
        "equivalent": stats.equivalent_by_ci(ci90, DOWNSTREAM_BOUND),
        "concordance": agree / (2 * len(records)),
    }


def accuracy_entry(metrics: dict, chance: float = 0.5) -> dict[str, Any]:
    """An arm's accuracy against the donor value (the paper's scale), the item-level CI, and the
    pair follow rate and donor shift beside it; the paper's parse where the readout generated."""
    shift = metrics["donor_shift"]
    entry = {
        "accuracy": metrics["menu_accuracy"],
        "ci": metrics["menu_accuracy_ci"],
        "chance": chance,
        "follow_rate": metrics["classes"]["follow"] / metrics["n_pairs"],
        "follow_anti": _fa(metrics),
        "shift": {k: shift[k] for k in ("mean", "ci", "positive", "negative", "sign_p")},
    }
    if "paper_parse" in metrics:
        entry["paper_parse"] = {
            "accuracy": metrics["paper_parse"]["menu_accuracy"],
            "ci": metrics["paper_parse"]["menu_accuracy_ci"],
        }
    return entry


def _correct(record: PairRecord, arm: str) -> float:
    return sum(a == v for a, v in zip(record.arms[arm].answers, record.arm_values(arm))) / 2


def _summary(values: list[float]) -> dict[str, Any] | None:
    return {**signed_summary(values), "n": len(values)} if values else None


def depth3_headline(records: Sequence[PairRecord], arms: dict[str, dict]) -> dict[str, Any]:
    out: dict[str, Any] = {arm: accuracy_entry(arms[arm]) for arm in DEPTH3_ARMS if arm in arms}
    out["root_minus_noroot"] = _summary([_correct(r, "depth3_root") - _correct(r, "depth3_noroot") for r in records])
    return out


# --- perturbation (kv_poscontrol) -------------------------------------------------------------


def _on(answer: str | None, values: tuple[str, str]) -> int | None:
    """kv_poscontrol's on(): 1 for member A's value, 0 for member B's, None off the menu."""
    return 1 if answer == values[0] else 0 if answer == values[1] else None


def _cells(record: PairRecord, arm: str, answers: str) -> tuple[list, list] | None:
    """(answers with root donor A, answers with root donor B) over the slot-18 donors j: for a
    co-served arm (j = A, j = B) in each; for `absent`, one answer each."""
    own = getattr(record.arms[arm], answers)
    if arm == "absent":
        return [own[0]], [own[1]]
    cross = getattr(record.arms[f"{arm}_cross"], answers)
    return [own[0], cross[0]], [cross[1], own[1]]


def root_effect(record: PairRecord, arm: str, answers: str = "answers") -> float | None:
    """P(A's value | root donor A) - P(A's value | root donor B) over the cells; None unless every
    answer is on the menu (the paper's complete cases)."""
    on, off = _cells(record, arm, answers)
    a, b = [_on(x, record.values) for x in on], [_on(x, record.values) for x in off]
    if None in a or None in b:
        return None
    return sum(a) / len(a) - sum(b) / len(b)


def root_sensitive(record: PairRecord, arm: str) -> bool:
    """kv_causal2's root-sensitive item: the answers over the slot-18 donors differ between the
    two root donors."""
    on, off = _cells(record, arm, "answers")
    return on != off


def perturbation_groups(records: Sequence[PairRecord]) -> list[dict[str, PairRecord]]:
    """The perturbation items by group: {"mention": record, "refswap": record} (either may be
    missing in a short run)."""
    groups: dict[int, dict[str, PairRecord]] = {}
    for r in records:
        if r.variant in ("perturb/mention", "perturb/refswap"):
            groups.setdefault(_index(r) // GROUP, {})[r.variant.split("/")[1]] = r
    return [groups[g] for g in sorted(groups)]


def perturbation_headline(records: Sequence[PairRecord]) -> dict[str, Any] | None:
    groups = perturbation_groups(records)
    if not groups:
        return None
    conditions = {"absent": "mention", "mention": "mention", "refswap": "refswap"}  # arm -> the item serving it

    def effects(answers: str) -> dict[str, Any]:
        per = [
            {c: root_effect(g[kind], c, answers) if kind in g else None for c, kind in conditions.items()}
            for g in groups
        ]
        matched = [len(g) == 2 and g["mention"].n_tokens == g["refswap"].n_tokens for g in groups]

        def contrast(x: str, y: str, only_matched: bool = False) -> dict[str, Any] | None:
            return _summary(
                [
                    e[x] - e[y]
                    for e, m in zip(per, matched)
                    if e[x] is not None and e[y] is not None and (m or not only_matched)
                ]
            )

        return {
            "root_effect": {c: _summary([e[c] for e in per if e[c] is not None]) for c in conditions},
            # The clean estimand: same slot, same query position (equal length), only the referent differs.
            "mention_effect": contrast("mention", "refswap"),
            "mention_effect_length_matched": contrast("mention", "refswap", only_matched=True),
            "position_effect": contrast("refswap", "absent"),
            "confounded_effect": contrast("mention", "absent"),  # kv_causal2's contrast: the sum of the two
        }

    out: dict[str, Any] = {
        "n_groups": len(groups),
        # kv_poscontrol records dw_len_men == dw_len_fil; here the two items' token counts differ
        # exactly by the slot-18 sentences' token lengths.
        "length_matched": sum(len(g) == 2 and g["mention"].n_tokens == g["refswap"].n_tokens for g in groups),
        "complete_groups": sum(len(g) == 2 for g in groups),
        **effects("answers"),
    }
    sensitivity = {}
    for c, kind in conditions.items():
        hits = [root_sensitive(g[kind], c) for g in groups if kind in g]
        sensitivity[c] = (
            {"rate": sum(hits) / len(hits), "ci": stats.wilson(sum(hits), len(hits)).as_list(), "n": len(hits)}
            if hits
            else None
        )
    out["root_sensitivity"] = sensitivity
    shifts = [
        (
            g["mention"].arms["mention"].shift,
            g["mention"].arms["absent"].shift,
            g["refswap"].arms["refswap"].shift if "refswap" in g else None,
        )
        for g in groups
        if "mention" in g
    ]
    out["shift_mention_minus_refswap"] = _summary([m - s for m, _, s in shifts if s is not None])
    out["shift_mention_minus_absent"] = _summary([m - a for m, a, _ in shifts])
    if all(arm.paper_answers is not None for g in groups for r in g.values() for arm in r.arms.values()):
        out["paper_parse"] = effects("paper_answers")
    return out


@EVALUATORS.register("landing")
class LandingEvaluator(Evaluator):
    order = 3
    contract = (
        Metric(
            "root_edge_follow_anti",
            "headline.root_edge_follow_anti",
            "root+edge f:a",
            "edge items (kv_causal3): root and edge served, ask T: follow:anti of the root's donor",
            Scale.FOLLOW,
            Format.CLASSES,
            overview=True,
        ),
        Metric(
            "edge_only_follow_anti",
            "headline.edge_only_follow_anti",
            "edge-only f:a",
            "edge items: the edge served without the root, ask T",
            Scale.FOLLOW,
            Format.CLASSES,
        ),
        Metric(
            "root_edge_shift",
            "headline.root_edge_shift",
            "root+edge donor shift",
            "edge items: the root+edge "
            "arm's donor margin shift toward the root's dropped donor (SPEC 2.7): mean with bootstrap 95% CI",
            Scale.SHIFT,
            Format.SIGNED_CI,
        ),
        Metric(
            "downstream_effect",
            "headline.downstream_effect",
            "downstream effect",
            "edge items: P(root donor) with the edge rows of the same member minus the other member's (TOST at ±.075)",
            Scale.DIFFERENCE,
            Format.MAPPING,
            Direction.ZERO,
        ),
        Metric(
            "depth3_root_accuracy",
            "headline.depth3_root_accuracy",
            "depth-3 acc (root)",
            "depth-3 items "
            "(kv_hops A5): chain 13/18/23 served with the root, ask T: accuracy against the donor value, "
            "item-level Wilson 95% CI",
            Scale.ACCURACY,
            Format.RATE_CI,
            chance=0.5,
            fields=("accuracy", "ci"),
        ),
        Metric(
            "depth3_noroot_accuracy",
            "headline.depth3_noroot_accuracy",
            "depth-3 acc (no root)",
            "depth-3 items (kv_hops A4): the chain without the root, ask T: accuracy against the donor value",
            Scale.ACCURACY,
            Format.RATE_CI,
            chance=0.5,
            fields=("accuracy", "ci"),
        ),
        Metric(
            "mention_effect",
            "headline.mention_effect",
            "mention effect",
            "perturbation items (kv_poscontrol): "
            "root donor effect with slot 18 mentioning the target minus with the same sentence about an "
            "unrelated register (same slot and length), bootstrap 95% CI",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        stale = next((r for r in records if r.variant not in KINDS), None)
        if stale is not None:
            raise MatbenchError(
                f"landing record of item {stale.item_id} has variant {stale.variant!r}, not one of "
                f"{', '.join(KINDS)} (landing suite v3: one experiment per trajectory); it was "
                "written by an earlier suite version: run the suite again"
            )
        by_variant: dict[str, Any] = {}
        subsets: dict[str, list[PairRecord]] = {}
        for variant in sorted({r.variant for r in records}):
            subset = [r for r in records if r.variant == variant]
            subsets[variant] = subset
            by_variant[variant] = {
                "n_pairs": len(subset),
                "arms": {arm: arm_metrics(subset, arm) for arm in subset[0].arms},
            }
        arms = {v: entry["arms"] for v, entry in by_variant.items()}
        edge, depth3 = arms.get("edge"), arms.get("depth3")
        perturb = perturbation_headline(records)
        headline: dict[str, Any] = {
            "root_edge_follow_anti": _fa(edge["root_edge"]) if edge else None,
            # Root donor x edge donor: follow = the root's donor, anti = the edge rows' donor.
            "root_edge_cross_follow_anti": _fa(edge["root_edge_cross"]) if edge else None,
            "root_only_follow_anti": _fa(edge["root_only"]) if edge else None,
            "edge_only_follow_anti": _fa(edge["edge_only"]) if edge else None,
            "downstream_effect": downstream_effect(subsets["edge"], "root_edge", "root_edge_cross") if edge else None,
            "root_edge_shift": accuracy_entry(edge["root_edge"])["shift"] if edge else None,
            "edge_only_shift": accuracy_entry(edge["edge_only"])["shift"] if edge else None,
            "depth3_root_accuracy": accuracy_entry(depth3["depth3_root"]) if depth3 else None,
            "depth3_noroot_accuracy": accuracy_entry(depth3["depth3_noroot"]) if depth3 else None,
            "depth3": depth3_headline(subsets["depth3"], depth3) if depth3 else None,
            "mention_effect": perturb["mention_effect"] if perturb else None,
            "perturbation": perturb,
            "downstream_effect_perturbation": {
                c: downstream_effect(subsets[f"perturb/{c}"], c, f"{c}_cross")
                for c in ("mention", "refswap")
                if f"perturb/{c}" in subsets
            },
            "comprehension": {v: a["txt"]["menu_accuracy"] for v, a in arms.items()},
            "control_clean": all(control_clean(a["control"]) for a in arms.values()),
        }
        return {"by_variant": by_variant, "headline": headline}
