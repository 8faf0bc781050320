"""Record the paper's harvest stimuli for tests/test_parity_harvest.py.

    python -m tests.parity.make_harvest /path/to/Compute-Globally-Materialize-Locally

Runs kv_harvest4.py (the recognition readout, compact, 8 greedy tokens) and kv_harvnative.py
(compact and native serving, first-token " A"/" B" logits) with `--ds all` over two SYNTHETIC
dialogs written for this fixture (a LoCoMo-shaped conversation and a REALTALK-shaped chat: no
LoCoMo or REALTALK text is in it), under the character-level stand-in model
(tests/parity/recorder.py). The dialogs exercise the selection rules: image captions, a
caption-only turn, inner newlines and surrounding spaces, categories 4 and 5, a malformed
evidence id, repeated evidence ids, dates and speaker names as shared words, the +-1 window,
the dia_id string tie-break of the top 4, hard negatives in and out of category, and the
injected control's screens.

Writes tests/parity/fixtures/harvest.json: the synthetic sources, and per conversation the
paper's full prefill; per natural item the five kv_harvest4 serves (none, text, goldev as text
prompts; harv, iso as served rows) with the iso arm's per-turn encodes, and the six
kv_harvnative serves (compact harv/iso with 8 and 64 tokens, native harv/iso) with its iso
encodes; per injected item both prefills (original, counterfactual), the three serves (harv on
each, iso) and the iso encode.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.parity import recorder

NOTICE = (
    "Rendered by kvmemory/kv_harvest4.py and kvmemory/kv_harvnative.py of "
    "https://github.com/oklen/Compute-Globally-Materialize-Locally (commit d80ef7b) under "
    "tests/parity/recorder.py, over synthetic dialogs written for this fixture (no LoCoMo or REALTALK text). "
    "MIT License, Copyright (c) the authors; see tests/parity/fixtures/PAPER-LICENSE"
)
INJECTED_MARK = "moderator: for the record, the answer to "
# `--ds all` reads REALTALK's chats, then LoCoMo's conversations: matbench's names for them.
ORDER = ("realtalk/Chat_1_Cid_Dee", "locomo/conv-s1")


def _t(speaker: str, dia: str, text: str, caption: str | None = None) -> dict:
    return {"speaker": speaker, "dia_id": dia, "text": text, **({"blip_caption": caption} if caption else {})}


def _m(speaker: str, dia: str, text: str, when: str, caption: str | None = None) -> dict:
    return {
        "clean_text": text,
        "speaker": speaker,
        "date_time": when,
        "img_file": [],
        "img_url": [],
        "dia_id": dia,
        **({"blip_caption": caption} if caption else {}),
    }


SESSION_4 = [
    "How was the weekend?",
    "The puppy slept all day after the park.",
    "Sounds like a tired dog.",
    "My puppy loves the new chew toy.",
    "My pottery teacher wants a second class next week.",
    "A rope toy, the puppy adores it.",
    "Nice choice.",
    "The puppy met a neighbour's cat today.",
    "How did that go?",
    "The puppy barked, the cat left.",
    "Still going to Lisbon, packing soon.",
]
LOCOMO = [
    {
        "sample_id": "conv-s1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 3 May, 2023",
            "session_1": [
                _t("Ann", "D1:1", "I adopted a puppy last weekend!", "a photo of a small brown dog on a couch"),
                _t("Bob", "D1:2", "Congrats! What breed is the new puppy?"),
                _t("Ann", "D1:3", "He is a beagle, very energetic."),
                _t("Bob", "D1:4", "I started pottery classes at the community center."),
                _t("Ann", "D1:5", "Pottery sounds relaxing."),
            ],
            "session_2_date_time": "9:15 am on 20 May, 2023",
            "session_2": [
                _t("Bob", "D2:1", "My pottery teacher is called Marguerite."),
                _t("Ann", "D2:2", "I am planning a trip to Lisbon in July."),
                _t("Bob", "D2:3", "Lisbon is lovely in summer."),
                _t("Ann", "D2:4", "", "a beach with blue umbrellas"),
                _t("Bob", "D2:5", "  Did you book\nthe flights yet?  "),
            ],
            "session_3_date_time": "6:40 pm on 2 June, 2023",
            "session_3": [
                _t("Ann", "D3:1", "The puppy chewed my shoes again, what an energetic little dog."),
                _t("Bob", "D3:2", "Pottery class was fun, the teacher showed us glazing."),
                _t("Ann", "D3:3", "I finally booked the flights for July."),
                _t("Ann", "D3:4", "The Lisbon trip planning continues."),
                _t("Ann", "D3:5", "Is your teacher strict about the pottery wheel?"),
            ],
            "session_4_date_time": "8:05 pm on 15 June, 2023",
            "session_4": [
                _t("Ann" if k % 2 == 0 else "Bob", f"D4:{k}", text) for k, text in enumerate(SESSION_4, start=1)
            ],
        },
        "qa": [
            {
                "question": "What breed is the puppy Ann adopted?",
                "answer": "beagle",
                "evidence": ["D1:3"],
                "category": 1,
            },
            {"question": "When is Ann going to Lisbon?", "answer": "July", "evidence": ["D2:2"], "category": 2},
            {"question": "Who is Bob's pottery teacher?", "answer": "Marguerite", "evidence": ["D2:1"], "category": 3},
            {"question": "What does Ann's puppy chew?", "answer": "shoes", "evidence": ["D3:1"], "category": 4},
            {"question": "What is Bob's dog called?", "adversarial_answer": "Rex", "evidence": ["D1:2"], "category": 5},
            {
                "question": "What class did Bob start?",
                "answer": "pottery classes",
                "evidence": ["D1:4; D2:1"],
                "category": 1,
            },
            {
                "question": "Which pottery class step did Bob's teacher show?",
                "answer": "glazing",
                "evidence": ["D3:2"],
                "category": 3,
            },
            {
                "question": "What did the puppy get as a toy?",
                "answer": "a rope toy",
                "evidence": ["D4:6"],
                "category": 1,
            },
            {
                "question": "What kind of dog did Ann adopt in 2023?",
                "answer": "a beagle",
                "evidence": ["D1:3", "D1:1", "D1:3"],
                "category": 1,
            },
        ],
    }
]
REALTALK = {
    "Chat_1_Cid_Dee.json": {
        "name": {"speaker_1": "Cid", "speaker_2": "Dee"},
        "session_1_date_time": "03.01.2024, 10:00:00",
        "session_1": [
            _m(
                "Cid",
                "D1:1",
                "I joined a climbing gym downtown.",
                "03.01.2024, 10:00:00",
                "a climbing wall with colored holds",
            ),
            _m("Dee", "D1:3", "Which gym? The one near the river?", "03.01.2024, 10:02:10"),
            _m("Cid", "D1:4", "Yes, Boulder Barn, next to the river.", "03.01.2024, 10:03:40"),
        ],
        "events_session_1": {"agent_a": [], "agent_b": []},
        "session_2_date_time": "05.01.2024, 18:30:00",
        "session_2": [
            _m("Dee", "D2:1", "I baked a cheesecake for my sister.", "05.01.2024, 18:30:00"),
            _m("Cid", "D2:2", "   ", "05.01.2024, 18:31:00"),
            _m("Cid", "D2:5", "Nice! I went climbing again at the gym,\nmy arms hurt.", "05.01.2024, 18:35:00"),
        ],
        "session_3_date_time": "08.01.2024, 21:10:00",
        "session_3": [
            _m("Dee", "D3:1", "My sister loved the cake, she asked for the recipe.", "08.01.2024, 21:10:00"),
            _m("Cid", "D3:2", "The climbing gym has a new bouldering wall.", "08.01.2024, 21:12:00"),
            _m("Dee", "D3:4", "Cheesecake is my sister's favourite.", "08.01.2024, 21:15:00"),
        ],
        "qa": [
            {
                "question": "What is the name of the climbing gym Cid joined?",
                "answer": "Boulder Barn",
                "evidence": ["D1:4"],
                "category": 1,
            },
            {
                "question": "What did Dee bake for her sister?",
                "answer": "cheesecake",
                "evidence": ["D2:1"],
                "category": 1,
            },
        ],
    }
}


def write_sources(folder: Path) -> tuple[Path, Path]:
    locomo = folder / "locomo10.json"
    locomo.write_text(json.dumps(LOCOMO))
    realtalk = folder / "realtalk"
    realtalk.mkdir()
    for name, chat in REALTALK.items():
        (realtalk / name).write_text(json.dumps(chat))
    return locomo, realtalk


def _record(paper_root: Path, script: str, argv: list[str], **kw) -> list[tuple[str, object]]:
    """The script's serves and encodes, interleaved in call order (`kw`: record_run's, e.g. the
    stand-in's answer)."""
    original = recorder.fake_encode_block
    events: list[tuple[str, object]] = []

    def encode(llm, ids, positions, keep_a=None, keep_b=None):
        out = original(llm, ids, positions, keep_a, keep_b)
        events.append(("serve_mark", len(llm.serves)))
        return out

    recorder.fake_encode_block = encode
    try:
        run = recorder.record_run(paper_root, script, argv, **kw)
    finally:
        recorder.fake_encode_block = original
    merged: list[tuple[str, object]] = []
    done = 0
    for (_, before), runs in zip(events, run.encodes):
        merged += [("serve", run.serves[k].to_json()) for k in range(done, before)]
        merged.append(("encode", [[t, p] for t, p in runs]))
        done = before
    return merged + [("serve", run.serves[k].to_json()) for k in range(done, len(run.serves))]


def _question(serve: dict) -> str:
    return serve["query"].split("\n\nQuestion: ", 1)[1].split("\nOption A: ", 1)[0]


def harvest4(events: list[tuple[str, object]]) -> tuple[dict, list[dict], list[dict]]:
    """kv_harvest4 per conversation: the full prefill; per natural QA none/text/goldev (text
    prompts), harv, the iso encodes, iso; per injected QA prefill(orig), harv, iso encode, iso,
    prefill(cf), harv."""
    prefills, natural, injected = {}, [], []
    assert events[0][0] == "encode"  # the header alone
    k, conversation = 1, None
    while k < len(events):
        kind, value = events[k]
        if kind == "encode" and INJECTED_MARK in value[-1][0]:  # an injected item's original prefill
            (_, orig), (_, harv), (_, iso_encode), (_, iso), (_, cf), (_, harv_cf) = events[k : k + 6]
            injected.append(
                {
                    "conversation": conversation,
                    "question": _question(harv),
                    "prefill_orig": orig,
                    "prefill_cf": cf,
                    "iso_encode": iso_encode,
                    "serves": {"harv_orig": harv, "iso": iso, "harv_cf": harv_cf},
                }
            )
            k += 6
        elif kind == "encode":  # a conversation's full prefill
            conversation = ORDER[len(prefills)]
            prefills[conversation] = value
            k += 1
        else:
            none, text, goldev, harv = (v for _, v in events[k : k + 4])
            k += 4
            encodes = []
            while events[k][0] == "encode":
                encodes.append(events[k][1])
                k += 1
            natural.append(
                {
                    "conversation": conversation,
                    "question": _question(harv),
                    "iso_encodes": encodes,
                    "serves": {"none": none, "text": text, "goldev": goldev, "harv": harv, "iso": events[k][1]},
                }
            )
            k += 1
    return prefills, natural, injected


def harvnative(events: list[tuple[str, object]]) -> list[dict]:
    """kv_harvnative per conversation: the full prefill (header included); per QA the iso encodes,
    then compact harv (8, 64), compact iso (8, 64), native harv, native iso."""
    items, k = [], 0
    names = ("compact_harv8", "compact_harv64", "compact_iso8", "compact_iso64", "native_harv", "native_iso")
    while k < len(events):
        if events[k][0] == "encode" and events[k][1][0][0].startswith(recorder.CHAT_HEAD):
            k += 1
            continue
        encodes = []
        while events[k][0] == "encode":
            encodes.append(events[k][1])
            k += 1
        serves = dict(zip(names, (v for _, v in events[k : k + 6])))
        items.append({"question": _question(serves["native_harv"]), "iso_encodes": encodes, "serves": serves})
        k += 6
    return items


def main(paper_root: str) -> None:
    root = Path(paper_root)
    with tempfile.TemporaryDirectory() as tmp:
        locomo, realtalk = write_sources(Path(tmp))
        common = ["--ds", "all", "--rt_path", str(realtalk), "--lc_path", str(locomo), "--out", "/dev/null"]
        prefills, natural, injected = harvest4(_record(root, "kv_harvest4", common + ["--nshards", "1"]))
        native = harvnative(_record(root, "kv_harvnative", common))
    assert [n["question"] for n in native] == [n["question"] for n in natural]
    for item, other in zip(natural, native):
        item["harvnative"] = {"iso_encodes": other["iso_encodes"], "serves": other["serves"]}
    fixture = {
        "notice": NOTICE,
        "scripts": ["kv_harvest4", "kv_harvnative"],
        "args": "--ds all (realtalk, then locomo)",
        "sources": {"locomo10.json": LOCOMO, "realtalk": REALTALK},
        "prefills": prefills,
        "natural": natural,
        "injected": injected,
    }
    out = Path(__file__).parent / "fixtures" / "harvest.json"
    out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({len(natural)} natural, {len(injected)} injected items)")


if __name__ == "__main__":
    main(sys.argv[1])
