"""Record the paper's phantom erase (kv_phantom.py E2) for tests/test_parity_phantom_erase.py.

    python -m tests.parity.make_phantom_erase /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/phantom_erase.json: per recorded item (its OLD, NEW and whether it has
the conflicting update), the global prefill (header and steps; text and positions), the erased
serve (every row but step 1's, with its query) and the oracle's text prompt, as the paper's script
renders them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_phantom"
OLD = re.compile(r"set_config\('timeout', (\d+)\)")


def main(paper_root: str) -> None:
    argv = ["--exp", "erase", "--n2", "24", "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Prefills: the header alone, then one per item; serves: per item the erased rows, the oracle.
    n = len(run.serves) // 2
    assert len(run.encodes) == 1 + n and all(s.call == "greedy" for s in run.serves[1::2])
    items = []
    for k in range(n):
        prefill = run.encodes[1 + k]
        values = [int(v) for v in OLD.findall("".join(t for t, _ in prefill))]
        items.append(
            {
                "old": values[0],
                "new": values[1] if len(values) > 1 else None,
                "conflict": len(values) > 1,
                "prefill": prefill,
                "erased": run.serves[2 * k].to_json(),
                "oracle": run.serves[2 * k + 1].to_json(),
            }
        )
    out = Path(__file__).parent / "fixtures" / "phantom_erase.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "items": items}, indent=1) + "\n"
    )
    print(f"wrote {out} ({n} items)")


if __name__ == "__main__":
    main(sys.argv[1])
