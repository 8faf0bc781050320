"""The memory-contract scorecard: one object per model summarising every part of the contract.

Built from the validated results files of one or more output directories of one model, for one
readout and serving mode (default: the probe, which works for every model, under the serving mode
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
from matbench.results.schema import read_results


def _get(metrics: dict, path: str) -> Any:
    value: Any = metrics
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _entry(results: dict, suite: str, fields: dict[str, str], home: Path) -> dict[str, Any] | None:
    """{name: metric at path} from `suite`'s results, with the evidence it came from."""
    if suite not in results:
        return None
    path, parsed = results[suite]
    out = {name: _get(parsed.metrics, key) for name, key in fields.items()}
    out["evidence"] = {"results": os.path.relpath(path, home),
                       "items": os.path.relpath(path.parent / parsed.items.log, home),
                       "keys": {name: f"metrics.{key}" for name, key in fields.items()},
                       "n_items": parsed.config.n_items, "device": parsed.config.model.device}
    return out


def build_scorecard(directories: Path | Sequence[Path], readout: str = "probe", serving: str | None = None,
                    home: Path | None = None) -> dict[str, Any]:
    """The scorecard of the results in `directories`; evidence paths are relative to `home`
    (default: the first directory, where `matbench scorecard` writes it)."""
    directories = [Path(directories)] if isinstance(directories, (str, Path)) else [Path(d) for d in directories]
    home = Path(home) if home is not None else directories[0]
    runs = []
    for directory in directories:
        if not directory.is_dir():
            raise MatbenchError(f"{directory} is not a directory; pass matbench eval output directories")
        runs += [(path, read_results(path)) for path in sorted(directory.glob(f"*_{readout}_*.json"))]
    return scorecard_of_runs(runs, readout, serving, home, ", ".join(map(str, directories)))


def largest_runs(runs: Sequence[tuple[Path, Any]], readout: str = "probe",
                 serving: str | None = None) -> dict[str, tuple[Path, Any]]:
    """Per suite, the run of `readout` (and `serving`, when given) with the most items."""
    results: dict[str, tuple[Path, Any]] = {}
    for path, parsed in runs:
        if parsed.config.readout != readout or (serving is not None and parsed.config.serving != serving):
            continue
        held = results.get(parsed.config.suite)
        if held is None or parsed.config.n_items > held[1].config.n_items:
            results[parsed.config.suite] = (path, parsed)
    return results


def scorecard_of_runs(runs: Sequence[tuple[Path, Any]], readout: str = "probe", serving: str | None = None,
                      home: Path = Path("."), where: str = "the given runs") -> dict[str, Any]:
    """The scorecard of already validated runs ((path, ResultsFile) pairs) of one model."""
    results = largest_runs(runs, readout, serving)
    if not results:
        raise MatbenchError(f"no {readout} results files in {where}; run matbench eval --suite all first")
    first = next(iter(results.values()))[1]
    models = {p.config.model.model for _, p in results.values()}
    if len(models) > 1:
        raise MatbenchError(f"{where} holds results of several models {sorted(models)}; a scorecard is per model")

    def entry(suite: str, fields: dict[str, str]) -> dict[str, Any] | None:
        return _entry(results, suite, fields, home)

    access_pools = {}
    for pool in ("bin2", "dir4", "name8", "digit3/exact", "digit3/above500", "digit3/first_digit",
                 "phrase/verbatim", "phrase/polarity"):
        access_pools[pool.replace("/", "_")] = f"headline.{pool}.harv_kv"
    contract = {
        "discovery": entry("discovery", {
            "root_classes": "arms.root.classes", "root_follow_anti_p": "arms.root.follow_anti_p",
            "root_shift": "arms.root.donor_shift", "comprehension": "arms.txt.menu_accuracy",
            "control_clean": "headline.control_clean"}),
        "trigger": entry("trigger", {
            "classes": "headline.classes", "classes_shift": "headline.classes_shift",
            "kv_shift_toward_donor": "headline.kv_shift_toward_donor", "kv_shift_mean": "headline.kv_shift_mean",
            "control_clean": "headline.control_clean"}),
        "landing": entry("landing", {
            "root_edge_follow_anti": "headline.root_edge_follow_anti",
            "edge_only_follow_anti": "headline.edge_only_follow_anti",
            "downstream_effect": "headline.downstream_effect",
            "depth3_root_follow_rate": "headline.depth3_root_follow_rate",
            "depth3_noroot_follow_rate": "headline.depth3_noroot_follow_rate",
            "control_clean": "headline.control_clean"}),
        "access": entry("access", {**access_pools, "control_clean": "headline.control_clean"}),
        "programming": entry("programming", {
            "nld_minus_pas": "nld_minus_pas.both", "control_clean": "headline.control_clean"}),
        "harvest": entry("harvest", {
            "locomo": "natural.locomo.harv_minus_iso", "realtalk": "natural.realtalk.harv_minus_iso",
            "injected_follow_anti": "headline.injected_follow_anti"}),
        "update": entry("update", {
            "patch_win_rate": "headline.patch_win_rate", "old_value_leaks": "headline.old_value_leaks",
            "donor_follow_despite_patch": "headline.donor_follow_despite_patch",
            "patch_margin_gain": "headline.patch_margin_gain",
            "controls_unchanged": "headline.controls_unchanged", "control_clean": "headline.control_clean"}),
    }
    return {
        "model": first.config.model.model_dump(exclude_unset=True),  # as the results file wrote it
        "readout": readout,
        "serving": sorted({p.config.serving for _, p in results.values()}),
        "suites": sorted(results),
        "contract": {k: v for k, v in contract.items() if v is not None},
    }
