"""matbench's side of a parity check: what matbench serves for one arm and member, in the shape
the recorder gives for the paper's scripts (tests/parity/recorder.py), under the same
character-level tokenizer and chat template."""

from __future__ import annotations

import json
import re
from pathlib import Path

from matbench.engine.layout import layout_pair
from matbench.engine.render import Renderer
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import READOUTS
from tests.parity.recorder import CharTokenizer, _runs

RENDERER = Renderer(CharTokenizer())
FIXTURES = Path(__file__).parent / "fixtures"
# One event of the paper's trajectory frame, as the fixtures hold it: (step number, body).
EVENT = re.compile(r"<step (\d+)>\naction: reg_op\(\)\nobservation: (.*)\n")


def fixture(suite: str) -> dict:
    """The committed recording of the paper's scripts for `suite` (tests/parity/make_<suite>.py)."""
    return json.loads((FIXTURES / f"{suite}.json").read_text())


def served(pair: DonorPair, arm_name: str, member: int, readout: str) -> dict:
    """{"rows": kept rows as runs of consecutive positions [[text, [first, last]], ...],
    "query": the query text (patch, question, suffix, tail, prefix), "query_position": where
    compact serving asks (max kept position + 1, or L for a query_at_end arm)}."""
    arm = next(a for a in pair.arms if a.name == arm_name)
    layout = layout_pair(pair, RENDERER)
    ids, positions = layout.members[member].served_tokens(arm.served)
    return {
        "rows": [[t, p] for t, p in _runs(list(ids), list(positions))],
        "query": RENDERER.arm_query(pair, arm, READOUTS.get(readout)),
        "query_position": layout.length if arm.query_at_end else max(positions) + 1,
    }


def trajectory(pair: DonorPair, member: int) -> list[list]:
    """The member's whole global prefill as runs of consecutive positions (the recorder's encodes)."""
    m = layout_pair(pair, RENDERER).members[member]
    return [[t, p] for t, p in _runs(list(m.input_ids), list(m.positions))]


def shifted(runs: list, after: int, gap: int) -> list:
    """The paper's runs with every position from `after` on moved `gap` later: where matbench's
    position budget skips positions the paper's unpaired rendering does not."""
    ids, positions = [], []
    for text, (first, last) in runs:
        assert len(text) == last - first + 1
        ids += [ord(c) for c in text]
        positions += [p + gap if p >= after else p for p in range(first, last + 1)]
    return [[t, p] for t, p in _runs(ids, positions)]


def budget_shifts(pair: DonorPair, member: int, runs: list) -> list:
    """The paper's runs (one unpaired trajectory, no budgets) moved by the gaps matbench's position
    budgets leave after each donor-dependent slot of `member` (the source, a second dropped source,
    an opposite decoy, a verdict...), in slot order."""
    layout = layout_pair(pair, RENDERER)
    m = layout.members[member]
    for slot in sorted(pair.varying()):
        lo, hi = m.event_spans[slot]
        budget = max(b - a for a, b in (x.event_spans[slot] for x in layout.members))
        runs = shifted(runs, m.positions[hi - 1] + 1, budget - (hi - lo))
    return runs
