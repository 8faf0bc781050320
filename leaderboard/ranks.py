"""Paired ranks: models compared item by item on the discovery pairs they share.

Two models run over the same donor pairs are paired data. Overlapping Wilson intervals (the
overview's rank before) ignore that and call models tied that a paired test separates, or the
reverse. Here each model's rank arm (the metric declared `rank`: discovery's root arm) is read from
its per-item log, and for every two models on their shared items (same item id and item hash):

- **follow**: exact McNemar test on the pairs one model follows and the other does not;
- **donor shift**: paired bootstrap 95% CI of the mean per-item shift difference (10,000 resamples).

A model's rank is 1 + the number of models that beat it: more follows with McNemar p < 0.05, or
(shift rank) a shift-difference interval wholly above zero. Models no test separates share a rank.
Each comparison is its own test at 0.05, with no correction for the number of pairs (stated on the
page). On the small offline models nobody follows, so the shift rank is the one that separates them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from matbench import stats
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.collect import ModelEntry
from matbench.protocol.records import PairRecord
from matbench.results.store import read_log_bytes

ALPHA = 0.05
METHOD = (
    "Ranks are paired: two models are compared on the discovery pairs both ran (same items), the root "
    "arm's follow by an exact McNemar test, its donor shift by a paired bootstrap 95% CI of the mean "
    "difference. A model's rank is 1 + the models that beat it at p < 0.05 (shift: interval above zero); "
    "models no test separates share a rank. Each pair is tested on its own, without a multiplicity correction."
)


@dataclass(frozen=True)
class ItemOutcome:
    follow: bool
    shift: float


@dataclass(frozen=True)
class PairedComparison:
    """Model `a` against model `b` on their shared items."""

    shared: int
    only_a_follows: int
    only_b_follows: int
    follow_p: float  # exact McNemar
    shift_difference: float  # mean of a's shift minus b's, per item
    shift_ci: tuple[float, float]

    @property
    def a_follows_more(self) -> bool:
        return self.follow_p < ALPHA and self.only_a_follows > self.only_b_follows

    @property
    def b_follows_more(self) -> bool:
        return self.follow_p < ALPHA and self.only_b_follows > self.only_a_follows

    @property
    def a_shifts_more(self) -> bool:
        return self.shift_ci[0] > 0

    @property
    def b_shifts_more(self) -> bool:
        return self.shift_ci[1] < 0


@dataclass(frozen=True)
class PairedRank:
    follow: int
    shift: int


def rank_arm() -> tuple[str, str]:
    """The suite and arm of the metric declared `rank` (discovery's root classes)."""
    for suite in suites_in_order():
        for m in EVALUATORS.get(suite).contract:
            if m.rank:
                parts = m.path.split(".")
                if len(parts) < 3 or parts[0] != "arms":
                    raise MatbenchError(f"rank metric {m.key!r} of {suite} is not an arm's (path {m.path!r})")
                return suite, parts[1]
    raise MatbenchError("no suite declares a rank metric")


def item_outcomes(entry: ModelEntry, home: Path) -> dict[tuple[str, str | None], ItemOutcome] | None:
    """The rank arm's follow and shift per item of the run behind the model's scorecard (None: no
    such run); keyed by item id and item hash, so only the very same items pair up. `home`: the
    folder the scorecard's evidence paths are relative to (the site's)."""
    suite, arm = rank_arm()
    card = entry.contract.get(suite)
    if card is None:
        return None
    results = (home / card["evidence"]["results"]).resolve()
    run = next((r for r in entry.runs if r.path.resolve() == results), None)
    if run is None:
        return None
    out = {}
    for number, line in enumerate(read_log_bytes(run.log).decode().splitlines(), 1):
        record = PairRecord.from_json(json.loads(line), f"{run.log} line {number}")
        out[(record.item_id, record.item_hash)] = ItemOutcome(
            record.arms[arm].outcome == "follow", record.arms[arm].shift
        )
    return out


def compare(a: dict, b: dict) -> PairedComparison | None:
    """The paired tests of two models' item outcomes; None when they share no item."""
    shared = sorted(set(a) & set(b), key=str)
    if not shared:
        return None
    only_a = sum(a[k].follow and not b[k].follow for k in shared)
    only_b = sum(b[k].follow and not a[k].follow for k in shared)
    differences = [a[k].shift - b[k].shift for k in shared]
    ci = stats.bootstrap_mean_ci(differences, seed=0)
    return PairedComparison(
        len(shared),
        only_a,
        only_b,
        stats.mcnemar_exact(only_a, only_b),
        sum(differences) / len(differences),
        (ci.low, ci.high),
    )


def paired_ranks(entries: list[ModelEntry], home: Path) -> dict[str, PairedRank]:
    """Per model slug with a rank run: its follow rank and its shift rank."""
    return ranks_of({e.slug: o for e in entries if (o := item_outcomes(e, home)) is not None})


def ranks_of(outcomes: dict[str, dict]) -> dict[str, PairedRank]:
    """Ranks from each model's item outcomes: 1 + the models that beat it in a paired test."""
    follow_beaten = dict.fromkeys(outcomes, 0)
    shift_beaten = dict.fromkeys(outcomes, 0)
    slugs = sorted(outcomes)
    for i, a in enumerate(slugs):
        for b in slugs[i + 1 :]:
            c = compare(outcomes[a], outcomes[b])
            if c is None:
                continue
            follow_beaten[b] += c.a_follows_more
            follow_beaten[a] += c.b_follows_more
            shift_beaten[b] += c.a_shifts_more
            shift_beaten[a] += c.b_shifts_more
    return {s: PairedRank(1 + follow_beaten[s], 1 + shift_beaten[s]) for s in slugs}
