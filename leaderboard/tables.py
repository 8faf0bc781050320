"""Table rows for the pages: every cell is (text, sort key, evidence link), formatted here so the
templates only lay out and escape."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench import stats
from matbench.errors import MatbenchError
from matbench.leaderboard.collect import ModelEntry
from matbench.leaderboard.reported import Reported


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str | None = None
    href: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Row:
    kind: str  # "measured" or "reported"
    cells: list[Cell]


OVERVIEW_HEADER = ["rank", "model", "revision", "discovery root f:a", "root donor shift", "trigger W/U/N",
                   "trigger shift → donor", "landing root+edge f:a", "access 2-way", "access 4-way", "access 8-way",
                   "nld − pas", "harvest harv − iso (LoCoMo)", "update patch wins", "update donor-follow despite patch"]
RUNS_HEADER = ["model", "revision", "suite", "readout", "serving", "items", "device", "dtype", "gates", "matbench",
               "results", "items log"]
EMPTY = Cell("—")


@contextmanager
def metrics_of(entry: ModelEntry) -> Iterator[None]:
    """A results file can pass the schema (metrics is an open mapping) and still lack the metrics
    this matbench reads: name its files in one line instead of failing deep inside a page."""
    try:
        yield
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        files = ", ".join(str(r.path) for r in entry.runs)
        raise MatbenchError(f"results of {entry.name!r} ({files}) lack the metrics this matbench reads "
                            f"({type(exc).__name__}: {exc}); run matbench rescore on them, or submit again") from None


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    if isinstance(value, dict):
        if "mean" in value and "ci" in value:
            return f"{value['mean']:+.3f} [{value['ci'][0]:+.3f}, {value['ci'][1]:+.3f}]"
        return ", ".join(f"{k}: {fmt(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ":".join(fmt(v) for v in value) if all(isinstance(v, int) for v in value) else ", ".join(map(fmt, value))
    return str(value)


def evidence_link(evidence: dict[str, Any], links: dict[Path, tuple[str, str]], out: Path) -> str | None:
    results = (out / evidence["results"]).resolve()
    return links.get(results, (None, None))[0]


def _ci(value: float, ci: list[float] | None) -> str:
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def root_follow(entry: ModelEntry) -> tuple[float, float, float] | None:
    """Discovery root donor-follow rate (follow / pairs) with its Wilson 95% CI: the rank key."""
    d = entry.contract.get("discovery")
    if not d:
        return None
    n = d["evidence"]["n_items"]
    follow = d["root_classes"]["follow"]
    return (follow / n, *stats.wilson(follow, n).as_list())


def tie_ranks(entries: list[ModelEntry]) -> dict[str, int]:
    """Rank = 1 + the number of models whose CI lies wholly above this one's: models whose
    intervals overlap share a rank (a tie group) instead of being ordered by noise."""
    keyed = {}
    for e in entries:
        with metrics_of(e):
            follow = root_follow(e)
        if follow is not None:
            keyed[e.slug] = follow
    return {k: 1 + sum(other[1] > mine[2] for other in keyed.values()) for k, mine in keyed.items()}


def overview_rows(entries: list[ModelEntry], ranks: dict[str, int], links, out: Path) -> list[Row]:
    rows = []
    for e in entries:
        with metrics_of(e):
            rows.append(_overview_row(e, ranks, links, out))
    return sorted(rows, key=lambda r: (r.cells[0].sort is None, r.cells[0].sort or 0, r.cells[1].text))


def _overview_row(e: ModelEntry, ranks: dict[str, int], links, out: Path) -> Row:
    c = e.contract

    def cell(suite: str, text_sort) -> Cell:
        entry = c.get(suite)
        if not entry:
            return EMPTY
        text, sort = text_sort(entry)
        return Cell(text, sort, evidence_link(entry["evidence"], links, out))

    rank = ranks.get(e.slug)
    follow = root_follow(e)
    access = {p: (lambda a, p=p: (_ci(a[p]["accuracy"], a[p]["ci"]), a[p]["accuracy"])) for p in ("bin2", "dir4", "name8")}
    return Row("measured", [
        Cell(f"{rank}" if rank else "—", rank if rank else None,
             title=f"root follow rate {_ci(*follow[:1], list(follow[1:]))}" if follow else None),
        Cell(e.name, e.name, f"model-{e.slug}.html"),
        Cell(e.revision[:16], e.revision),
        cell("discovery", lambda d: (f"{fmt(d['root_classes']['follow'])}:{d['root_classes']['anti']} (p {d['root_follow_anti_p']:.2g})",
                                     follow[0] if follow else None)),
        cell("discovery", lambda d: (fmt(d["root_shift"]), d["root_shift"]["mean"])),
        cell("trigger", lambda t: (f"{t['classes']['W']}/{t['classes']['U']}/{t['classes']['N']}", t["classes"]["W"])),
        cell("trigger", lambda t: (f"{t.get('kv_shift_toward_donor', '—')} of {sum(t['classes'].values())}",
                                   t.get("kv_shift_toward_donor"))),
        cell("landing", lambda x: (fmt(x["root_edge_follow_anti"]), x["root_edge_follow_anti"][0])),
        cell("access", access["bin2"]), cell("access", access["dir4"]), cell("access", access["name8"]),
        cell("programming", lambda p: (_ci(p["nld_minus_pas"]["follow_difference"], p["nld_minus_pas"]["follow_difference_ci"]),
                                       p["nld_minus_pas"]["follow_difference"])),
        cell("harvest", lambda h: (fmt(h["locomo"]) + (" ≈0" if h["locomo"]["equivalent"] else ""), h["locomo"]["mean"])
             if h.get("locomo") else ("—", None)),
        cell("update", lambda u: (f"{u['patch_win_rate']['bare']:.3f}", u["patch_win_rate"]["bare"])),
        cell("update", lambda u: (fmt(u["donor_follow_despite_patch"]["bare"]) if "donor_follow_despite_patch" in u else "—",
                                  u.get("donor_follow_despite_patch", {}).get("bare", [None])[0])),
    ])


def reported_rows(reported: Reported) -> list[Row]:
    rows = []
    for m in reported.models:
        f = m.figures
        d, lnd = f.get("discovery", {}), f.get("landing", {})
        prog, harv = f.get("programming", {}).get("carrier_follow"), f.get("harvest")
        cells = [Cell("reported"), Cell(m.model, m.model), Cell("paper")]
        cells.append(Cell(fmt(d["root_follow_anti"]) + (f" (p {d['root_sign_p']:.2g})" if "root_sign_p" in d else ""), None)
                     if d else EMPTY)
        cells += [EMPTY, EMPTY, EMPTY]
        cells.append(Cell(fmt(lnd["root_edge_follow_anti"]), lnd["root_edge_follow_anti"][0]) if "root_edge_follow_anti" in lnd else EMPTY)
        cells += [EMPTY, EMPTY, EMPTY]
        if prog:
            diff = prog["nld"][0] / prog["nld"][1] - prog["pas"][0] / prog["pas"][1]
            cells.append(Cell(f"{diff:.3f} (unpaired)", diff))
        else:
            cells.append(EMPTY)
        if harv:
            ci = harv.get("locomo_ci")
            text = f"{harv['locomo_harv_minus_iso']:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
            cells.append(Cell(text, harv["locomo_harv_minus_iso"]))
        else:
            cells.append(EMPTY)
        cells += [EMPTY, EMPTY]
        rows.append(Row("reported", cells))
    return rows


def runs_rows(entries: list[ModelEntry], links) -> list[Row]:
    rows = []
    for e in entries:
        for run in e.runs:
            r = run.results
            results_href, log_href = links[run.path.resolve()]
            gates = ", ".join(f"{k} {g.passed}/{g.checked}" for k, g in r.gates.items()) or "not run"
            rows.append(Row("measured", [
                Cell(e.name, e.name, f"model-{e.slug}.html"), Cell(e.revision[:16], e.revision),
                Cell(r.config.suite, r.config.suite), Cell(r.config.readout, r.config.readout),
                Cell(r.config.serving, r.config.serving), Cell(str(r.config.n_items), r.config.n_items),
                Cell(r.config.model.device, r.config.model.device), Cell(r.config.model.dtype, r.config.model.dtype),
                Cell(gates, gates), Cell(r.environment.matbench, r.environment.matbench),
                Cell("results", None, results_href), Cell("items", None, log_href)]))
    return rows


SUITE_FIELDS = {
    "discovery": ["root_classes", "root_follow_anti_p", "root_shift", "comprehension", "control_clean"],
    "trigger": ["classes", "classes_shift", "kv_shift_toward_donor", "kv_shift_mean", "control_clean"],
    "landing": ["root_edge_follow_anti", "edge_only_follow_anti", "downstream_effect", "depth3_root_follow_rate",
                "depth3_noroot_follow_rate", "control_clean"],
    "access": ["bin2", "dir4", "name8", "digit3_exact", "phrase_verbatim", "phrase_polarity", "control_clean"],
    "programming": ["nld_minus_pas", "control_clean"],
    "harvest": ["locomo", "realtalk", "injected_follow_anti"],
    "update": ["patch_win_rate", "old_value_leaks", "donor_follow_despite_patch", "patch_margin_gain",
               "controls_unchanged", "control_clean"],
}


def _access_cell(v: dict) -> str:
    return f"{_ci(v['accuracy'], v['ci'])} (chance {v['chance']:.3f}, shift {v['shift_mean']:+.3f})"


def suite_rows(suite: str, entries: list[ModelEntry], reported: Reported, links, out: Path) -> tuple[list[str], list[Row]]:
    fields = SUITE_FIELDS[suite]
    header = ["model", "revision", "items", *fields]
    rows = []
    for e in entries:
        entry = e.contract.get(suite)
        if not entry:
            continue
        with metrics_of(e):
            href = evidence_link(entry["evidence"], links, out)
            cells = [Cell(e.name, e.name, f"model-{e.slug}.html"), Cell(e.revision[:16], e.revision),
                     Cell(str(entry["evidence"]["n_items"]), entry["evidence"]["n_items"], href)]
            for name in fields:
                v = entry.get(name)
                text = _access_cell(v) if suite == "access" and isinstance(v, dict) and "accuracy" in v else fmt(v) if v is not None else "—"
                sort = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                cells.append(Cell(text, sort, href))
        rows.append(Row("measured", cells))
    for m in reported.models:
        figures = m.figures.get(suite)
        if figures:
            cells = [Cell(m.model, m.model), Cell("paper"), EMPTY]
            cells += [Cell(fmt(figures[f]), None) if f in figures else EMPTY for f in fields]
            cells.append(Cell("; ".join(f"{k}: {fmt(v)}" for k, v in figures.items() if k not in fields)))
            rows.append(Row("reported", cells))
    if any(r.kind == "reported" for r in rows):
        header = [*header, "other reported figures"]
        rows = [r if len(r.cells) == len(header) else Row(r.kind, [*r.cells, EMPTY]) for r in rows]
    return header, rows


