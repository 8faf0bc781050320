"""Record the paper's landing stimuli for tests/test_parity_landing.py.

    python -m tests.parity.make_landing /path/to/Compute-Globally-Materialize-Locally

Runs kvmemory/kv_causal3.py (the true reference edge), kv_causal2.py (the root x downstream
mention 2x2 with its j=none bridge), kv_hops.py (the depth-3 chain) and kv_poscontrol.py (X11:
mention vs referent swap vs absent) under tests/parity/recorder.py for fixed seeds and a few
items, and writes tests/parity/fixtures/landing.json: per item, every global prefill the script
encodes (text and positions: the served rows alone do not show the fillers or the dropped
source, and the test reads the draws back from these texts) and every serve under the script's
own key (its `rec[...]` name). Scripts with a --menu readout are run twice; the menu run draws and
serves the same rows (checked here), so only its queries are kept. Takes a few seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import record_run

ON_OF = ("ON", "OF")
# Per script: seed (the scripts' defaults, but kv_poscontrol's 8201, whose items 1 and 2 have no
# register of the mirror's name length, so U has another length: len_match = 0), items, whether it
# has --menu, the serve keys of one item in call order, and the prefill keys of one item.
SCRIPTS = {
    "kv_causal3": (
        9500,
        2,
        True,
        [k for i in ON_OF for k in (f"t_{i}_ON", f"t_{i}_OF", f"m_{i}")] + ["e_ON", "e_OF"],
        ["ONLINE", "OFFLINE"],
    ),
    "kv_causal2": (8200, 2, True, [f"a_{i}_{j}" for i in ON_OF for j in (*ON_OF, "NO")], ["ONLINE", "OFFLINE"]),
    "kv_hops": (2900, 3, False, ["A1_c1_M1", "A2_c2_M2", "A3_c3_T", "A4_c23_T", "A5_all_T", "floor_txt_T"], ["v1"]),
    "kv_poscontrol": (
        8201,
        3,
        True,
        [k for v in ON_OF for k in [f"a_{v}_abs"] + [f"a_{v}_{j}_{c}" for c in ("men", "fil") for j in ON_OF]],
        [f"{v}/{c}" for v in ("ONLINE", "OFFLINE") for c in ("men", "fil")],
    ),
}
NOTICE = (
    "Rendered by kvmemory/{scripts} of https://github.com/oklen/Compute-Globally-Materialize-Locally "
    "(commit d80ef7b) under tests/parity/recorder.py. MIT License, Copyright (c) the authors; "
    "see tests/parity/fixtures/PAPER-LICENSE"
)


def record_script(paper: Path, script: str) -> dict:
    seed, items, has_menu, serve_keys, prefill_keys = SCRIPTS[script]
    argv = ["--items", str(items), "--seed", str(seed), "--out", "/dev/null"]
    run = record_run(paper, script, argv)
    menu = record_run(paper, script, argv + ["--menu"]) if has_menu else None
    per_serve, per_prefill = len(serve_keys), len(prefill_keys)
    assert len(run.serves) == items * per_serve and len(run.encodes) == 1 + items * per_prefill, script
    out = []
    for k in range(items):
        serves = run.serves[k * per_serve : (k + 1) * per_serve]
        item = {
            "prefill": dict(zip(prefill_keys, run.encodes[1 + k * per_prefill : 1 + (k + 1) * per_prefill])),
            "serves": {key: s.to_json() for key, s in zip(serve_keys, serves)},
        }
        if menu is not None:
            menu_serves = menu.serves[k * per_serve : (k + 1) * per_serve]
            assert [s.rows for s in menu_serves] == [s.rows for s in serves], script  # same draws, same rows
            item["menu_queries"] = {key: s.query for key, s in zip(serve_keys, menu_serves)}
        out.append(item)
    return {"seed": seed, "argv": argv, "items": out}


def main(paper_root: str) -> None:
    paper = Path(paper_root)
    scripts = {script: record_script(paper, script) for script in SCRIPTS}
    fixture = {"notice": NOTICE.format(scripts=", ".join(f"{s}.py" for s in SCRIPTS)), **scripts}
    out = Path(__file__).parent / "fixtures" / "landing.json"
    out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
