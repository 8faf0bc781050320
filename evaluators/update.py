"""Update evaluator (SPEC 3.7; the paper's kv_coherence2.py): does an out-of-band patch of the
dropped source, appended at query time, win over the state the carrier materialized from it?

The paper's scale first: per arm and question, the share of members answering that question's
gold (cur: v2 where the arm delivered the update, v1 where it did not; hist: v1; unrel: the
decoy's dm), as the script's summary prints them (`paper_table`). From it the headline: the
patch wins (cur answers equal to v2) per patch arm, and the old-value leaks (changed members,
v1 != v2, answering their dropped v1), each pooled over the four KV patch arms too; history (hist)
and the unrelated register (unrel) per arm; the controls against their gold (ctl_wrong,
ctl_dummy: v1; noopx on the member where v1 == v2, the only one the paper interprets).

matbench's additions beside it: the donor pair's follow:anti and donor margin shift in the
patched arms (does the dropped donor still steer an answer the patch should settle?), the
patch's probe-margin gain over the stale arm, and whether a control moves the stale arm's
answers. Every rate's CI is item-level (`stats.clustered_wilson`: the two members of a pair share
their served text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from matbench import stats
from matbench.data_gen.update import KV_ARMS, PATCH_ARMS, QUERIES, TXT_ARMS
from matbench.errors import MatbenchError
from matbench.evaluators.base import (
    CONTROL_CLEAN,
    EVALUATORS,
    Evaluator,
    control_clean,
    signed_summary,
)
from matbench.protocol.margins import donor_margin
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

ARMS = (*KV_ARMS, *TXT_ARMS)
# Arms that deliver the update of S (cur gold v2): the four KV patches and the text oracle.
DELIVERING = (*PATCH_ARMS, "txt_oracle")
CONTROLS = ("ctl_wrong", "ctl_dummy")
STALE = "stale__cur"


def arm_key(arm: str, query: str) -> str:
    return f"{arm}__{query}"


def _gold(record: PairRecord, arm: str, member: int) -> str:
    entry = record.arms[arm]
    return entry.expected if entry.expected is not None else record.arm_values(arm)[member]


def _answers(record: PairRecord, arm: str, parse: str) -> tuple:
    entry = record.arms[arm]
    return entry.paper_answers if parse == "paper" else entry.answers


def _rate(successes: list[int], trials: int) -> dict[str, Any]:
    """Share of successes over items of `trials` answers each, with the item-level interval."""
    n = trials * len(successes)
    hits = sum(successes)
    ci = stats.clustered_wilson(successes, trials) if trials > 1 else stats.wilson(hits, n)
    return {"rate": hits / n if n else None, "hits": hits, "n": n, "ci": ci.as_list()}


def accuracy(records: Sequence[PairRecord], arm: str, parse: str = "matbench") -> dict[str, Any]:
    """Share of members answering the arm's gold (the paper's per-arm, per-question mean)."""
    per_pair = [sum(a == _gold(r, arm, m) for m, a in enumerate(_answers(r, arm, parse))) for r in records]
    return _rate(per_pair, 2)


def old_value_leaks(records: Sequence[PairRecord], arm: str, parse: str = "matbench") -> dict[str, Any]:
    """cur of an update-delivering arm: of the members whose dropped v1 differs from v2 (one per
    pair, since v2 is drawn independently of both donors), how many answer v1."""
    per_pair, at_risk = [], 0
    for r in records:
        expected = r.arms[arm].expected
        risky = [m for m, v in enumerate(r.values) if v != expected]
        at_risk += len(risky)
        per_pair.append(sum(_answers(r, arm, parse)[m] == r.values[m] for m in risky))
    return {"leaks": sum(per_pair), "at_risk": at_risk, "ci": stats.wilson(sum(per_pair), at_risk).as_list()}


def noopx_unchanged(records: Sequence[PairRecord], parse: str = "matbench") -> dict[str, Any]:
    """noopx, cur, on the member whose v1 equals v2 (the paper's changed == 0 stratum, where the
    appended confirmation is true and is the paper's text): share answering v1."""
    arm = arm_key("noopx", "cur")
    hits = [
        int(_answers(r, arm, parse)[m] == v)
        for r in records
        for m, v in enumerate(r.values)
        if v == r.arms[arm].expected
    ]
    return _rate(hits, 1)


def decoy_differs_wins(records: Sequence[PairRecord], arm: str, parse: str = "matbench") -> dict[str, Any]:
    """Patch wins on the items whose decoy value differs from v2, where answering the decoy's
    value cannot pass for the patch (the paper's analyzer subset)."""
    subset = [r for r in records if _decoy_value(r) != r.arms[arm].expected]
    per_pair = [sum(a == r.arms[arm].expected for a in _answers(r, arm, parse)) for r in subset]
    return _rate(per_pair, 2) if subset else {"rate": None, "hits": 0, "n": 0, "ci": None}


def _decoy_value(record: PairRecord) -> str:
    return record.arms[arm_key("stale", "unrel")].expected  # unrel's gold is the decoy's value


def paper_table(records: Sequence[PairRecord], parse: str = "matbench") -> dict[str, Any]:
    """The paper's summary (kv_coherence2 `main`): per arm, the cur / hist / unrel accuracy
    against each question's gold, with item-level CIs; noopx's cur on its scored stratum."""
    table = {arm: {q: accuracy(records, arm_key(arm, q), parse) for q in QUERIES} for arm in ARMS}
    table["noopx"]["cur_unchanged_member"] = noopx_unchanged(records, parse)
    return table


def pooled(parts: list[dict[str, Any]], hits: str, n: str) -> tuple[int, int]:
    return sum(p[hits] for p in parts), sum(p[n] for p in parts)


def _expected_margin(record: PairRecord, arm: str, expected: str) -> float:
    """Mean over members of the probe's donor margin of `expected`: log p(expected) minus the
    logsumexp of the other menu words (the other word's log p on a two-word menu)."""
    logp = np.asarray(record.arms[arm].probe_logp, dtype=np.float64)
    margins = donor_margin(logp, tuple(record.arm_menu(arm)), expected).tolist()
    return sum(margins) / len(margins)


def despite_patch(
    records: Sequence[PairRecord], arm: str, metrics: dict[str, Any], base: str = STALE
) -> dict[str, Any]:
    """Whether the dropped donor still steers an arm that was served a patch; `metrics` is the
    arm's `arm_metrics`, whose follow/anti counts and sign test are reported again here.

    Both members receive the same patch, so a model that reads it answers the same word in both
    (const). An old-value leak in a const pair is the patch losing to a one-word habit that meets
    the donor by chance (half the stale members of a two-word menu); a leak in a follow pair is
    the materialized donor beating the patch. `margin_gain` is how far the patch moves the probe
    margin of its value over the unpatched `base` arm: the signal when argmax never moves.
    """
    leaks_follow = leaks_other = 0
    gains = []
    for r in records:
        entry = r.arms[arm]
        expected = entry.expected
        cls = entry.outcome
        for answer, value in zip(entry.answers, r.values):
            if value != expected and answer == value:
                if cls == "follow":
                    leaks_follow += 1
                else:
                    leaks_other += 1
        gains.append(_expected_margin(r, arm, expected) - _expected_margin(r, base, expected))
    return {
        "follow": metrics["classes"]["follow"],
        "anti": metrics["classes"]["anti"],
        "follow_anti_p": metrics["follow_anti_p"],
        "leaks_in_follow_pairs": leaks_follow,
        "leaks_in_other_pairs": leaks_other,
        "margin_gain": signed_summary(gains),
    }


def controls_unchanged(records: Sequence[PairRecord], control: str) -> dict[str, Any]:
    """cur answers of a control arm equal to the stale arm's, member by member."""
    per_pair = [
        sum(a == b for a, b in zip(r.arms[arm_key(control, "cur")].answers, r.arms[STALE].answers)) for r in records
    ]
    return _rate(per_pair, 2)


def patch_summary(records: Sequence[PairRecord], parse: str = "matbench") -> dict[str, Any]:
    """The paper's headline: patch wins and old-value leaks in cur per update-delivering arm,
    pooled over the four KV patch arms; patch wins where the decoy's value differs from v2."""
    wins = {a: accuracy(records, arm_key(a, "cur"), parse) for a in DELIVERING}
    leaks = {a: old_value_leaks(records, arm_key(a, "cur"), parse) for a in DELIVERING}
    kv_wins = [wins[a] for a in PATCH_ARMS]
    kv_leaks = [leaks[a] for a in PATCH_ARMS]
    hits, n = pooled(kv_wins, "hits", "n")
    leaked, risk = pooled(kv_leaks, "leaks", "at_risk")
    # Pooled over arms: an item contributes 2 answers per arm (wins), 1 at-risk member per arm (leaks).
    per_item_wins = [
        sum(
            sum(a == r.arms[arm_key(x, "cur")].expected for a in _answers(r, arm_key(x, "cur"), parse))
            for x in PATCH_ARMS
        )
        for r in records
    ]
    per_item_leaks = [
        sum(
            int(_answers(r, arm_key(x, "cur"), parse)[m] == v)
            for x in PATCH_ARMS
            for m, v in enumerate(r.values)
            if v != r.arms[arm_key(x, "cur")].expected
        )
        for r in records
    ]
    wins["pooled"] = {
        "rate": hits / n,
        "hits": hits,
        "n": n,
        "ci": stats.clustered_wilson(per_item_wins, 2 * len(PATCH_ARMS)).as_list(),
    }
    leaks["pooled"] = {
        "leaks": leaked,
        "at_risk": risk,
        "ci": stats.clustered_wilson(per_item_leaks, len(PATCH_ARMS)).as_list(),
    }
    return {
        "wins": wins,
        "leaks": leaks,
        "wins_decoy_differs": {a: decoy_differs_wins(records, arm_key(a, "cur"), parse) for a in DELIVERING},
    }


@EVALUATORS.register("update")
class UpdateEvaluator(Evaluator):
    order = 7
    contract = (
        Metric(
            "patch_win_rate",
            "headline.patch_win_rate",
            "patch wins",
            'cur ("now, after every step"): share '
            "of members answering the patch's value v2, per update-delivering arm and pooled over the four KV "
            "patch arms (the paper's cur*, kv_coherence2; paper: 100%)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
            overview=True,
            overview_key="pooled",
        ),
        Metric(
            "old_value_leaks",
            "headline.old_value_leaks",
            "old-value leaks",
            "cur: changed members (dropped v1 "
            "!= v2) answering v1 : changed members, per update-delivering arm and pooled (paper: 0/96)",
            Scale.COUNT,
            Format.MAPPING,
            Direction.LOWER,
        ),
        Metric(
            "hist_accuracy",
            "headline.hist_accuracy",
            "hist",
            'hist ("as of step 24"): share answering the dropped v1, per arm: what a patch costs the history',
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "unrel_accuracy",
            "headline.unrel_accuracy",
            "unrel",
            "unrel (the decoy register): share answering its own value, per arm: a patch must not move it",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "controls_hold",
            "headline.controls_hold",
            "controls",
            "cur against v1 with a wrong-register or "
            "neutral-note patch, and after a no-op confirmation (noopx, on the member where v1 == v2)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "donor_follow_despite_patch",
            "headline.donor_follow_despite_patch",
            "donor f:a despite patch",
            "follow:anti of the dropped donor in the KV patch arms' cur answers (matbench)",
            Scale.FOLLOW,
            Format.MAPPING,
            Direction.LOWER,
            overview=True,
            overview_key="upd_ver",
        ),
        Metric(
            "patch_margin_gain",
            "headline.patch_margin_gain",
            "patch margin gain",
            "probe margin of v2 in cur, patched minus stale arm (matbench)",
            Scale.SHIFT,
            Format.MAPPING,
        ),
        Metric(
            "controls_unchanged",
            "headline.controls_unchanged",
            "controls unchanged",
            "cur answers equal to the stale arm's under a wrong-register or neutral-note patch (matbench)",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        missing = sorted({arm_key(a, q) for a in ARMS for q in QUERIES} - set(records[0].arms))
        if missing:
            raise MatbenchError(
                f"update records of item {records[0].item_id} lack the arms {missing[0]}, ... of "
                "update suite v2 (kv_coherence2's design); they were written by an earlier suite "
                "version: run the suite again"
            )
        metrics = super().summarize(records)
        arms = metrics["arms"]
        table = paper_table(records)
        patch = patch_summary(records)
        metrics["paper_table"] = table
        metrics["patch"] = patch
        if all(r.arms[arm_key(a, q)].paper_answers is not None for r in records for a in ARMS for q in QUERIES):
            # Under a generating readout: the same, read with the paper's parse (kv_coherence2 `pick`).
            metrics["paper_parse"] = {
                "paper_table": paper_table(records, "paper"),
                "patch": patch_summary(records, "paper"),
            }
        unchanged = {c: controls_unchanged(records, c) for c in CONTROLS}
        metrics["controls_unchanged"] = unchanged
        metrics["despite_patch"] = {
            p: despite_patch(records, arm_key(p, "cur"), arms[arm_key(p, "cur")]) for p in PATCH_ARMS
        }
        metrics["headline"] = {
            "patch_win_rate": {a: v["rate"] for a, v in patch["wins"].items()},
            "old_value_leaks": {a: [v["leaks"], v["at_risk"]] for a, v in patch["leaks"].items()},
            "hist_accuracy": {a: table[a]["hist"]["rate"] for a in ARMS},
            "unrel_accuracy": {a: table[a]["unrel"]["rate"] for a in ARMS},
            "controls_hold": {
                **{c: table[c]["cur"]["rate"] for c in CONTROLS},
                "noopx": table["noopx"]["cur_unchanged_member"]["rate"],
            },
            "donor_follow_despite_patch": {p: [d["follow"], d["anti"]] for p, d in metrics["despite_patch"].items()},
            "donor_shift_despite_patch": {p: arms[arm_key(p, "cur")]["donor_shift"]["mean"] for p in PATCH_ARMS},
            "patch_margin_gain": {p: d["margin_gain"]["mean"] for p, d in metrics["despite_patch"].items()},
            "controls_unchanged": {c: v["rate"] for c, v in unchanged.items()},
            "control_clean": control_clean(arms["control"]),
        }
        return metrics
