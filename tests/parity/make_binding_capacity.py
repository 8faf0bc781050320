"""Record the paper's binding-capacity test (kv_bicap.py) for tests/test_parity_binding_capacity.py.

    python -m tests.parity.make_binding_capacity /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/binding_capacity.json: per recorded item and carrier layout (one,
two_in_one, two_sep), the global prefill and per question the sel text prompt and the harv serve
(rows and query), as the paper's script renders them under the character-level stand-in
tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT = "kv_bicap"
ITEMS, SEED = 3, 2400
LAYOUTS = (("one", 1), ("two_in_one", 2), ("two_sep", 2))  # (layout, questions asked)


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv, answer="ONLINE")  # its progress line slices the parse
    # Encodes: the header alone, then one global prefill per item and layout; serves per question:
    # the sel text prompt, then the harv serve.
    items, e, s = [], 1, 0
    for _ in range(ITEMS):
        item = {}
        for layout, n_q in LAYOUTS:
            serves = [x.to_json() for x in run.serves[s : s + 2 * n_q]]
            item[layout] = {
                "prefill": run.encodes[e],
                **{f"q{j + 1}": {"sel": serves[2 * j], "harv": serves[2 * j + 1]} for j in range(n_q)},
            }
            e, s = e + 1, s + 2 * n_q
        items.append(item)
    assert e == len(run.encodes) and s == len(run.serves)
    out = Path(__file__).parent / "fixtures" / "binding_capacity.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "seed": SEED, "items": items}, indent=1)
        + "\n"
    )
    print(f"wrote {out} ({ITEMS} items)")


if __name__ == "__main__":
    main(sys.argv[1])
