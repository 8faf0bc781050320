"""Record the paper's orthogonal-bits readout (kv_orthobit2.py) for tests/test_parity_orthogonal_bits.py.

    python -m tests.parity.make_orthogonal_bits /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/orthogonal_bits.json: per recorded item, the global prefill and, per
question (q4, bit_a, bit_b), the harvest serve (header, decoy and carrier rows; query) and the
sel_txt text prompt, as the paper's script renders them under the character-level stand-in
tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_orthobit2"
ITEMS, SEED = 4, 3600


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Encodes: the header alone, then one global prefill per item; serves per item and question:
    # the harvest serve, then the sel_txt prompt.
    assert len(run.encodes) == 1 + ITEMS and len(run.serves) == 6 * ITEMS
    items = []
    for k in range(ITEMS):
        serves = [s.to_json() for s in run.serves[6 * k : 6 * (k + 1)]]
        items.append(
            {
                "prefill": run.encodes[1 + k],
                **{
                    q: {"harv": serves[2 * j], "sel_txt": serves[2 * j + 1]}
                    for j, q in enumerate(("q4", "bit_a", "bit_b"))
                },
            }
        )
    out = Path(__file__).parent / "fixtures" / "orthogonal_bits.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "seed": SEED, "items": items}, indent=1)
        + "\n"
    )
    print(f"wrote {out} ({ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
