"""Record the paper's reference gradient (kv_refcarrier.py) for tests/test_parity_reference_gradient.py.

    python -m tests.parity.make_reference_gradient /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/reference_gradient.json: per item and carrier (neutral, outcome,
state, copy), the whole global prefill (text and positions) and its two readout calls (sel, the
text prompt; harv, the served rows and query), as the paper's script renders them under the
character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT, ITEMS, SEED = "kv_refcarrier", 3, 1600
CARRIERS = ("neutral", "outcome", "state", "copy")
NOTICE = notice(SCRIPT)


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Per item and carrier: one prefill (after the header alone), then serves sel (text) and harv.
    items = []
    for k in range(ITEMS):
        item = {}
        for j, kind in enumerate(CARRIERS):
            c = 4 * k + j
            item[kind] = {
                "prefill": run.encodes[1 + c],
                "sel": run.serves[2 * c].to_json(),
                "harv": run.serves[2 * c + 1].to_json(),
            }
        items.append(item)
    assert len(run.serves) == 8 * ITEMS and len(run.encodes) == 1 + 4 * ITEMS
    out = Path(__file__).parent / "fixtures" / "reference_gradient.json"
    out.write_text(json.dumps({"notice": NOTICE, "script": SCRIPT, "argv": argv, "items": items}, indent=1) + "\n")
    print(f"wrote {out} ({ITEMS} items x {len(CARRIERS)} carriers)")


if __name__ == "__main__":
    main(sys.argv[1])
