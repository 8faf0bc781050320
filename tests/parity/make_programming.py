"""Record the paper's programming scripts and write tests/parity/fixtures/programming.json.

    python -m tests.parity.make_programming /work/paper

Runs kvmemory/kv_mater2.py (X9) and kvmemory/kv_mater3.py (X10) of the paper's code under the
recorder's stand-in model (`tests.parity.recorder`), for fixed seeds and two items each (item i
uses template i % 2, so all ten carrier templates appear in each script), and stores per item,
carrier kind and donor:

- for the pas and exp carriers, the global prefill the script encodes (header and all 24 events
  at their original positions, with the position budgets of the operand and carrier slots): the
  draws (names, slots, values, fillers) are read back from it by tests/test_parity_programming.py;
- every readout call in order, labelled with the question (qmain, qunrel, qtgt, sel) and the
  serve set (car, rev, both): the kept rows as (text, [first, last position]) runs, the query
  (question + readout suffix + chat tail, or the whole text prompt for sel) and the token budget.

Not collected by pytest (the tests never import the paper's code). Takes seconds.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.parity import recorder

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "programming.json"
NOTICE = (
    "Recorded from the paper's public code, oklen/Compute-Globally-Materialize-Locally at commit d80ef7b, "
    "scripts kvmemory/kv_mater2.py and kvmemory/kv_mater3.py (texts rendered by the paper's code). "
    "MIT License, Copyright (c) 2026 Zefeng Cai, Zerui Cai (the authors); see tests/parity/fixtures/PAPER-LICENSE"
)
KINDS = ("pas", "bind", "dir", "nld", "exp")  # kv_mater2.ARMS order
T_KINDS = ("bind", "dir", "exp")
DONORS = ("hi", "lo")
# Kinds whose global prefill is stored (the other kinds' differ only in the carrier, which their
# serves show): pas (one carrier for both donors) and exp (a donor-dependent, budgeted carrier).
PREFILL_KINDS = ("pas", "exp")
RUNS = {"kv_mater2": ["--items", "2", "--seed", "3900"], "kv_mater3": ["--items", "2", "--seed", "4100"]}


def _record(paper: Path, script: str, argv: list[str]) -> tuple[list[recorder.Serve], list[list]]:
    """The script's serves, and every prefill it encodes (runs of consecutive positions), in order."""
    with tempfile.TemporaryDirectory() as tmp:
        run = recorder.record_run(paper, script, [*argv, "--out", str(Path(tmp) / "out.json")])
    return run.serves, [[[t, list(r)] for t, r in runs] for runs in run.encodes]


def _calls(script: str, kind: str, donor: str) -> list[tuple[str, str, str]]:
    """(question, serve set, call) of each readout the script makes for one (kind, donor)."""
    if script == "kv_mater2":
        calls = [("qmain", "both", "greedy_pos"), ("qunrel", "both", "greedy_pos")]
        calls += [("qtgt", "both", "greedy_pos")] if kind in T_KINDS else []
        calls += [("qmain", "sel", "greedy")] if kind == "exp" or donor == "hi" else []
        return calls
    calls = []
    for serve_set in ("car", "rev", "both"):
        calls += [("qmain", serve_set, "greedy_pos")]
        calls += [("qtgt", serve_set, "greedy_pos")] if kind in T_KINDS else []
    return calls


QUESTION_OPENINGS = {
    "qmain": "\n\nQuestion: Was sensor ",
    "qtgt": "\n\nQuestion: What verdict is recorded",
    "qunrel": "\n\nQuestion: What state is register ",
}


def script_fixture(paper: Path, script: str, argv: list[str]) -> dict:
    serves, prefills = _record(paper, script, argv)
    header = prefills.pop(0)  # the header, encoded once
    n_items = int(argv[argv.index("--items") + 1])
    items, s, p = [], 0, 0
    for it in range(n_items):
        cells = []
        for kind in KINDS:
            for donor in DONORS:
                prefill = prefills[p]
                p += 1
                assert prefill[0][0].startswith(header[0][0])
                labelled = []
                for question, serve_set, call in _calls(script, kind, donor):
                    serve = serves[s]
                    s += 1
                    assert serve.call == call, (script, it, kind, donor, question, serve.call)
                    opening = QUESTION_OPENINGS[question]
                    assert (opening in serve.query) if call == "greedy" else serve.query.startswith(opening)
                    labelled.append({"question": question, "set": serve_set, **serve.to_json()})
                cell = {"kind": kind, "donor": donor, "serves": labelled}
                if kind in PREFILL_KINDS:
                    cell["prefill"] = prefill
                cells.append(cell)
        items.append({"item": it, "template": it % 2, "cells": cells})
    assert s == len(serves) and p == len(prefills), "the paper's loop order changed"
    return {"argv": argv, "items": items}


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m tests.parity.make_programming /path/to/paper-checkout")
    paper = Path(argv[0])
    fixture = {
        "notice": NOTICE,
        "paper": {"repo": "oklen/Compute-Globally-Materialize-Locally", "commit": "d80ef7b"},
        "tokenizer": "tests.parity.recorder.CharTokenizer (one id per character; positions are characters)",
        "scripts": {script: script_fixture(paper, script, args) for script, args in RUNS.items()},
    }
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
