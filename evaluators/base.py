"""The evaluator contract and the metrics every donor-pair arm reports (SPEC 2.6, 2.7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from matbench import stats
from matbench.errors import MatbenchError
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.outcomes import OUTCOMES, outcome
from matbench.protocol.records import PairRecord
from matbench.protocol.verdicts import decide_headline
from matbench.registry import Registry


def _classes(records: Sequence[PairRecord], arm: str) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for r in records:
        counts[r.arms[arm].outcome] += 1
    return counts


def signed_summary(values: list[float]) -> dict[str, Any]:
    """Mean with its bootstrap 95% CI, how many values are positive and negative, and the exact
    sign test of those two counts (zeros dropped)."""
    pos, neg = sum(v > 0 for v in values), sum(v < 0 for v in values)
    return {
        "mean": sum(values) / len(values),
        "ci": stats.bootstrap_mean_ci(values, seed=0).as_list(),
        "positive": pos,
        "negative": neg,
        "sign_p": stats.sign_test(pos, neg),
    }


def arm_metrics(records: Sequence[PairRecord], arm: str) -> dict[str, Any]:
    """follow/anti/const/other with the exact sign test, donor-sensitive prevalence, menu accuracy
    and the method-of-moments recall share (Wilson 95% CIs), and the donor margin shift."""
    n = len(records)
    counts = _classes(records, arm)
    chance = 1 / len(records[0].arm_menu(arm))
    per_pair = [sum(a == v for a, v in zip(r.arms[arm].answers, r.arm_values(arm))) for r in records]
    acc = sum(per_pair) / (2 * n)
    # Item-level interval: the two members of a pair share their served text (not independent).
    acc_ci = stats.clustered_wilson(per_pair, 2)
    sensitive = counts["follow"] + counts["anti"]
    probe_counts = dict.fromkeys(OUTCOMES, 0)
    for r in records:
        probe_counts[outcome(tuple(r.arms[arm].probe_answers), tuple(r.arm_values(arm)))] += 1
    expected = _expected_metrics(records, arm)
    shifts = [r.arms[arm].shift for r in records]
    shift = signed_summary(shifts)
    return {
        "n_pairs": n,
        "classes": counts,
        "follow_anti_p": stats.sign_test(counts["follow"], counts["anti"]),
        "prevalence": sensitive / n,
        "prevalence_ci": stats.wilson(sensitive, n).as_list(),
        "menu_accuracy": acc,
        "menu_accuracy_ci": acc_ci.as_list(),
        "recall_share": stats.recall_share(acc, chance),
        "recall_share_ci": [stats.recall_share(x, chance) for x in acc_ci.as_list()],
        "probe_classes": probe_counts,
        "donor_shift": {
            **shift,
            "zero": n - shift["positive"] - shift["negative"],
            "wilcoxon_p": stats.wilcoxon_p(shifts),
        },
        **expected,
        **_paper_parse_metrics(records, arm),
    }


def _paper_parse_metrics(records: Sequence[PairRecord], arm: str) -> dict[str, Any]:
    """Under a generating readout: classes and menu accuracy of the same texts read with the
    paper's looser parse (upper-cased substrings), the numbers comparable with the paper's."""
    if any(r.arms[arm].paper_answers is None for r in records):
        return {}
    counts = dict.fromkeys(OUTCOMES, 0)
    per_pair = []
    for r in records:
        answers, values = r.arms[arm].paper_answers, r.arm_values(arm)
        counts[outcome(tuple(answers), tuple(values))] += 1
        per_pair.append(sum(a == v for a, v in zip(answers, values)))
    return {
        "paper_parse": {
            "classes": counts,
            "follow_anti_p": stats.sign_test(counts["follow"], counts["anti"]),
            "menu_accuracy": sum(per_pair) / (2 * len(records)),
            "menu_accuracy_ci": stats.clustered_wilson(per_pair, 2).as_list(),
        }
    }


def _expected_metrics(records: Sequence[PairRecord], arm: str) -> dict[str, Any]:
    """For arms with an expected answer (a served patch): how often it wins, and how often a
    member whose dropped donor value differs from it still answers the donor value (old-value leak)."""
    entries = [(r.arms[arm], r.values) for r in records if r.arms[arm].expected is not None]
    if not entries:
        return {}
    per_pair = [sum(a == e.expected for a in e.answers) for e, _ in entries]
    at_risk = [[a == v for a, v in zip(e.answers, values) if v != e.expected] for e, values in entries]
    stale = [x for pair in at_risk for x in pair]
    leaks = sum(stale)
    sizes = {len(pair) for pair in at_risk if pair}
    # Item-level intervals: the members of a pair share their served text.
    leak_ci = (
        stats.clustered_wilson([sum(pair) for pair in at_risk if pair], sizes.pop())
        if len(sizes) == 1
        else stats.wilson(leaks, len(stale))
    )
    return {
        "expected_win_rate": sum(per_pair) / (2 * len(entries)),
        "expected_win_ci": stats.clustered_wilson(per_pair, 2).as_list(),
        "old_value_leaks": leaks,
        "old_value_at_risk": len(stale),
        "old_value_leak_ci": leak_ci.as_list(),
    }


def item_index(record: PairRecord) -> int:
    """The item's index in its suite (the item_id's last field)."""
    return int(record.item_id.rsplit("-", 1)[1])


def member_accuracy(record: PairRecord, arm: str) -> float:
    """Share of the pair's two members whose answer is their own donor value."""
    return sum(a == v for a, v in zip(record.arms[arm].answers, record.arm_values(arm))) / 2


def mean_with_ci(values: Sequence[float]) -> dict[str, Any]:
    """Mean of per-item values (e.g. paired accuracy differences) with its bootstrap 95% CI."""
    return {"mean": sum(values) / len(values), "ci": stats.bootstrap_mean_ci(list(values), seed=0).as_list()}


def arm_difference(records: Sequence[PairRecord], arm: str, base: str) -> dict[str, Any]:
    """`arm`'s accuracy minus `base`'s, paired per item (both arms ask each item)."""
    return mean_with_ci([member_accuracy(r, arm) - member_accuracy(r, base) for r in records])


def group_pairs(
    records: Sequence[PairRecord], group_size: int, condition, kind: str, base: str
) -> list[tuple[PairRecord, PairRecord]]:
    """(`kind`, `base`) records of each group of `group_size` consecutive items sharing every draw
    (`condition(record)` names an item's condition) that holds both, in index order."""
    cells: dict[int, dict[str, PairRecord]] = {}
    for r in records:
        cells.setdefault(item_index(r) // group_size, {})[condition(r)] = r
    return [(c[kind], c[base]) for _, c in sorted(cells.items()) if kind in c and base in c]


def group_contrast(
    records: Sequence[PairRecord], group_size: int, condition, kind: str, base: str, arm: str
) -> dict[str, Any] | None:
    """`arm`'s accuracy under condition `kind` minus under `base`, paired within groups
    (`group_pairs`), with a bootstrap 95% CI over the groups; None when no group holds both."""
    diffs = [
        member_accuracy(k, arm) - member_accuracy(b, arm)
        for k, b in group_pairs(records, group_size, condition, kind, base)
    ]
    return {"n_groups": len(diffs), **mean_with_ci(diffs)} if diffs else None


def control_clean(control: dict[str, Any]) -> bool:
    """The control gate over a whole run: serving only events before the source, no pair may be
    donor-sensitive and every donor shift must be exactly 0."""
    return (
        control["classes"]["follow"] + control["classes"]["anti"] == 0
        and control["donor_shift"]["zero"] == control["n_pairs"]
    )


CONTROL_CLEAN = Metric(
    "control_clean",
    "headline.control_clean",
    "control clean",
    "serving only events before the source gave no donor-sensitive pair and every shift 0",
    Scale.CHECK,
    Format.BOOL,
    Direction.NONE,
)


@dataclass(frozen=True)
class Evaluator:
    """Turns a suite's per-item records into its metrics. Subclasses override `summarize` and
    declare `contract`: the metrics of their suite in the memory-contract scorecard, which the
    scorecard, the report and the leaderboard loop over. `order` places the suite in tables."""

    suite: str
    contract: ClassVar[tuple[Metric, ...]] = ()
    order: ClassVar[int] = 100
    # False for a suite of unpaired items only (both members the same input, e.g. kv_harvest3's
    # free answers on natural dialogs): it has no donor classes and no donor margin shift.
    paired: ClassVar[bool] = True

    @classmethod
    def decide(cls, metric: Metric, value: Any) -> int | bool | None:
        """A headline metric's decision on its value for the run's verdict
        (`matbench.protocol.verdicts`): +1 above its reference, -1 below, 0 undecided, None for
        none. Override where a headline metric is a count or mapping the default cannot decide."""
        return decide_headline(metric, value)

    @classmethod
    def metric(cls, key: str) -> Metric:
        for m in cls.contract:
            if m.key == key:
                return m
        raise MatbenchError(
            f"{cls.__name__} declares no metric {key!r}; it declares {', '.join(m.key for m in cls.contract)}"
        )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        arms = list(records[0].arms)
        return {"arms": {arm: arm_metrics(records, arm) for arm in arms}}


EVALUATORS: Registry[type[Evaluator]] = Registry("evaluator")


def suites_in_order() -> list[str]:
    """Registered suites in the order tables show them (declared `order`, then name)."""
    return sorted(EVALUATORS, key=lambda name: (EVALUATORS.get(name).order, name))
