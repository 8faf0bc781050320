"""Sink-vs-dependency evaluator (kv_phantom.py E3): what a shared head buys independently encoded
events, on retrieval and on multi-hop.

The paper's 2 x 2 on its scale (accuracy against the gold), with the full-prefill control beside
it: head / nohead x retr / hop, item-level 95% CIs. Beside it (matbench's additions), paired per
item with bootstrap 95% CIs: the head effect (head - nohead) per task and its interaction
(retrieval's head effect minus multi-hop's): "the head fixes retrieval but not multi-hop" is a
positive retrieval effect with an interaction that excludes 0. Every arm serves both members'
values (the pair is donor-visible): the donor margin shift of each encoding's multi-hop answer is
how far its margin leans to the member's own V through the chain, beside the classes; the probe
reads a two-way choice between the members' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matbench.data_gen.sink_dependency import ENCODINGS, TASKS
from matbench.evaluators.base import EVALUATORS, Evaluator, arm_difference, mean_with_ci, member_accuracy
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.records import PairRecord

MODES = tuple(mode for mode, _ in ENCODINGS)


@EVALUATORS.register("sink_dependency")
class SinkDependencyEvaluator(Evaluator):
    order = 16  # the experiments after the seven contract suites
    contract = (
        Metric(
            "accuracy",
            "headline.accuracy",
            "accuracy (2 × 2 + full)",
            "the paper's E3 table: accuracy against "
            "the gold per encoding (head: each event after the header; nohead: each event alone; full: the whole "
            "trajectory as text) and task (retr: one sensor; hop: GAMMA's value through the copy chain)",
            Scale.ACCURACY,
            Format.MAPPING,
        ),
        Metric(
            "head_effect_retr",
            "headline.head_effect.retr",
            "head effect, retrieval",
            "head − nohead accuracy on retrieval, paired per item (bootstrap 95% CI)",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
        ),
        Metric(
            "head_effect_hop",
            "headline.head_effect.hop",
            "head effect, multi-hop",
            "head − nohead accuracy on the multi-hop question, paired per item",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
        ),
        Metric(
            "interaction",
            "headline.interaction",
            "interaction",
            "retrieval's head effect minus multi-hop's, paired per item: separate mechanisms when it excludes 0",
            Scale.DIFFERENCE,
            Format.SIGNED_CI,
            Direction.NONE,
        ),
        *(
            Metric(
                f"{mode}_hop_shift",
                f"arms.{mode}_hop.donor_shift",
                f"{mode} hop donor shift",
                f"{mode}: the multi-hop answer's donor margin shift toward the member's own V (SPEC 2.7)",
                Scale.SHIFT,
                Format.SIGNED_CI,
            )
            for mode in ("head", "nohead")
        ),
    )

    def summarize(self, records: Sequence[PairRecord]) -> dict[str, Any]:
        metrics = super().summarize(records)
        arms = metrics["arms"]

        def effect(task: str):
            return lambda r: member_accuracy(r, f"head_{task}") - member_accuracy(r, f"nohead_{task}")

        metrics["headline"] = {
            "accuracy": {f"{mode}_{task}": arms[f"{mode}_{task}"]["menu_accuracy"] for mode in MODES for task in TASKS},
            "accuracy_ci": {
                f"{mode}_{task}": arms[f"{mode}_{task}"]["menu_accuracy_ci"] for mode in MODES for task in TASKS
            },
            "head_effect": {task: arm_difference(records, f"head_{task}", f"nohead_{task}") for task in TASKS},
            "interaction": mean_with_ci([effect("retr")(r) - effect("hop")(r) for r in records]),
        }
        return metrics
