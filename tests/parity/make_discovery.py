"""Record the paper's discovery stimuli (kv_causal.py Part A) for tests/test_parity_discovery.py.

    python -m tests.parity.make_discovery /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/discovery.json: for each item, both donor members' whole global
prefill (text and positions) and the root and full arms' served rows and query, as the paper's
script renders them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import record_run

SCRIPT, ITEMS, SEED = "kv_causal", 3, 3900
NOTICE = (
    f"Rendered by kvmemory/{SCRIPT}.py of https://github.com/oklen/Compute-Globally-Materialize-Locally "
    "(commit d80ef7b) under tests/parity/recorder.py. MIT License, Copyright (c) 2026 Zefeng Cai, Zerui Cai; "
    "see tests/parity/fixtures/PAPER-LICENSE"
)


def main(paper_root: str) -> None:
    run = record_run(Path(paper_root), SCRIPT, ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"])
    # Per item: serves root/full for ONLINE then OFFLINE, then the Part B leaves (LA, LB);
    # prefills: the header alone first, then per item A-ONLINE, A-OFFLINE, B-LA, B-LB.
    items = []
    for k in range(ITEMS):
        serves = run.serves[6 * k : 6 * k + 4]
        encodes = run.encodes[1 + 4 * k : 1 + 4 * k + 2]
        items.append(
            {
                "prefill": {"ONLINE": encodes[0], "OFFLINE": encodes[1]},
                "serves": {
                    f"{arm}/{v}": serves[2 * j + a].to_json()
                    for j, v in enumerate(("ONLINE", "OFFLINE"))
                    for a, arm in enumerate(("root", "full"))
                },
            }
        )
    out = Path(__file__).parent / "fixtures" / "discovery.json"
    out.write_text(json.dumps({"notice": NOTICE, "script": SCRIPT, "seed": SEED, "items": items}, indent=1) + "\n")
    print(f"wrote {out} ({ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
