"""Fresh-seed replication (the paper's kv_frozen.py: "core results must survive brand-new seeds"):
one suite run under several seeds, and whether each declared metric says the same under all.

Per metric valid for the readout, each seed's value and its *verdict*, a sign against the metric's
reference: +1 above it, -1 below it, 0 undecided. The reference is chance for an accuracy, 0 for a
difference or a margin shift. A value with an interval is decided by the interval: above when its
lower end is above the reference, below when its upper end is under it. Follow:anti counts are
decided by the exact sign test at .05. A check (control clean, ...) is its own verdict. The seeds
*agree* on a metric when every verdict is the same; metrics without a verdict (per-construction
mappings, counts, plain numbers) are listed per seed, with `agree` null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matbench.protocol.metrics import Metric
from matbench.protocol.verdicts import decide


def verdict(metric: Metric, value: Any) -> int | bool | None:
    """The metric's verdict on one seed's value (see the module docstring); None: none is drawn."""
    return decide(metric, value)


def replication(
    metrics_by_seed: Mapping[int, dict[str, Any]], contract: tuple[Metric, ...], readout: str
) -> dict[str, Any]:
    """{metric key: {label, per_seed: {seed: text}, verdicts: {seed: verdict}, agree}} over the
    metrics of `contract` valid for `readout`, and how many of those with verdicts agree."""
    out: dict[str, Any] = {}
    for metric in contract:
        if not metric.valid_for(readout):
            continue
        values = {seed: metric.value(m, f"seed {seed}") for seed, m in metrics_by_seed.items()}
        verdicts = {seed: verdict(metric, v) for seed, v in values.items()}
        decided = None if any(v is None for v in verdicts.values()) else len(set(verdicts.values())) == 1
        out[metric.key] = {
            "label": metric.label,
            "per_seed": {s: metric.text(v) for s, v in values.items()},
            "verdicts": verdicts if decided is not None else None,
            "agree": decided,
        }
    judged = [m for m in out.values() if m["agree"] is not None]
    return {
        "seeds": sorted(metrics_by_seed),
        "metrics": out,
        "agreement": {"judged": len(judged), "agree": sum(m["agree"] for m in judged)},
    }


def replication_report(
    suite: str,
    model: str,
    contract: tuple[Metric, ...],
    by_combo: Mapping[tuple[str, str], Mapping[int, dict[str, Any]]],
) -> dict[str, Any]:
    """What `matbench replicate` writes as replication.json: per (readout, serving) of `by_combo`
    ({(readout, serving): {seed: metrics}}), its `replication` report."""
    return {
        "suite": suite,
        "model": model,
        "by_readout": {
            f"{readout}_{serving}": replication(metrics, contract, readout)
            for (readout, serving), metrics in sorted(by_combo.items())
        },
    }


def replication_markdown(report: dict[str, Any]) -> str:
    """One row per metric: its value under each seed and whether the seeds agree."""
    seeds = report["seeds"]
    lines = ["| metric | " + " | ".join(f"seed {s}" for s in seeds) + " | agree |", "|---|" + "---|" * (len(seeds) + 1)]
    for m in report["metrics"].values():
        agree = "—" if m["agree"] is None else ("yes" if m["agree"] else "**no**")
        lines.append(f"| {m['label']} | " + " | ".join(m["per_seed"][s] for s in seeds) + f" | {agree} |")
    a = report["agreement"]
    lines.append(f"\n{a['agree']} of {a['judged']} judged metrics agree across seeds {', '.join(map(str, seeds))}.")
    return "\n".join(lines)
