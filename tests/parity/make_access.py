"""Record the paper's access stimuli (kv_sweepmenu.py and kv_digit.py) for tests/test_parity_access.py.

    python -m tests.parity.make_access /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/access.json: for each item, the whole global prefill (text and
positions), the isolated re-encodings (kv_sweepmenu's sel_ikv) and every readout call (served rows,
query, token budget, probe candidates), as the paper's scripts render them under the
character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import record_run

SWEEP, SWEEP_ITEMS, SWEEP_SEED = "kv_sweepmenu", 2, 1400  # per setting: bin2, dir4, name8
DIGIT, DIGIT_ITEMS, DIGIT_SEED = "kv_digit", 2, 9200  # item 0 above 500, item 1 below
NOTICE = (
    "Rendered by kvmemory/kv_sweepmenu.py and kvmemory/kv_digit.py of "
    "https://github.com/oklen/Compute-Globally-Materialize-Locally (commit d80ef7b) under "
    "tests/parity/recorder.py. MIT License, Copyright (c) 2026 Zefeng Cai, Zerui Cai; "
    "see tests/parity/fixtures/PAPER-LICENSE"
)


def _argv(items: int, seed: int) -> list[str]:
    return ["--items", str(items), "--seed", str(seed), "--out", "/dev/null"]


def sweep(paper: Path) -> dict:
    run = record_run(paper, SWEEP, _argv(SWEEP_ITEMS, SWEEP_SEED))
    # Per item, serves: full_txt (text prompt), sel_txt (text prompt), harv_kv, sel_ikv; prefills
    # (after the header alone): the whole trajectory, then header + event 0 and header + event 23.
    items = []
    for k, setting in enumerate(s for s in ("bin2", "dir4", "name8") for _ in range(SWEEP_ITEMS)):
        serves = run.serves[4 * k : 4 * k + 4]
        encodes = run.encodes[1 + 3 * k : 1 + 3 * k + 3]
        items.append(
            {
                "setting": setting,
                "prefill": encodes[0],
                "isolated": encodes[1:],
                "serves": {arm: s.to_json() for arm, s in zip(("full_txt", "sel_txt", "harv_kv", "sel_ikv"), serves)},
            }
        )
    assert len(run.serves) == 4 * len(items) and len(run.encodes) == 1 + 3 * len(items)
    return {"argv": _argv(SWEEP_ITEMS, SWEEP_SEED), "items": items}


def digit(paper: Path) -> dict:
    run = record_run(paper, DIGIT, _argv(DIGIT_ITEMS, DIGIT_SEED))
    # Per item, serves: kv (decoy + carrier) then txt (every row), each exact, above500, first digit.
    names = [f"{arm}/{q}" for arm in ("kv", "txt") for q in ("exact", "above500", "first_digit")]
    items = [
        {
            "prefill": run.encodes[1 + k],
            "serves": {name: s.to_json() for name, s in zip(names, run.serves[6 * k : 6 * k + 6])},
        }
        for k in range(DIGIT_ITEMS)
    ]
    assert len(run.serves) == 6 * DIGIT_ITEMS and len(run.encodes) == 1 + DIGIT_ITEMS
    return {"argv": _argv(DIGIT_ITEMS, DIGIT_SEED), "items": items}


def main(paper_root: str) -> None:
    paper = Path(paper_root)
    fixture = {"notice": NOTICE, "scripts": {SWEEP: sweep(paper), DIGIT: digit(paper)}}
    out = Path(__file__).parent / "fixtures" / "access.json"
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {out} ({3 * SWEEP_ITEMS} {SWEEP} items, {DIGIT_ITEMS} {DIGIT} items)")


if __name__ == "__main__":
    main(sys.argv[1])
