"""Record the paper's decoy audit (kv_decoyctl2.py) for tests/test_parity_decoy_audit.py.

    python -m tests.parity.make_decoy_audit /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/decoy_audit.json: per item (two per mode: opposite, independent,
none), the whole global prefill (text and positions) and its four readout calls (full_txt and
sel_txt text prompts, harv_kv and sel_ikv served rows and query), as the paper's script renders
them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT, ITEMS, SEED = "kv_decoyctl2", 2, 1200
MODES = ("opposite", "independent", "none")
NOTICE = notice(SCRIPT)


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Per item: serves full_txt, sel_txt (text prompts), harv_kv, sel_ikv; prefills (after the
    # header alone): the whole trajectory, then header + each served event (sel_ikv).
    items = []
    for k, mode in enumerate(m for m in MODES for _ in range(ITEMS)):
        serves = run.serves[4 * k : 4 * k + 4]
        items.append(
            {
                "mode": mode,
                "prefill": run.encodes[1 + 3 * k],
                "serves": {arm: s.to_json() for arm, s in zip(("full_txt", "sel_txt", "harv_kv", "sel_ikv"), serves)},
            }
        )
    assert len(run.serves) == 4 * len(items) and len(run.encodes) == 1 + 3 * len(items)
    out = Path(__file__).parent / "fixtures" / "decoy_audit.json"
    out.write_text(json.dumps({"notice": NOTICE, "script": SCRIPT, "argv": argv, "items": items}, indent=1) + "\n")
    print(f"wrote {out} ({len(items)} items)")


if __name__ == "__main__":
    main(sys.argv[1])
