"""What a serving policy's selections did over a run: the results file's `selection` block.

Per arm the policy governed: how often the two donor members' picks differed (the selection
leak) and their per-layer overlap, how often they still differed when both kept as many rows
(`members_differ_matched`: the leak a ratio budget's row count cannot explain), how often each
member's pick kept a source row, the rows served and held and the bytes the served cache holds
against those a per-head cache would need, and the materialization measured on the served rows: outcome classes and the
donor margin shift (and the answers' accuracy) over all pairs, and split by whether the served rows held a donor-dependent
token (`donor_visible`: then the arm saw the donor and its outcome is no evidence of
materialization; in natural mode that is the source the policy kept). For an arm of unpaired items
(no donor), the answers' accuracy and their margin instead: the margin is to accuracy what the
donor shift is to the follow rate, the signal that moves before any argmax does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from matbench.evaluators.base import member_accuracy
from matbench.protocol.margins import donor_margin
from matbench.protocol.outcomes import OUTCOMES
from matbench.protocol.records import PairRecord
from matbench.stats import bootstrap_mean_ci, sign_test, wilson


def _rate(hits: int, n: int) -> dict[str, Any]:
    return {"rate": hits / n, "ci": wilson(hits, n).as_list(), "n": n}


def materialization(records: list[PairRecord], arm: str) -> dict[str, Any] | None:
    """Outcome classes, follow rate and donor shift of `arm` in `records` (None when none). Where
    some pair is unpaired (harvest's natural QAs: both members the same input, no donor to follow,
    shift or leak), also `accuracy` (`member_accuracy`), which is what such an audit reads, and
    `paired`, how many pairs have two different values (absent for arms of donor pairs only, as
    in every file summarized before), and where the arm's menus have two or more candidates and
    hold its values, `margin`: per pair the mean over its members of log p(own value) - logsumexp(log p(others))
    from the probe (`answer_margin`), averaged with a bootstrap CI."""
    if not records:
        return None
    arms = [r.arms[arm] for r in records]
    classes = Counter(a.outcome for a in arms)
    shifts = np.array([a.shift for a in arms], dtype=float)
    positive, negative = int((shifts > 0).sum()), int((shifts < 0).sum())
    out = {
        "n": len(arms),
        "classes": {c: classes.get(c, 0) for c in OUTCOMES},
        "follow_rate": _rate(classes.get("follow", 0), len(arms)),
        "shift": {
            "mean": float(shifts.mean()),
            "ci": bootstrap_mean_ci(shifts).as_list(),
            "positive": positive,
            "negative": negative,
            "sign_p": sign_test(positive, negative),
        },
    }
    paired = sum(len(set(r.arm_values(arm))) == 2 for r in records)
    if paired < len(records):
        correct = np.array([member_accuracy(r, arm) for r in records])
        out["accuracy"] = {"mean": float(correct.mean()), "ci": bootstrap_mean_ci(correct).as_list(), "n": len(arms)}
        out["paired"] = paired
        if all(len(r.arm_menu(arm)) > 1 and set(r.arm_values(arm)) <= set(r.arm_menu(arm)) for r in records):
            margins = np.array([answer_margin(r, arm) for r in records])
            out["margin"] = {"mean": float(margins.mean()), "ci": bootstrap_mean_ci(margins).as_list(), "n": len(arms)}
    return out


def answer_margin(record: PairRecord, arm: str) -> float:
    """How far the arm's probe leans toward each member's own value, mean over the two members:
    log p(value) - logsumexp(log p(other candidates)) (> 0: the right answer leads)."""
    menu, values, logp = record.arm_menu(arm), record.arm_values(arm), record.arms[arm].probe_logp
    return float(sum(donor_margin(np.asarray(row), menu, value) for row, value in zip(logp, values)) / 2)


def summarize_selection(records: list[PairRecord]) -> dict[str, Any] | None:
    """The `selection` block of a policy run's results file (None for an oracle run)."""
    # Arms in first-seen order: pairs of some suites differ in their arms (variants).
    names = [
        n
        for n in dict.fromkeys(n for r in records for n in r.arms)
        if any(n in r.arms and r.arms[n].selection is not None for r in records)
    ]
    if not names:
        return None
    out: dict[str, Any] = {}
    for name in names:
        ruled_chosen = [(r, s) for r in records if name in r.arms and (s := r.arms[name].selection) is not None]
        ruled = [r for r, _ in ruled_chosen]
        chosen = [s for _, s in ruled_chosen]
        n = len(chosen)
        entry: dict[str, Any] = {
            "n_pairs": n,
            "members_differ": _rate(sum(s.members_differ for s in chosen), n),
            "donor_visible": _rate(sum(s.donor_visible for s in chosen), n),
            "kept_tokens_mean": float(np.mean([s.kept_tokens for s in chosen])),
        }
        overlaps = [s.overlap for s in chosen if s.overlap is not None]
        if overlaps:
            entry["overlap_by_layer"] = [float(x) for x in np.mean(np.array(overlaps), axis=0)]
        kept = [s.source_kept for s in chosen if s.source_kept is not None]
        if kept:
            entry["source_kept"] = {
                "a": _rate(sum(k[0] for k in kept), len(kept)),
                "b": _rate(sum(k[1] for k in kept), len(kept)),
            }
        held = [s.held_rows for s in chosen if s.held_rows is not None]
        if held:
            entry["held_rows_mean"] = float(np.mean(held))
        matched = [s.members_differ_matched for s in chosen if s.members_differ_matched is not None]
        if matched:  # schema 1.10 on
            entry["members_differ_matched"] = _rate(sum(matched), len(matched))
        picked = [s.picked for s in chosen if s.picked is not None]
        if picked:
            entry["picked_mean"] = {
                "a": float(np.mean([p[0] for p in picked])),
                "b": float(np.mean([p[1] for p in picked])),
                "count_differs": _rate(sum(p[0] != p[1] for p in picked), len(picked)),
            }
        for field in ("served_bytes", "needed_bytes"):
            sizes = [getattr(s, field) for s in chosen if getattr(s, field) is not None]
            if sizes:
                entry[f"{field}_mean"] = float(np.mean(sizes))
        entry["materialization"] = {
            "all": materialization(ruled, name),
            "donor_hidden": materialization([r for r, s in zip(ruled, chosen) if not s.donor_visible], name),
            "donor_visible": materialization([r for r, s in zip(ruled, chosen) if s.donor_visible], name),
        }
        out[name] = entry
    return out


def run_metrics(evaluator: Any, records: list[PairRecord]) -> dict[str, Any]:
    """A results file's `metrics`: the suite evaluator's, plus under a serving policy the
    `selection` block (what the policy kept, and materialization split by it)."""
    metrics = evaluator.summarize(records)
    selection = summarize_selection(records)
    return {**metrics, "selection": selection} if selection is not None else metrics
