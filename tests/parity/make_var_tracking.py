"""Record the paper's variable-tracking sweep (kv_vartrack.py) and its decomposition
(kv_vardecomp.py) for tests/test_parity_var_tracking.py.

    python -m tests.parity.make_var_tracking /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/var_tracking.json: one item per cell (hops x span) of each script, as
it renders them under the character-level stand-in tokenizer (tests/parity/recorder.py): the
global prefill, every served readout (rows and query; text prompts whole), kv_vartrack's
isolated encodes and some of its anchored encodes (header, opening window, step).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

EVENTS = 24
# The anchored encodes kept (the fixture stays small): the first and last steps and those around
# where the 1024-token window stops covering everything before the step (stand-in tokenizer).
ANCH_KEPT = (0, 11, 12, 13, 14, 23)


def vartrack(paper_root: Path) -> dict:
    argv = ["--items", "1", "--out", "/dev/null"]
    run = record_run(paper_root, "kv_vartrack", argv)
    n = len(run.serves) // 4  # per item: full (text), harvest, iso, anch
    assert len(run.encodes) == 1 + n * (1 + 2 * EVENTS)
    items = []
    for k in range(n):
        enc = run.encodes[1 + k * (1 + 2 * EVENTS) : 1 + (k + 1) * (1 + 2 * EVENTS)]
        prefill, iso, anch = enc[0], enc[1 : 1 + EVENTS], enc[1 + EVENTS :]
        serves = [s.to_json() for s in run.serves[4 * k : 4 * (k + 1)]]
        items.append(
            {
                "prefill": prefill,
                "iso": iso,
                "anch": {str(i): anch[i] for i in ANCH_KEPT},
                "serves": dict(zip(("full", "harvest", "iso", "anch"), serves)),
            }
        )
    return {"script": "kv_vartrack", "argv": argv, "seed": 7, "items": items}


def vardecomp(paper_root: Path) -> dict:
    argv = ["--items", "1", "--seed", "300", "--out", "/dev/null"]
    run = record_run(paper_root, "kv_vardecomp", argv)
    items, e = [], 1  # encodes: the header alone, then per item the global prefill and one per chain step
    for k, hops in enumerate(h for h in (1, 2, 4) for _ in (0, 1)):
        serves = [s.to_json() for s in run.serves[4 * k : 4 * (k + 1)]]  # full_txt, sel_txt, harv_kv, sel_ikv
        items.append(
            {
                "prefill": run.encodes[e],
                "sel_ikv": run.encodes[e + 1 : e + 2 + hops],
                "serves": dict(zip(("full_txt", "sel_txt", "harv_kv", "sel_ikv"), serves)),
            }
        )
        e += 2 + hops
    assert e == len(run.encodes) and len(run.serves) == 4 * len(items)
    return {"script": "kv_vardecomp", "argv": argv, "seed": 300, "items": items}


def main(paper_root: str) -> None:
    root = Path(paper_root)
    out = Path(__file__).parent / "fixtures" / "var_tracking.json"
    data = {
        "notice": notice("kv_vartrack") + " (and kvmemory/kv_vardecomp.py)",
        "vartrack": vartrack(root),
        "vardecomp": vardecomp(root),
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])
