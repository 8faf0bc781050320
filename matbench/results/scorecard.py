"""The memory-contract scorecard: one object per model summarising every part of the contract.

Each suite's entry holds the metrics its evaluator declares (`Evaluator.contract`), those valid
under the card's readout. Built from the validated results files of one or more output
directories of one model, for one readout and serving mode (default: the probe, which works for every model, under the serving mode
the runs used). Where several directories hold a suite, the run with the most items counts (a
full-size CPU run beats a short GPU one). Every entry names its evidence: the results file and
log (relative to the scorecard), the metric keys, the item count and the device.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS, Evaluator
from matbench.evaluators.base import suites_in_order
from matbench.results.schema import read_results
from matbench.results.store import find_log, results_files


def _entry(path: Path, parsed: Any, evaluator: type[Evaluator], readout: str, home: Path) -> dict[str, Any]:
    """{metric key: value} of every scorecard metric the suite's evaluator declares (and that means
    something under `readout`), with the evidence it came from."""
    metrics = [m for m in evaluator.contract if m.in_scorecard and m.valid_for(readout)]
    out = {m.key: m.value(parsed.metrics, f"results file {path}") for m in metrics}
    out["evidence"] = {
        "results": os.path.relpath(path, home),
        "items": os.path.relpath(find_log(path.parent, parsed.items.log) or path.parent / parsed.items.log, home),
        "keys": {m.key: f"metrics.{m.path}" for m in metrics},
        "n_items": parsed.config.n_items,
        "device": parsed.config.model.device,
        **({"judge": parsed.config.judge.model} if parsed.config.judge else {}),
    }
    return out


def build_scorecard(
    directories: Path | Sequence[Path], readout: str = "probe", serving: str | None = None, home: Path | None = None
) -> dict[str, Any]:
    """The scorecard of the results in `directories`; evidence paths are relative to `home`
    (default: the first directory, where `matbench scorecard` writes it)."""
    directories = [Path(directories)] if isinstance(directories, (str, Path)) else [Path(d) for d in directories]
    home = Path(home) if home is not None else directories[0]
    runs = []
    for directory in directories:
        if not directory.is_dir():
            raise MatbenchError(f"{directory} is not a directory; pass matbench eval output directories")
        runs += [(path, read_results(path)) for path in results_files(directory) if f"_{readout}_" in path.name]
    return scorecard_of_runs(runs, readout, serving, home, ", ".join(map(str, directories)))


def largest_runs(
    runs: Sequence[tuple[Path, Any]], readout: str = "probe", serving: str | None = None
) -> dict[str, tuple[Path, Any]]:
    """Per suite, the run of `readout` (and `serving`, when given) with the most items, among the
    runs of the paper's protocol (the oracle's served events under the suite's own wording; runs
    under another serving policy measure that policy, and under `--template para` or `--rope-yarn`
    a robustness check, not the model's contract)."""
    results: dict[str, tuple[Path, Any]] = {}
    for path, parsed in runs:
        if parsed.config.readout != readout or (serving is not None and parsed.config.serving != serving):
            continue
        if parsed.config.variants:
            continue
        held = results.get(parsed.config.suite)
        if held is None or parsed.config.n_items > held[1].config.n_items:
            results[parsed.config.suite] = (path, parsed)
    return results


def scorecard_of_runs(
    runs: Sequence[tuple[Path, Any]],
    readout: str = "probe",
    serving: str | None = None,
    home: Path = Path("."),
    where: str = "the given runs",
) -> dict[str, Any]:
    """The scorecard of already validated runs ((path, ResultsFile) pairs) of one model."""
    results = largest_runs(runs, readout, serving)
    off = sorted({", ".join(p.config.variants) for _, p in runs if p.config.variants})
    if not results and off:
        model = next(iter(runs))[1].config.model.model
        raise MatbenchError(
            f"{where}: only runs off the paper's protocol ({'; '.join(off[:3])}{'; ...' if len(off) > 3 else ''}): "
            f"a scorecard reads the protocol's runs; add them (matbench eval --model {model} --suite all) or "
            "summarize the policy runs alone with matbench audit --summarize DIR"
        )
    if not results:
        raise MatbenchError(f"no {readout} results files in {where}; run matbench eval --suite all first")
    first = next(iter(results.values()))[1]
    models = {p.config.model.model for _, p in results.values()}
    if len(models) > 1:
        raise MatbenchError(f"{where} holds results of several models {sorted(models)}; a scorecard is per model")

    contract = {
        suite: _entry(*results[suite], EVALUATORS.get(suite), readout, home)
        for suite in suites_in_order()
        if suite in results
    }
    return {
        "model": first.config.model.model_dump(exclude_unset=True),  # as the results file wrote it
        "readout": readout,
        "serving": sorted({p.config.serving for _, p in results.values()}),
        "suites": sorted(results),
        "contract": contract,
    }
