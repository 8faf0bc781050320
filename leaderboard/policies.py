"""A model's policies page: the eviction audit as policy x budget heat maps (issue 16).

Per suite (in table order), readout, serving and governed arm (not the per-question breakdowns
an arm's selection block may hold, which `audit.csv` keeps), one heat map per `AUDIT_METRICS` entry: a row per
serving policy run (its spec without the budget, so `snapkv:question=True` is its own row), a
column per source mode and budget, and the suite's oracle run (the paper's protocol: whole events
kept) as the reference row where the metric is defined for it. Values are the runs'
`metrics.selection` blocks (`matbench.results.selection`); the oracle row is computed from its
item log by the same function, so both rows measure the same thing. Every cell links to its
results file and carries n and the 95% CI in its title.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard import plots
from matbench.leaderboard.collect import ModelEntry, Run
from matbench.protocol.runspec import budget_order, split_budget
from matbench.results.rescore import read_records
from matbench.results.selection import materialization

SOURCE_MODES = ("natural", "evicted")


@dataclass(frozen=True)
class AuditMetric:
    """One heat map: `read` takes a governed arm's selection block (or, for the oracle row, a
    pseudo-block holding only its `materialization`) and returns (value, 95% CI or None, n), or
    None where the block lacks it (older schema). `diverging`: centred on zero (colour by sign),
    else a rate in [0, 1]."""

    key: str
    label: str
    description: str
    read: Callable[[dict[str, Any]], tuple[float, list[float] | None, int] | None]
    diverging: bool = False
    oracle: bool = False  # defined for the oracle's row


def _hidden(block: dict[str, Any]) -> dict[str, Any] | None:
    """The pairs whose served rows hid the donor; None for an arm of unpaired items (no donor)."""
    return None if _unpaired(block) else block["materialization"].get("donor_hidden")


def _unpaired(block: dict[str, Any]) -> bool:
    """Every pair of the arm has one value for both members (harvest's natural QAs): nothing to
    follow, shift or leak. Blocks summarized before `paired` was counted read as paired."""
    return (block["materialization"].get("all") or {}).get("paired") == 0


def _accuracy(block: dict[str, Any]):
    every = block["materialization"].get("all") or {}
    accuracy = every.get("accuracy")
    return (accuracy["mean"], accuracy["ci"], accuracy["n"]) if accuracy else None


def _margin(block: dict[str, Any]):
    margin = (block["materialization"].get("all") or {}).get("margin")
    return (margin["mean"], margin["ci"], margin["n"]) if margin else None


def _shift(block: dict[str, Any]):
    hidden = _hidden(block)
    return (hidden["shift"]["mean"], hidden["shift"]["ci"], hidden["n"]) if hidden else None


def _follow(block: dict[str, Any]):
    hidden = _hidden(block)
    return (hidden["follow_rate"]["rate"], hidden["follow_rate"]["ci"], hidden["n"]) if hidden else None


def _rate(*path: str, paired_only: bool = False):
    def read(block: dict[str, Any]):
        if paired_only and _unpaired(block):
            return None
        for key in path:
            block = block.get(key) if isinstance(block, dict) else None
        return (block["rate"], block["ci"], block["n"]) if block else None

    return read


def _memory(block: dict[str, Any]):
    served, needed = block.get("served_bytes_mean"), block.get("needed_bytes_mean")
    return (needed / served, None, block["n_pairs"]) if served and needed is not None else None


AUDIT_METRICS = (
    AuditMetric(
        "shift",
        "donor margin shift",
        "mean donor margin shift over the pairs whose served rows hid every "
        "donor-dependent token (in source-evicted mode, all pairs): the state the kept rows carry",
        _shift,
        diverging=True,
        oracle=True,
    ),
    AuditMetric("follow", "follow rate", "share of those pairs whose argmax followed the donor", _follow, oracle=True),
    AuditMetric(
        "accuracy",
        "accuracy",
        "share of the members answering their own value: for unpaired items "
        "(harvest's natural QAs, one input per pair, no donor to follow) what the kept rows still answer; "
        "in source-evicted mode, without the evidence",
        _accuracy,
        oracle=True,
    ),
    AuditMetric(
        "margin",
        "answer margin",
        "for unpaired items, the probe's log p(right answer) - log p(other), "
        "mean over pairs: the lean toward the right answer that moves before the argmax does (what the "
        "donor shift is to the follow rate)",
        _margin,
        diverging=True,
        oracle=True,
    ),
    AuditMetric(
        "leak",
        "selection leak",
        "share of pairs whose two donor members' picks differ outside the donor "
        "events: the evicted event steering the choice itself",
        _rate("members_differ", paired_only=True),
    ),
    AuditMetric(
        "leak_matched",
        "leak at matched counts",
        "the same with member B keeping as many rows as A (what a "
        "ratio budget's row count cannot explain; results schema 1.10 on)",
        _rate("members_differ_matched", paired_only=True),
    ),
    AuditMetric(
        "memory",
        "memory needed / held",
        "bytes a cache holding only each head's own rows would need, "
        "over the bytes the served cache holds (every row any head keeps, in every head): 1.00 = no waste "
        "(results schema 1.10 on)",
        _memory,
    ),
    AuditMetric(
        "source_kept",
        "source retention",
        "share of pairs whose member A pick kept a row of the source (natural mode; 0 by construction when evicted)",
        _rate("source_kept", "a"),
    ),
)


@dataclass(frozen=True)
class HeatCell:
    text: str
    color: str | None = None
    href: str | None = None
    title: str | None = None
    strong: bool = False  # a shift whose CI excludes zero
    value: float | None = None  # the unrounded number behind `text` (the page's download)


@dataclass(frozen=True)
class HeatMap:
    metric: AuditMetric
    columns: list[tuple[str, str]]  # (source mode, budget)
    rows: list[tuple[str, list[HeatCell]]]

    @property
    def modes(self) -> list[tuple[str, int]]:
        """(source mode, its number of budget columns), in column order: the header's first row."""
        modes = list(dict.fromkeys(m for m, _ in self.columns))
        return [(m, sum(c[0] == m for c in self.columns)) for m in modes]


@dataclass(frozen=True)
class AuditSection:
    suite: str
    readout: str
    serving: str
    arm: str
    maps: list[HeatMap]
    settings: tuple[str, ...] = ()  # how the model ran, beyond the protocol (`_model_settings`)
    charts: tuple[Markup, ...] = ()  # the donor shift against the ratio removed, a chart per source mode


def _color(metric: AuditMetric, value: float, scale: float) -> str:
    """Diverging: blue below zero, red above, by |value| / scale; rates: white to purple."""
    if metric.diverging:
        weight = min(1.0, abs(value) / scale) if scale else 0.0
        hue = 0 if value > 0 else 215
    else:
        weight, hue = min(1.0, max(0.0, value)), 270
    return f"hsl({hue}, 70%, {round(100 - 45 * weight)}%)"


def _cell(metric: AuditMetric, read, scale: float, href: str | None) -> HeatCell:
    if read is None:
        return HeatCell(
            "—", href=href, title="not measured here: no pair hid the donor, or the file predates the metric"
        )
    value, ci, n = read
    text = f"{value:+.3f}" if metric.diverging else f"{value:.2f}"
    title = f"n={n}" + (f", 95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
    strong = bool(metric.diverging and ci and (ci[0] > 0 or ci[1] < 0))
    return HeatCell(text, _color(metric, value, scale), href, title, strong, value)


def _oracle_block(run: Run, arm: str) -> dict[str, Any] | None:
    records = read_records(run.log, run.results.items.n_records)
    every = materialization([r for r in records if arm in r.arms], arm)
    return {"materialization": {"all": every, "donor_hidden": every}} if every else None


def audit_sections(entry: ModelEntry, links: dict[Path, tuple[str, str]]) -> list[AuditSection]:
    """The heat maps of every audit the model has (runs under a serving policy other than the
    oracle), grouped by suite, readout, serving and governed arm."""
    policy_runs = [
        r for r in entry.runs if r.results.config.policy not in (None, "oracle") and "selection" in r.results.metrics
    ]
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in policy_runs:
        c = run.results.config
        groups.setdefault((c.suite, c.readout, c.serving, _model_settings(c)), []).append(run)
    sections = []
    order = {s: i for i, s in enumerate(suites_in_order())}
    for (suite, readout, serving, settings), runs in sorted(
        groups.items(), key=lambda g: (order.get(g[0][0], len(order)), g[0])
    ):
        oracle = _oracle_run(entry, suite, readout, serving, settings)
        # Per-question breakdowns of an arm (access's `harv_kv/exact`, ...) stay in audit.csv.
        arms = sorted(
            (a for a in dict.fromkeys(a for r in runs for a in r.results.metrics["selection"]) if "/" not in a),
            key=lambda a: _headline_rank(suite, a),
        )
        for arm in arms:
            cells: dict[tuple[str, str, str], tuple[dict[str, Any], str | None]] = {}
            for run in runs:
                block = run.results.metrics["selection"].get(arm)
                if block is None:
                    continue
                name, budget = split_budget(run.results.config.policy)
                budget = budget or "—"  # a policy that keeps what it declares (recent:30) takes no budget
                mode = run.results.config.source_mode or "natural"
                if run.results.config.kept_from:  # member B's picks: a separate row
                    name += " (kept from B)"
                cells[(name, mode, budget)] = (block, links.get(run.path.resolve(), (None, None))[0])
            columns = sorted(
                {(m, b) for _, m, b in cells}, key=lambda c: (SOURCE_MODES.index(c[0]), budget_order(c[1]))
            )
            policies = sorted({p for p, _, _ in cells})
            oracle_block = _oracle_block(oracle, arm) if oracle else None
            maps, charts = [], ()
            for metric in AUDIT_METRICS:
                reads = {k: metric.read(block) for k, (block, _) in cells.items()}
                if all(v is None for v in reads.values()):
                    continue
                oracle_read = metric.read(oracle_block) if oracle_block and metric.oracle else None
                values = [abs(v[0]) for v in [*reads.values(), oracle_read] if v is not None]
                scale = max(values, default=0.0)
                rows = []
                if oracle is not None and metric.oracle:
                    href = links.get(oracle.path.resolve(), (None, None))[0]
                    rows.append(("oracle (whole events)", [_cell(metric, oracle_read, scale, href)] * len(columns)))
                for policy in policies:
                    rows.append(
                        (
                            policy,
                            [
                                _cell(
                                    metric, reads.get((policy, m, b)), scale, cells.get((policy, m, b), ({}, None))[1]
                                )
                                if (policy, m, b) in cells
                                else HeatCell("")
                                for m, b in columns
                            ],
                        )
                    )
                maps.append(HeatMap(metric, columns, rows))
                if metric.key == "shift":
                    charts = _ratio_charts(suite, arm, reads, oracle_read)
            sections.append(AuditSection(suite, readout, serving, arm, maps, settings, charts))
    return sections


Read = tuple[float, list[float] | None, int] | None  # an AuditMetric's (value, 95% CI, n)


def _ratio_charts(
    suite: str, arm: str, reads: dict[tuple[str, str, str], Read], oracle_read: Read
) -> tuple[Markup, ...]:
    """Per source mode, each policy's donor shift (95% CI) against the fraction of rows removed,
    the oracle's shift as the dashed reference: a chart where two ratios or more were run."""
    out = []
    for mode in SOURCE_MODES:
        points: dict[str, dict[str, tuple[float, float | None, float | None]]] = {}
        for (policy, m, budget), read in reads.items():
            if m == mode and read is not None and "." in budget:  # ratios only: a token count is no fraction
                value, ci, _ = read
                points.setdefault(policy, {})[budget] = (value, *(ci or (None, None)))
        ratios = sorted({b for p in points.values() for b in p}, key=float)
        if len(ratios) < 2:
            continue
        values = [v for p in points.values() for point in p.values() for v in point if v is not None]
        values += [oracle_read[0]] if oracle_read else []
        bound = max(max(abs(v) for v in values), 1e-3)
        series = [plots.Series(policy, points[policy]) for policy in sorted(points)]
        reference = {r: oracle_read[0] for r in ratios} if oracle_read else None
        out.append(
            plots.line_chart(
                ratios,
                series,
                f"{suite}, arm {arm}, {mode}: donor margin shift against the fraction of rows removed",
                reference=reference,
                ylim=(-bound, bound),
                ylabel="donor margin shift",
                reference_label="oracle",
            )
        )
    return tuple(out)


def _headline_rank(suite: str, arm: str) -> tuple[int, str]:
    """Arms the suite's contract metrics name first (discovery's root before its chain), then by name."""
    keys = [m.key for m in EVALUATORS.get(suite).contract] if suite in EVALUATORS else []
    return next((i for i, k in enumerate(keys) if k.startswith(arm + "_")), len(keys)), arm


def _model_settings(config: Any) -> tuple[str, ...]:
    """A run's variants that change the model's input or RoPE (template, YaRN), not the serving
    policy: audits and their oracle row must agree on them."""
    return tuple(v for v in config.variants if v.startswith(("template ", "yarn ")))


def _oracle_run(entry: ModelEntry, suite: str, readout: str, serving: str, settings: tuple[str, ...]) -> Run | None:
    """The model's largest protocol run of the suite, readout and serving with the audit's model
    `settings`: the reference row; none where no protocol run matches (the eighth session's
    harvest audit ran without the YaRN factor 4 of the contract's harvest runs: its reference is
    the run without)."""
    candidates = [
        r
        for r in entry.runs
        if (r.results.config.suite, r.results.config.readout, r.results.config.serving) == (suite, readout, serving)
        and tuple(r.results.config.variants) == settings
    ]
    return max(candidates, key=lambda r: r.results.config.n_items, default=None)
