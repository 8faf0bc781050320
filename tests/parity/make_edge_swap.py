"""Record the paper's edge_swap stimuli (kv_causal.py Part B) for tests/test_parity_edge_swap.py.

    python -m tests.parity.make_edge_swap /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/edge_swap.json: for each item, the paper's va and vb, and for each
leaf (LA references chain a, LB chain b) the whole global prefill (text and positions) and the
served rows and query of its one arm, as the paper's script renders them under the
character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.make_discovery import NOTICE, SCRIPT
from tests.parity.recorder import record_run

ITEMS, SEED = 10, 3900


def main(paper_root: str) -> None:
    run = record_run(Path(paper_root), SCRIPT, ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"])
    # Per item: Part A serves root/full twice, then Part B serves LA and LB; prefills: the header
    # alone first, then per item A-ONLINE, A-OFFLINE, B-LA, B-LB.
    items = []
    for k in range(ITEMS):
        serves = run.serves[6 * k + 4 : 6 * k + 6]
        encodes = run.encodes[1 + 4 * k + 2 : 1 + 4 * k + 4]
        items.append(
            {
                "prefill": {"LA": encodes[0], "LB": encodes[1]},
                "serves": {"LA": serves[0].to_json(), "LB": serves[1].to_json()},
            }
        )
    out = Path(__file__).parent / "fixtures" / "edge_swap.json"
    out.write_text(
        json.dumps({"notice": NOTICE, "script": SCRIPT, "part": "B", "seed": SEED, "items": items}, indent=1) + "\n"
    )
    print(f"wrote {out} ({ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
