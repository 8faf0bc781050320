"""Downloads: every table of the site as CSV and JSON next to its page, and all runs as parquet.

A table's download has exactly its rows, in the order the page lists them before any sort, and
these columns: `row` (the row's kind: measured or reported), then per column of the table its
header with the cell's text as the page shows it (a dash where the page shows one), `<header>
value` where any cell of the column sorts by something other than its text (the unrounded number
behind "0.531 [0.412, 0.647]", the full revision behind its 16 shown digits; null where the page
has no sort key), and `<header> link` where any cell links (the evidence, a model page). Built
with pandas; the JSON is written by the json module so floats keep every digit (pandas' writer
stops at 15). In the CSV a text a spreadsheet would run as a formula starts with an apostrophe.

`leaderboard.parquet` at the site root holds one row per validated results file: who and how
(model, revision, suite, readout, serving, policy, budget, ...), each suite's headline metrics
(those it declares for the overview) flattened to numbers with their CIs, and the path or address
of its evidence.

A policies page's heat maps are one download per page in long form: one row per filled heat-map
cell, in page order (section, heat map, row, column), naming its section, metric, policy, source
mode and budget beside the cell's text, unrounded value, hover title and link; the blank cells of budgets a policy
did not run are left out.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from matbench.evaluators import EVALUATORS
from matbench.leaderboard.collect import ModelEntry, Run
from matbench.leaderboard.policies import AuditSection
from matbench.leaderboard.tables import Row
from matbench.protocol.metrics import Format, Metric
from matbench.protocol.runspec import split_budget

PARQUET = "leaderboard.parquet"


@dataclass(frozen=True)
class TableDownload:
    """The two files of one table, relative to the site root (the pages sit there too)."""

    csv: str
    json: str


def table_frame(header: Sequence[str], rows: Sequence[Row]) -> pd.DataFrame:
    """The table as the page lays it out: one record per row, the columns the module doc names."""
    columns: dict[str, list[Any]] = {"row": [r.kind for r in rows]}
    for k, name in enumerate(header):
        cells = [r.cells[k] for r in rows]
        columns[name] = [c.text for c in cells]
        if any(c.sort is not None and str(c.sort) != c.text for c in cells):
            columns[f"{name} value"] = [c.sort for c in cells]
        if any(c.href for c in cells):
            columns[f"{name} link"] = [c.href for c in cells]
    # object dtype: a column keeps each cell's own type (an int stays an int, a missing value None)
    return pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in columns.items()})


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in frame.to_dict(orient="records")
    ]


def audit_frame(sections: Sequence[AuditSection]) -> pd.DataFrame:
    """Every filled cell of a policies page's heat maps, one record each (module doc)."""
    records = [
        {
            "suite": s.suite,
            "arm": s.arm,
            "readout": s.readout,
            "serving": s.serving,
            "settings": ", ".join(s.settings),
            "metric": h.metric.label,
            "policy": policy,
            "source mode": mode,
            "budget": budget,
            "text": cell.text,
            "value": cell.value,
            "title": cell.title,
            "link": cell.href,
        }
        for s in sections
        for h in s.maps
        for policy, cells in h.rows
        for (mode, budget), cell in zip(h.columns, cells)
        if cell.text
    ]
    return pd.DataFrame.from_records(records)


def write_table(out: Path, stem: str, header: Sequence[str], rows: Sequence[Row]) -> TableDownload:
    """`<stem>.csv` and `<stem>.json` in `out`; `stem` is built from page and table names, never
    from a submitted string."""
    return write_frame(out, stem, table_frame(header, rows))


# A cell a spreadsheet would run as a formula (CSV injection, OWASP): a submitted model name such
# as "=HYPERLINK(...)" or "@SUM(...)" is written to the CSV behind an apostrophe, which spreadsheets
# show as text; the JSON keeps it as submitted. The signed numbers the tables show ("-0.260",
# "+0.005 [-0.002, +0.011]", "12.5%") are left as they are.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?%?"
SHOWN_NUMBER = re.compile(rf"{_NUMBER}(?: \[{_NUMBER}, {_NUMBER}\])?")


def csv_cell(value: Any) -> Any:
    """`value` as the CSV holds it: a text a spreadsheet would take for a formula behind an apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not SHOWN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_frame(out: Path, stem: str, frame: pd.DataFrame) -> TableDownload:
    frame.apply(lambda column: column.map(csv_cell)).to_csv(out / f"{stem}.csv", index=False)
    (out / f"{stem}.json").write_text(
        json.dumps(_records(frame), ensure_ascii=False, indent=0) + "\n", encoding="utf-8"
    )
    return TableDownload(f"{stem}.csv", f"{stem}.json")


def _flatten(prefix: str, value: Any, metric: Metric) -> dict[str, Any]:
    """A metric value as scalar columns: mappings by key, a CI (a two-number list under a key
    naming a ci) as _low/_high, a CLASSES list [follow, anti] by its class names, other lists by
    index (a follow:anti pair is not an interval)."""
    if metric.format is Format.CLASSES and isinstance(value, list) and len(value) == 2:
        value = {"follow": value[0], "anti": value[1]}
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for k, v in value.items():
            flat.update(_flatten(f"{prefix}.{k}", v, metric))
        return flat
    if isinstance(value, list):
        if len(value) == 2 and "ci" in prefix.rsplit(".", 1)[-1] and all(isinstance(v, (int, float)) for v in value):
            return {f"{prefix}_low": value[0], f"{prefix}_high": value[1]}
        return {f"{prefix}.{i}": v for i, v in enumerate(value)}
    return {prefix: value}


def run_record(run: Run, entry: ModelEntry, evidence: tuple[str, str]) -> dict[str, Any]:
    """One results file as a flat record: its config, its suite's headline metrics, its evidence."""
    c = run.results.config
    policy, budget = split_budget(c.policy) if c.policy else (None, None)
    record: dict[str, Any] = {
        "model": entry.name,
        "revision": entry.revision,
        "suite": c.suite,
        "readout": c.readout,
        "serving": c.serving,
        "policy": policy,
        "budget": budget,
        "source_mode": c.source_mode,
        "variant": ", ".join(c.variants) or None,
        "n_items": c.n_items,
        "device": c.model.device,
        "dtype": c.model.dtype,
        "matbench": run.results.environment.matbench,
        "sha256": run.sha256,
        "results": evidence[0],
        "items_log": evidence[1],
    }
    evaluator = EVALUATORS.get(c.suite)
    for metric in (m for m in evaluator.contract if m.overview):
        value = metric.value(run.results.metrics, where=f"results of {entry.name!r} ({run.path})")
        if value is not None:
            record.update(_flatten(f"{c.suite}.{metric.key}", value, metric))
    return record


def parquet_engine() -> str | None:
    """The engine pandas would write parquet with, or None where neither is installed."""
    return next((e for e in ("pyarrow", "fastparquet") if importlib.util.find_spec(e) is not None), None)


def write_runs_parquet(out: Path, entries: list[ModelEntry], links: dict[Path, tuple[str, str]]) -> Path | None:
    """`leaderboard.parquet`: one row per results file, in the runs table's order; None (and
    nothing written) where no parquet engine is installed."""
    engine = parquet_engine()
    if engine is None:
        return None
    frame = pd.DataFrame([run_record(run, e, links[run.path.resolve()]) for e in entries for run in e.runs])
    path = out / PARQUET
    frame.to_parquet(path, engine=engine, index=False)
    return path
