"""Record the paper's sliding-window oracle (kv_swgate.py) for tests/test_parity_sliding_window.py.

    python -m tests.parity.make_sliding_window /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/sliding_window.json: per recorded item (kv_swgate at a 240-token gap)
and donor value, the global prefill (the far row padded with newlines to its budget) and the
native and compact serves (rows, query, query position), as the paper's script renders them under
the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_swgate"
ITEMS, GAP, SEED = 3, 240, 1


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--gap", str(GAP), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv, answer="ONLINE")
    # Per item and donor value (ONLINE, then OFFLINE): one prefill, a native serve, a compact serve.
    assert len(run.encodes) == 2 * ITEMS and len(run.serves) == 4 * ITEMS
    items = [
        {
            v: {
                "prefill": run.encodes[2 * k + j],
                "native": run.serves[4 * k + 2 * j].to_json(),
                "compact": run.serves[4 * k + 2 * j + 1].to_json(),
            }
            for j, v in enumerate(("ONLINE", "OFFLINE"))
        }
        for k in range(ITEMS)
    ]
    out = Path(__file__).parent / "fixtures" / "sliding_window.json"
    out.write_text(
        json.dumps(
            {"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "gap": GAP, "seed": SEED, "items": items},
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {out} ({ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
