"""The eviction audit's summary: one row per results file and governed arm of a policy run.

Reads `metrics.selection` (`matbench.results.selection`) of every policy run under the given
folders into a pandas table: the selection (leak rate, mean per-layer overlap, source retention,
donor-visible share; from schema 1.10 the leak at matched row counts and the bytes a served cache
holds against those a per-head cache would need) beside materialization (follow rate, donor shift with its CI and sign test,
the shift over the pairs whose served rows hid the donor, and the answers' accuracy and margin),
and, where the folders hold the oracle's run of the same suite (`matbench audit` runs it beside
the policies, from the same prefills), each arm's donor shift against the oracle's on the same
pairs, those whose served rows hid the donor: their number, the oracle's mean, the mean paired
difference (policy - oracle) with its bootstrap 95% CI and Wilcoxon signed-rank p. `matbench
audit` prints it and writes it as CSV and markdown.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from matbench.errors import MatbenchError
from matbench.protocol.records import PairRecord
from matbench.protocol.runspec import budget_order, split_budget
from matbench.results.rescore import log_records
from matbench.results.schema import ResultsFile, RunConfig, read_results

COLUMNS = (
    "model",
    "suite",
    "arm",
    "policy",
    "budget",
    "source",
    "n",
    "leak",
    "leak_matched",
    "overlap",
    "source_kept_a",
    "donor_visible",
    "follow_rate",
    "shift",
    "shift_lo",
    "shift_hi",
    "sign_p",
    "hidden_n",
    "hidden_shift",
    "accuracy",
    "margin",
    "paired",
    "served_bytes",
    "needed_bytes",
    "vs_oracle_n",
    "oracle_shift",
    "vs_oracle",
    "vs_oracle_lo",
    "vs_oracle_hi",
    "vs_oracle_p",
)


def _oracle_key(config: RunConfig) -> tuple[object, ...]:
    """What a policy run and the oracle's run must share to be compared pair by pair: the items
    (model, suite and its version, seed, dataset), how they were read and served, and what
    changes the model's input or RoPE (template, YaRN)."""
    return (
        config.model.model,
        config.suite,
        config.suite_version,
        config.seed,
        config.dataset,
        config.readout,
        config.serving,
        config.template,
        config.rope_yarn,
    )


def _shifts(records: list[PairRecord], arm: str) -> dict[str, float]:
    """Item id -> the arm's donor shift, over the pairs whose served rows hid the donor (a shift
    where the arm saw the donor is no evidence of what the kept rows carry; the oracle's arms
    never see it), as the heat maps' donor shift reads it."""
    out = {}
    for record in records:
        row = record.arms.get(arm)
        if row is None or row.shift is None or (row.selection is not None and row.selection.donor_visible):
            continue
        out[record.item_id] = float(row.shift)
    return out


def versus_oracle(policy: list[PairRecord], oracle: list[PairRecord], arm: str) -> dict[str, float]:
    """The arm's donor shift under the policy against the oracle's (their per-item records),
    over the pairs both logged whose served rows hid the donor: their number, the oracle's
    mean, the mean paired difference, its bootstrap 95% CI and Wilcoxon p."""
    from matbench.stats import bootstrap_mean_ci, wilcoxon_p

    ours, theirs = _shifts(policy, arm), _shifts(oracle, arm)
    common = sorted(set(ours) & set(theirs))
    if not common:
        return {}
    diffs = [ours[i] - theirs[i] for i in common]
    ci = bootstrap_mean_ci(diffs)
    return {
        "vs_oracle_n": len(common),
        "oracle_shift": sum(theirs[i] for i in common) / len(common),
        "vs_oracle": sum(diffs) / len(diffs),
        "vs_oracle_lo": ci.low,
        "vs_oracle_hi": ci.high,
        "vs_oracle_p": wilcoxon_p(diffs),
    }


def audit_table(folders: list[Path]) -> pd.DataFrame:
    """Every policy run's governed arms under `folders` (recursively), sorted."""
    rows: list[dict[str, object]] = []
    runs: list[tuple[Path, ResultsFile]] = []
    oracles: dict[tuple[object, ...], tuple[Path, ResultsFile]] = {}
    for path in sorted(p for folder in folders for p in Path(folder).rglob("*.json") if p.name != "scorecard.json"):
        try:
            results = read_results(path)
        except MatbenchError:  # a folder may hold other JSON (summaries, scorecards): not a run
            continue
        if not results.config.policy:
            key = _oracle_key(results.config)
            # several oracle runs of the same items: the one of most pairs (as the leaderboard's reference row)
            if key not in oracles or results.config.n_items > oracles[key][1].config.n_items:
                oracles[key] = (path, results)
        elif "selection" in results.metrics:
            runs.append((path, results))
    logs: dict[Path, list[PairRecord]] = {}  # each per-item log read (and its sha256 checked) once

    def records(path: Path, results: ResultsFile) -> list[PairRecord]:
        if path not in logs:
            logs[path] = log_records(path, results)
        return logs[path]

    for path, results in runs:
        config = results.config
        name, budget = split_budget(config.policy or "")
        oracle = oracles.get(_oracle_key(config))
        for arm, block in results.metrics["selection"].items():
            every, hidden = block["materialization"]["all"], block["materialization"]["donor_hidden"]
            overlap = block.get("overlap_by_layer") or [float("nan")]
            rows.append(
                {
                    "model": config.model.model,
                    "suite": config.suite,
                    "arm": arm,
                    "policy": name,
                    "budget": budget or "",
                    "source": config.source_mode or "natural",
                    "n": block["n_pairs"],
                    "leak": block["members_differ"]["rate"],
                    "leak_matched": block.get("members_differ_matched", {}).get("rate"),  # schema 1.10 on
                    "overlap": sum(overlap) / len(overlap),
                    "source_kept_a": block.get("source_kept", {}).get("a", {}).get("rate"),
                    "donor_visible": block["donor_visible"]["rate"],
                    "follow_rate": every["follow_rate"]["rate"],
                    "shift": every["shift"]["mean"],
                    "shift_lo": every["shift"]["ci"][0],
                    "shift_hi": every["shift"]["ci"][1],
                    "sign_p": every["shift"]["sign_p"],
                    "hidden_n": hidden["n"] if hidden else 0,
                    "hidden_shift": hidden["shift"]["mean"] if hidden else None,
                    # the answers' accuracy and the pairs with two donor values (0: harvest's natural
                    # QAs, whose leak, follow rate and shift mean nothing); blank in files summarized
                    # before they were
                    "accuracy": every.get("accuracy", {}).get("mean"),
                    "margin": every.get("margin", {}).get("mean"),
                    "paired": every.get("paired"),
                    # schema 1.10 on: the K/V bytes one served member cache holds, and a per-head cache's
                    "served_bytes": block.get("served_bytes_mean"),
                    "needed_bytes": block.get("needed_bytes_mean"),
                    **(versus_oracle(records(path, results), records(*oracle), arm) if oracle else {}),
                }
            )
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return table.sort_values(["model", "suite", "arm", "policy", "source", "budget"], ignore_index=True)


def grid_columns(table: pd.DataFrame, model: str, suite: str, arm: str) -> tuple[str, ...]:
    """What an arm's grids show: the donor shift, or for an arm of unpaired items only (harvest's
    natural QAs: no donor to shift) the answers' accuracy and, where recorded, their margin."""
    part = table[(table.model == model) & (table.suite == suite) & (table.arm == arm)]
    if not (part["paired"] == 0).all():
        return ("shift",)
    return ("accuracy", "margin") if part["margin"].notna().any() else ("accuracy",)


def audit_grid(table: pd.DataFrame, model: str, suite: str, arm: str, column: str = "shift") -> pd.DataFrame:
    """Policy x budget grid of `column` (the donor shift, accuracy or margin), `natural / evicted` in each cell."""
    part = table[(table.model == model) & (table.suite == suite) & (table.arm == arm)]
    form = "{:.3f}" if column == "accuracy" else "{:+.3f}"
    cell = part.assign(text=part[column].map(lambda v: "—" if pd.isna(v) else form.format(v)))
    grid = cell.pivot_table(index="policy", columns=["budget", "source"], values="text", aggfunc="first")
    out = pd.DataFrame(index=grid.index)
    missing = pd.Series("—", index=grid.index)
    # A policy that keeps what it declares (recent:30) has no budget: its column is "—", last.
    for budget in sorted({b for b, _ in grid.columns}, key=budget_order):
        halves = [
            grid[(budget, mode)].fillna("—") if (budget, mode) in grid.columns else missing
            for mode in ("natural", "evicted")
        ]
        out[budget or "—"] = halves[0] + " / " + halves[1]
    return out


def markdown(table: pd.DataFrame) -> str:
    """A markdown table (no tabulate dependency): numbers to three decimals."""

    def text(v: object) -> str:
        if isinstance(v, float):
            return "—" if math.isnan(v) else f"{v:.3f}"
        return "—" if v is None else str(v)

    head = [str(table.index.name or ""), *map(str, table.columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([str(i), *(text(v) for v in row)]) + " |" for i, row in zip(table.index, table.values)]
    return "\n".join(lines)
