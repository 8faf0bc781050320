"""Record the paper's free-answer harvest stimuli for tests/test_parity_harvest_freeform.py.

    python -m tests.parity.make_harvest_freeform /path/to/Compute-Globally-Materialize-Locally

Runs kv_harvest3.py (free answers, 24 greedy tokens, graded by cross_judge.judge) with `--ds realtalk`
and `--ds locomo`, each at `--win 0`, `--win 1` and `--win 2` (the dose test), over the SYNTHETIC dialogs
of tests/parity/make_harvest.py (a LoCoMo-shaped conversation and a REALTALK-shaped chat: no LoCoMo or
REALTALK text is in it), under the character-level stand-in model (tests/parity/recorder.py), which
answers every readout with ANSWER (the text `HFBackend._greedy` returns: already stripped).

Writes tests/parity/fixtures/harvest_freeform.json: the synthetic sources; per window and conversation
the paper's full prefill (header included, every row at its position); per QA and window the five arms'
serves (none, text, goldev as text prompts; harv and iso as served rows and positions, with the query
and the 24-token budget), the iso arm's encodes (each run of consecutive units, nothing before it, at
its original positions) and the five judge prompts (cross_judge.judge, one per arm in the paper's order
none, text, iso, harv, goldev; 6 tokens).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.parity import make_harvest, recorder
from tests.parity.make_harvest import LOCOMO, REALTALK, write_sources

NOTICE = (
    "Rendered by kvmemory/kv_harvest3.py and kvmemory/cross_judge.py of "
    "https://github.com/oklen/Compute-Globally-Materialize-Locally (commit d80ef7b) under "
    "tests/parity/recorder.py, over synthetic dialogs written for this fixture (no LoCoMo or REALTALK text). "
    "MIT License, Copyright (c) the authors; see tests/parity/fixtures/PAPER-LICENSE"
)
ANSWER = "a beagle, in July"  # the stand-in's answer to every readout (the judge's candidate)
WINDOWS = (0, 1, 2)
# kv_harvest3 reads one dataset per run: matbench's name for its one synthetic conversation.
CONVERSATIONS = {"realtalk": "realtalk/Chat_1_Cid_Dee", "locomo": "locomo/conv-s1"}
JUDGED = ("none", "text", "iso", "harv", "goldev")  # kv_harvest3's judge loop order


def _record(paper_root: Path, argv: list[str]) -> list[tuple[str, object]]:
    """kv_harvest3's serves and encodes, interleaved in call order."""
    return make_harvest._record(paper_root, "kv_harvest3", argv, answer=ANSWER)


def _question(serve: dict) -> str:
    return serve["query"].split("\n\nQuestion: ", 1)[1].split("\n", 1)[0]


def harvest3(events: list[tuple[str, object]]) -> tuple[dict[str, list], list[dict]]:
    """One run: the header encode; per conversation its full prefill; per QA none, text, goldev
    (text prompts), harv, the iso run encodes, iso, then the five judge prompts."""
    assert events[0] == ("encode", [[recorder.CHAT_HEAD, [0, len(recorder.CHAT_HEAD) - 1]]])
    prefills: dict[str, list] = {}
    items: list[dict] = []
    k, conversation = 1, None
    while k < len(events):
        kind, value = events[k]
        if kind == "encode":  # a conversation's full prefill: the header and every turn, from 0
            assert value[0][0].startswith(recorder.CHAT_HEAD) and value[0][1][0] == 0
            conversation = f"#{len(prefills)}"
            prefills[conversation] = value
            k += 1
            continue
        none, text, goldev, harv = (v for _, v in events[k : k + 4])
        k += 4
        encodes = []
        while events[k][0] == "encode":
            encodes.append(events[k][1])
            k += 1
        iso = events[k][1]
        judges = [v for _, v in events[k + 1 : k + 6]]
        assert all(kind == "serve" for kind, _ in events[k : k + 6])
        k += 6
        items.append(
            {
                "conversation": conversation,
                "question": _question(harv),
                "iso_encodes": encodes,
                "serves": {"none": none, "text": text, "goldev": goldev, "harv": harv, "iso": iso},
                "judge": dict(zip(JUDGED, judges)),
            }
        )
    return prefills, items


def main(paper_root: str) -> None:
    root = Path(paper_root)
    prefills: dict[str, dict[str, list]] = {}
    items: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        locomo, realtalk = write_sources(Path(tmp))
        for window in WINDOWS:
            prefills[str(window)] = {}
            for ds in ("realtalk", "locomo"):
                argv = [
                    "--ds",
                    ds,
                    "--rt_path",
                    str(realtalk),
                    "--lc_path",
                    str(locomo),
                    "--shard",
                    "0",
                    "--nshards",
                    "1",
                    "--win",
                    str(window),
                    "--out",
                    "/dev/null",
                ]
                got, qas = harvest3(_record(root, argv))
                assert list(got) == ["#0"]  # one synthetic conversation per dataset
                prefills[str(window)][CONVERSATIONS[ds]] = got["#0"]
                items += [{**qa, "conversation": CONVERSATIONS[ds], "window": window} for qa in qas]
    fixture = {
        "notice": NOTICE,
        "scripts": ["kv_harvest3", "cross_judge"],
        "args": "--ds realtalk|locomo --nshards 1 --win 0|1|2",
        "answer": ANSWER,
        "windows": list(WINDOWS),
        "sources": {"locomo10.json": LOCOMO, "realtalk": REALTALK},
        "prefills": prefills,
        "items": items,
    }
    out = Path(__file__).parent / "fixtures" / "harvest_freeform.json"
    out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({len(items)} items over windows {list(WINDOWS)}, {out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
