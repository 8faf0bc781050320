"""A model repo's `.eval_results/matbench.yaml`: the Hub's per-model score entries, from results files.

Each entry names the suites dataset and a task of `HUB_TASKS` (`matbench.protocol.hub_tasks`), with
the value read from a results file that follows the paper's protocol (a policy, template or YaRN
variant is another measurement, never the benchmark's number) and a source naming that file.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.protocol.hub_tasks import HUB_TASKS
from matbench.results.schema import read_results


def eval_results_entries(
    paths: list[Path], dataset_id: str, source_url: str | None = None, today: date | None = None
) -> list[dict[str, Any]]:
    """One entry per task whose suite has a protocol run among `paths`; one line refuses files of
    several models or several protocol runs of one suite."""
    runs = [(p, read_results(p)) for p in paths]
    models = sorted({r.config.model.model for _, r in runs})
    if len(models) > 1:
        raise MatbenchError(
            f"results of {len(models)} models ({', '.join(models)}): a model repo publishes its own; "
            "export each model's files separately"
        )
    entries = []
    for task in HUB_TASKS:
        mine = [(p, r) for p, r in runs if r.config.suite == task.suite and not r.config.variants]
        if len(mine) > 1:  # the Hub keeps one score per task in a file: which run is the score is the user's call
            raise MatbenchError(
                f"{len(mine)} protocol runs of {task.suite} ({', '.join(p.name for p, _ in mine)}): "
                "give the one whose score the model repo publishes"
            )
        for path, r in mine:
            try:
                value = task.value(r.metrics)
            except (KeyError, TypeError, ZeroDivisionError):
                raise MatbenchError(
                    f"results file {path} lacks what task {task.id} reads; run matbench rescore on it"
                ) from None
            source = {"name": f"matbench {r.config.readout}/{r.config.serving}, {r.config.n_items} pairs ({path.name})"}
            if source_url:
                source["url"] = source_url
            entries.append(
                {
                    "dataset": {"id": dataset_id, "task_id": task.id},
                    "value": round(value, 4),
                    "date": (today or date.today()).isoformat(),
                    "source": source,
                }
            )
    if not entries:
        suites = sorted({t.suite for t in HUB_TASKS})
        raise MatbenchError(f"none of the results files is a protocol run of {', '.join(suites)}: nothing to export")
    return entries
