"""Record the paper's phantom swap (kv_phantom.py E1) for tests/test_parity_phantom_swap.py.

    python -m tests.parity.make_phantom_swap /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/phantom_swap.json: per recorded (object, flip), the two donors'
prefills (header, prefix and the event; text and positions) and the three readout calls (donor A's
and donor B's swap serve, the isolated event), as the paper's script renders them under the
character-level stand-in tokenizer (tests/parity/recorder.py). Under it only objects whose two values
have equal length are run (kv_phantom skips the others).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_phantom"


def main(paper_root: str) -> None:
    argv = ["--exp", "swap", "--reps", "1", "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Prefills: the header alone, then per row donor A's, donor B's and the isolated event; serves:
    # A, B, iso.
    n = len(run.serves) // 3
    rows = [
        {
            "prefill": {"A": run.encodes[1 + 3 * k], "B": run.encodes[2 + 3 * k], "iso": run.encodes[3 + 3 * k]},
            "serves": {
                "A": run.serves[3 * k].to_json(),
                "B": run.serves[3 * k + 1].to_json(),
                "iso": run.serves[3 * k + 2].to_json(),
            },
        }
        for k in range(n)
    ]
    assert len(run.encodes) == 1 + 3 * n
    out = Path(__file__).parent / "fixtures" / "phantom_swap.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "rows": rows}, indent=1) + "\n"
    )
    print(f"wrote {out} ({n} rows)")


if __name__ == "__main__":
    main(sys.argv[1])
