"""The tasks matbench registers as a Hugging Face Hub benchmark, declared once.

The suites dataset carries an `eval.yaml` listing them (`data_gen/publish.py`), and
`matbench export --eval-results` writes a model repo's `.eval_results/matbench.yaml` entries from
results files (`matbench/results/eval_results.py`); both loop over `HUB_TASKS`. The Hub shows one
number per task, so each task is one metric of one suite's results, read from the results file's
metrics block: the paper's headline (discovery's root arm follows the donor) and matbench's
(the root arm's donor margin shift, the signal small models still give).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

SPLIT = "test"  # every suite config has one split (data_gen/publish.py)
FRAMEWORK = "matbench"


def _follow_percent(metrics: Mapping[str, Any]) -> float:
    arm = metrics["arms"]["root"]
    percent: float = 100.0 * arm["classes"]["follow"] / arm["n_pairs"]
    return percent


def _root_shift(metrics: Mapping[str, Any]) -> float:
    return float(metrics["arms"]["root"]["donor_shift"]["mean"])


@dataclass(frozen=True)
class HubTask:
    id: str  # the task_id a model repo's entries name
    suite: str  # the dataset config (one per suite)
    what: str
    value: Callable[[Mapping[str, Any]], float]  # from a results file's metrics block

    def as_eval_yaml(self) -> dict[str, str]:
        return {"id": self.id, "config": self.suite, "split": SPLIT}


HUB_TASKS: tuple[HubTask, ...] = (
    HubTask(
        "discovery_root_follow",
        "discovery",
        "root arm: % of donor pairs whose answer follows the donor "
        "(the paper's headline: served rows carry the evicted source's state)",
        _follow_percent,
    ),
    HubTask(
        "discovery_root_shift",
        "discovery",
        "root arm: mean donor margin shift (log-probability margin moved toward the donor; > 0 is materialization)",
        _root_shift,
    ),
)
