"""Record the paper's recompute-necessity matrix (kv_recomp.py) for tests/test_parity_recompute_matrix.py.

    python -m tests.parity.make_recompute_matrix /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/recompute_matrix.json: the header prefill alone; per recorded item
(ITEMS per row, in the script's order: A_mat, B_oper, C_high) the script's own record (row, gold,
its meta: v1/v2, thr/gv2, n1/n2, stale_gold), the whole global prefill (text and positions), the
rows every arm serves (one set: the header, decoy and carrier rows; checked here and stored once)
and per arm (stale, d_src, d_mtn, d_der, oracle) the query fed after them (the appended delta, the
question with its answer instruction, the chat tail) and its token budget; all as the paper's
script renders them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT, ITEMS, SEED = "kv_recomp", 3, 3700  # the paper's seed
ROWS = ("A_mat", "B_oper", "C_high")
ARMS = ("stale", "d_src", "d_mtn", "d_der", "oracle")  # its calls per item, in order


def main(paper_root: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out_json = Path(tmp) / "rx.json"
        argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", str(out_json)]
        run = record_run(Path(paper_root), SCRIPT, argv)
        records = json.loads(out_json.read_text())["rows"]
    n = len(ROWS) * ITEMS
    assert len(records) == n and len(run.encodes) == 1 + n and len(run.serves) == len(ARMS) * n
    items = []
    for k, rec in enumerate(records):
        assert rec["row"] == ROWS[k // ITEMS] and rec["it"] == k % ITEMS
        serves = [s.to_json() for s in run.serves[len(ARMS) * k : len(ARMS) * (k + 1)]]
        assert all(s["call"] == "greedy_pos" and s["rows"] == serves[0]["rows"] for s in serves)
        items.append(
            {
                "record": {key: v for key, v in rec.items() if key not in ARMS},
                "prefill": run.encodes[1 + k],
                "rows": serves[0]["rows"],
                "serves": {arm: {"query": s["query"], "max_tokens": s["max_tokens"]} for arm, s in zip(ARMS, serves)},
            }
        )
    out = Path(__file__).parent / "fixtures" / "recompute_matrix.json"
    body = {"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv[:4], "header": run.encodes[0], "items": items}
    out.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {out} ({len(items)} items, {out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
