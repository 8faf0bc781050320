"""The filters above a table: a search box and one select per facet the table's rows carry.

The options are every value the rows have, in a stable order, so the page lists exactly what a
choice can match; filter.js hides the rows that do not match (they stay in the DOM, so sorting
and a later change of filter see them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.tables import Row

# The overview has one row per model's scorecard: serving, policy and budget describe a results
# file, so they filter the runs table only.
OVERVIEW_FACETS = ("model", "suite", "readout")
RUNS_FACETS = ("model", "suite", "readout", "serving", "policy", "budget")


@dataclass(frozen=True)
class Filter:
    facet: str
    options: tuple[str, ...]


def _order(facet: str, values: set[str]) -> tuple[str, ...]:
    if facet == "suite":  # the suites' table order, as the nav bar lists them
        order = {s: i for i, s in enumerate(suites_in_order())}
        return tuple(sorted(values, key=lambda v: (order.get(v, len(order)), v)))
    return tuple(sorted(values, key=lambda v: (v.lower(), v)))


def filters_for(rows: Sequence[Row], facets: Sequence[str]) -> tuple[Filter, ...]:
    """One filter per facet, its options the values the rows carry."""
    found: dict[str, set[str]] = {f: set() for f in facets}
    for row in rows:
        for facet, values in row.facets:
            if facet in found:
                found[facet].update(values)
    return tuple(Filter(f, _order(f, found[f])) for f in facets)
