"""Record the paper's trigger stimuli for tests/test_parity_trigger.py.

    python -m tests.parity.make_trigger /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/trigger.json from two scripts, run under the character-level
stand-in model (tests/parity/recorder.py):

- kv_parabank2.py (the length-controlled bank, the design matbench follows): per item and
  construction, the kv arm's served rows ({decoy, carrier}, the carrier padded with newline
  tokens to its family's longest) and the txt arm's (every event), each with its query (the trace
  readout: menu + "Locate the relevant statement ...", 160 tokens);
- kv_bankprobe.py --bank full16 (context: the three readouts the paper compared on the bank): the
  queries and token budgets of its kv trace, kv direct and kv/txt probe calls for the first
  construction of each family (no rows: its fillers are redrawn per construction).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import record

BANK, BANK_ITEMS, BANK_SEED = "kv_parabank2", 2, 8000
PROBE, PROBE_SEED = "kv_bankprobe", 8800
FAMILIES = {
    "mirror": ("mirrors", "tracks", "copies", "matches", "follows", "shadows", "kept_eq", "synced"),
    "flag": ("accord", "inline", "reflect", "record", "assign", "write", "consist", "update"),
}
NOTICE = (
    f"Rendered by kvmemory/{BANK}.py and kvmemory/{PROBE}.py of "
    "https://github.com/oklen/Compute-Globally-Materialize-Locally (commit d80ef7b) under "
    "tests/parity/recorder.py. MIT License, Copyright (c) the authors; see tests/parity/fixtures/PAPER-LICENSE"
)


def bank(paper_root: Path) -> list[dict]:
    serves = record(paper_root, BANK, ["--items", str(BANK_ITEMS), "--seed", str(BANK_SEED), "--out", "/dev/null"])
    # Per item: the 8 mirror constructions then the 8 flag ones, each serving kv then txt.
    assert len(serves) == 32 * BANK_ITEMS
    items = []
    for k in range(BANK_ITEMS):
        item, at = {}, 32 * k
        for family, keys in FAMILIES.items():
            item[family] = {}
            for key in keys:
                item[family][key] = {"kv": serves[at].to_json(), "txt": serves[at + 1].to_json()}
                at += 2
        items.append(item)
    return items


def bankprobe(paper_root: Path) -> dict:
    serves = record(
        paper_root, PROBE, ["--bank", "full16", "--items", "1", "--seed", str(PROBE_SEED), "--out", "/dev/null"]
    )
    # Per construction: kv trace (160), kv direct (10), kv probe, txt probe.
    assert len(serves) == 4 * 16
    out = {}
    for family, first in (("mirror", 0), ("flag", 8)):
        calls = serves[4 * first : 4 * first + 4]
        out[f"{family}/{FAMILIES[family][0]}"] = {
            name: {
                "query": s.query,
                "max_tokens": s.max_tokens,
                **({"candidates": s.candidates} if s.candidates else {}),
            }
            for name, s in zip(("kv_trace", "kv_direct", "kv_probe", "txt_probe"), calls)
        }
    return out


def main(paper_root: str) -> None:
    root = Path(paper_root)
    fixture = {
        "notice": NOTICE,
        "script": BANK,
        "seed": BANK_SEED,
        "items": bank(root),
        "bankprobe": {"script": PROBE, "seed": PROBE_SEED, "queries": bankprobe(root)},
    }
    out = Path(__file__).parent / "fixtures" / "trigger.json"
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {out} ({BANK_ITEMS} items x 16 constructions; {out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
