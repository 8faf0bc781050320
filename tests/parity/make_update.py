"""Record the paper's update stimuli (kv_coherence2.py, `--tpl orig`) for tests/test_parity_update.py.

    python -m tests.parity.make_update /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/update.json: per base (item) and donor member (v1), the member's
whole global prefill (text and positions), the rows its KV arms serve (one set: every KV arm
serves {decoy, carrier}; checked here) and, per arm and question, the query the paper feeds after
them (the appended `memory_patch()` step, the question, the readout suffix, the chat tail) and
its token budget; for the text arms, the whole prompt. Plus the script's own per-member record
(v1, v2, dm, changed). All as the paper's script renders them under the character-level
stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.parity.recorder import record_run

SCRIPT, BASES, SEED = "kv_coherence2", 2, 1300
NOTICE = (
    f"Rendered by kvmemory/{SCRIPT}.py of https://github.com/oklen/Compute-Globally-Materialize-Locally "
    "(commit d80ef7b) under tests/parity/recorder.py. MIT License, Copyright (c) the authors; "
    "see tests/parity/fixtures/PAPER-LICENSE"
)
# kv_coherence2's loop order per member: for each question, the KV arms, then the text arms.
KV_ARMS = ["stale", "upd_bare", "upd_ver", "patch_struct", "patch_der", "noopx", "ctl_wrong", "ctl_dummy"]
TXT_ARMS = ["txt_stale", "txt_oracle"]
QUERIES = ["cur", "hist", "unrel"]
STATUS2 = ["ONLINE", "OFFLINE"]


def main(paper_root: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out_json = Path(tmp) / "o2.json"
        run = record_run(
            Path(paper_root),
            SCRIPT,
            ["--bases", str(BASES), "--seed", str(SEED), "--tpl", "orig", "--out", str(out_json)],
        )
        records = json.loads(out_json.read_text())["rows"]
    per_member = len(QUERIES) * (len(KV_ARMS) + len(TXT_ARMS))
    assert len(run.serves) == BASES * len(STATUS2) * per_member and len(run.encodes) == 1 + BASES * len(STATUS2)
    bases = []
    for b in range(BASES):
        base = {"members": {}, "prefill": {}, "kv_rows": {}, "serves": {}}
        for j, v1 in enumerate(STATUS2):
            k = b * len(STATUS2) + j
            rec = records[k]
            assert rec["v1"] == v1
            base["members"][v1] = {key: rec[key] for key in ("v1", "v2", "dm", "changed")}
            base["prefill"][v1] = [[t, p] for t, p in run.encodes[1 + k]]  # encodes[0]: the header alone
            serves = iter(run.serves[k * per_member : (k + 1) * per_member])
            for q in QUERIES:
                for arm in KV_ARMS + TXT_ARMS:
                    s = next(serves).to_json()
                    if arm in KV_ARMS:
                        assert s["call"] == "greedy_pos"
                        rows = base["kv_rows"].setdefault(v1, s["rows"])
                        assert s["rows"] == rows  # every KV arm serves the same rows: stored once
                        del s["rows"]
                    else:
                        assert s["call"] == "greedy" and s["rows"] == []  # a plain text prompt
                        del s["rows"]
                    base["serves"][f"{arm}__{q}/{v1}"] = s
        bases.append(base)
    out = Path(__file__).parent / "fixtures" / "update.json"
    body = {"notice": NOTICE, "script": SCRIPT, "seed": SEED, "tpl": "orig", "header": run.encodes[0], "bases": bases}
    out.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {out} ({BASES} bases x {len(STATUS2)} members x {per_member} serves)")


if __name__ == "__main__":
    main(sys.argv[1])
