"""Binding-capacity evaluator (kv_bicap.py): one binding per row, two in one event, two events.

The paper's table on its scale (accuracy against the member's own state, chance .5, item-level
95% CIs): per layout and question, harv and sel (the floor); for the two-binding layouts BOTH
(a member answers both targets right) and cross-talk, P(T1's answer = v2) on items with v1 != v2.
Beside it (matbench's additions), paired per group of three layouts sharing every draw: each
two-binding layout's q1 accuracy minus the one-binding calibration's (bootstrap 95% CI), and
harv's follow:anti and donor margin shift per layout and question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench import stats
from matbench.data_gen.binding_capacity import LAYOUTS
from matbench.evaluators.base import CONTROL_CLEAN, EVALUATORS, Evaluator, arm_metrics, control_clean, group_contrast
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord


def _questions(layout: str) -> tuple[str, ...]:
    return ("q1",) if layout == "one" else ("q1", "q2")


def _layout(record: PairRecord) -> str:
    return record.variant or ""


def both_right(records: Sequence[PairRecord], encoding: str) -> dict[str, Any]:
    """Share of members answering both targets with their own states."""
    per_pair = [
        sum(
            a == x and b == y
            for a, b, x, y in zip(
                r.arms[f"{encoding}/q1"].answers,
                r.arms[f"{encoding}/q2"].answers,
                r.arm_values(f"{encoding}/q1"),
                r.arm_values(f"{encoding}/q2"),
            )
        )
        for r in records
    ]
    return {"accuracy": sum(per_pair) / (2 * len(records)), "ci": stats.clustered_wilson(per_pair, 2).as_list()}


def cross_talk(records: Sequence[PairRecord]) -> float | None:
    """On items with v1 != v2: share of harv q1 answers naming the member's v2."""
    apart = [r for r in records if r.arm_values("harv/q1")[0] != r.arm_values("harv/q2")[0]]
    if not apart:
        return None
    hits = sum(a == v for r in apart for a, v in zip(r.arms["harv/q1"].answers, r.arm_values("harv/q2")))
    return hits / (2 * len(apart))


@EVALUATORS.register("binding_capacity")
class BindingCapacityEvaluator(Evaluator):
    order = 19  # the experiments after the seven contract suites
    contract = (
        Metric(
            "harv_accuracy",
            "headline.harv",
            "harv accuracy",
            "kv_bicap's table: harv accuracy per layout and question (chance .5)",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "sel_floor",
            "headline.sel",
            "sel floor",
            "the served text alone, per layout and question",
            Scale.ACCURACY,
            Format.MAPPING,
            chance=0.5,
        ),
        Metric(
            "both",
            "headline.both",
            "both right",
            "two-binding layouts: members answering both targets right (harv)",
            Scale.ACCURACY,
            Format.MAPPING,
            optional=True,
        ),
        Metric(
            "cross_talk",
            "headline.cross_talk",
            "cross-talk",
            "v1 != v2 items: harv answers to T1 naming v2",
            Scale.ACCURACY,
            Format.MAPPING,
            Direction.NONE,
            optional=True,
        ),
        Metric(
            "two_in_one_cost",
            "headline.vs_one.two_in_one",
            "two-in-one − one (q1)",
            "harv q1 accuracy with two bindings in one event minus with one, paired per group (bootstrap 95% CI)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
            optional=True,
        ),
        Metric(
            "two_sep_cost",
            "headline.vs_one.two_sep",
            "two-sep − one (q1)",
            "harv q1 accuracy with one binding per event minus with one binding in all, paired per group",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
            optional=True,
        ),
        *(
            Metric(
                f"{layout}_q1_shift",
                f"by_layout.{layout}.harv/q1.donor_shift",
                f"{layout} q1 donor shift",
                f"harv's T1 donor margin shift (SPEC 2.7) with the {layout} layout",
                Scale.SHIFT,
                Format.SIGNED_CI,
                optional=True,
            )
            for layout in LAYOUTS
        ),
        CONTROL_CLEAN,
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        layouts = [lay for lay in LAYOUTS if any(_layout(r) == lay for r in records)]
        subsets = {lay: [r for r in records if _layout(r) == lay] for lay in layouts}
        by_layout = {
            lay: {
                f"{enc}/{q}": arm_metrics(subsets[lay], f"{enc}/{q}")
                for q in _questions(lay)
                for enc in ("harv", "sel", "full_txt")
            }
            for lay in layouts
        }
        control = arm_metrics(records, "control")
        two = [lay for lay in layouts if lay != "one"]

        def table(enc: str) -> dict[str, float]:
            return {
                f"{lay}/{q}": by_layout[lay][f"{enc}/{q}"]["menu_accuracy"] for lay in layouts for q in _questions(lay)
            }

        return {
            "by_layout": by_layout,
            "arms": {"control": control},
            "headline": {
                "harv": table("harv"),
                "sel": table("sel"),
                "full_txt": table("full_txt"),
                "both": {lay: both_right(subsets[lay], "harv")["accuracy"] for lay in two} or None,
                "both_ci": {lay: both_right(subsets[lay], "harv")["ci"] for lay in two} or None,
                "cross_talk": {lay: cross_talk(subsets[lay]) for lay in two} or None,
                "vs_one": {lay: group_contrast(records, len(LAYOUTS), _layout, lay, "one", "harv/q1") for lay in two},
                "control_clean": control_clean(control),
            },
        }
