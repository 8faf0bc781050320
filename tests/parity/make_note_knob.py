"""Record the paper's note knob (kv_noteknob2.py) for tests/test_parity_note_knob.py.

    python -m tests.parity.make_note_knob /path/to/Compute-Globally-Materialize-Locally

Writes tests/parity/fixtures/note_knob.json: per recorded item (three per setting: bin2, num,
verdict) and variant (note, then filler at slot m+1), the whole global prefill (text and
positions) and its four readout calls in the script's order: full_txt (every event as a text
prompt), harv_complete (decoy, source, knob and downstream rows), sel_txt (drop_mid's events as a
text prompt: the paper's sel_drop) and harv_drop (decoy, knob and downstream rows), as the paper's
script renders them under the character-level stand-in tokenizer (tests/parity/recorder.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.parity.recorder import notice, record_run

SCRIPT, ITEMS, SEED = "kv_noteknob2", 3, 700  # the paper's seed
SETTINGS = ("bin2", "num", "verdict")
VARIANTS = ("note", "filler")  # kv_noteknob2's "note" and "fill", in its order
ARMS = ("full_txt", "harv_complete", "sel_txt", "harv_drop")  # its calls per variant, in order


def main(paper_root: str) -> None:
    argv = ["--items", str(ITEMS), "--seed", str(SEED), "--out", "/dev/null"]
    run = record_run(Path(paper_root), SCRIPT, argv)
    # Prefills: the header alone, then one whole trajectory per item and variant.
    items = []
    for k, setting in enumerate(s for s in SETTINGS for _ in range(ITEMS)):
        variants = {}
        for v, name in enumerate(VARIANTS):
            at = 2 * k + v
            serves = run.serves[4 * at : 4 * at + 4]
            assert [s.call for s in serves] == ["greedy", "greedy_pos", "greedy", "greedy_pos"]
            variants[name] = {
                "prefill": run.encodes[1 + at],
                "serves": {arm: s.to_json() for arm, s in zip(ARMS, serves)},
            }
        items.append({"setting": setting, "variants": variants})
    assert len(run.serves) == 8 * len(items) and len(run.encodes) == 1 + 2 * len(items)
    out = Path(__file__).parent / "fixtures" / "note_knob.json"
    out.write_text(
        json.dumps({"notice": notice(SCRIPT), "script": SCRIPT, "argv": argv, "items": items}, indent=1) + "\n"
    )
    print(f"wrote {out} ({len(items)} items)")


if __name__ == "__main__":
    main(sys.argv[1])
