"""Record the paper's sink-vs-dependency 2 x 2 (kv_phantom.py E3) for
tests/test_parity_sink_dependency.py.

    python -m tests.parity.make_sink_dependency /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/sink_dependency.json: per recorded item, the independent prefills of
each event (after the header: `head`; alone: `nohead`), the four served readouts (head / nohead x
retr / hop: served rows and query) and the two full-prefill text prompts, as the paper's script
renders them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_phantom"
N_ITEMS = 4
EVENTS = 12


def main(paper_root: str) -> None:
    argv = ["--exp", "sink", "--n3", str(N_ITEMS), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Prefills: the header alone, then per item 12 head encodes, 12 nohead encodes; serves per item:
    # head retr, head hop, nohead retr, nohead hop, full retr, full hop.
    assert len(run.encodes) == 1 + 2 * EVENTS * N_ITEMS and len(run.serves) == 6 * N_ITEMS
    items = []
    for k in range(N_ITEMS):
        enc = run.encodes[1 + 2 * EVENTS * k : 1 + 2 * EVENTS * (k + 1)]
        serves = [s.to_json() for s in run.serves[6 * k : 6 * (k + 1)]]
        items.append(
            {
                "head": enc[:EVENTS],
                "nohead": enc[EVENTS:],
                "serves": dict(
                    zip(("head_retr", "head_hop", "nohead_retr", "nohead_hop", "full_retr", "full_hop"), serves)
                ),
            }
        )
    out = Path(__file__).parent / "fixtures" / "sink_dependency.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "seed": 2, "items": items}, indent=1)
        + "\n"
    )
    print(f"wrote {out} ({N_ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
