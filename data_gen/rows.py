"""Suite rows: a `DonorPair` as one dataset row (typed with `datasets.Features`) and back.

A row holds both donor members (the shared events plus the two source bodies), every arm's
served set and question, the gold values, the readout menu, the leak patterns, the item's
register names, its generation coordinates (suite, version, seed, index) and a content hash.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair

ROW_FIELDS = (
    "item_id",
    "suite",
    "version",
    "seed",
    "index",
    "events",
    "source",
    "source_bodies",
    "values",
    "menu",
    "arms",
    "leak_patterns",
    "registers",
    "decoys",
    "donor_events",
    "variant",
    "slot_alternatives",
    "trace",
    "frame",
    "padded",
    "content_hash",
)

FIELD_DOCS = {
    "item_id": "unique id `<suite>-v<version>-s<seed>-<index>`",
    "suite": "suite (= config) name",
    "version": "generator version of the suite",
    "seed": "suite seed the row was generated from",
    "index": "item index within the seed",
    "events": "observation bodies of the trajectory's events; the source slot holds a placeholder",
    "source": "index of the dropped source event",
    "source_bodies": "source body of member A and member B (the only difference between them)",
    "values": "donor values of member A and member B (the gold answers)",
    "menu": "answer menu of the readouts (candidates of the probe)",
    "arms": "serving arms: name, served event indices (the header is always served), question, uses_source "
    "(serves donor-dependent text), query_at_end (compact serving asks at L), appended (events appended at "
    "query time, e.g. a patch), expected (the answer the arm should give when it is not the donor value), "
    "encoding (joint: rows of the global prefill; isolated: each served event encoded alone after the header at "
    "its original positions; text: header and served events re-prefilled as text), menu and values (this arm's "
    "own menu and donor values when it asks another question of the same rows; empty = the row's), "
    "open_question (the question carries its own answer instruction; no menu is appended), swapped (served "
    "events whose rows each member takes from the other member's prefill: the root x downstream factorial), "
    "trace (this arm's trace instruction when it differs from the row's; empty = the row's), budget (greedy "
    "tokens for this arm's answer under generating readouts where the paper set one; 0 = the readout's)",
    "leak_patterns": "regular expressions no served event may match",
    "registers": "the item's own register names (echoes of these are not answers)",
    "decoys": "events drawn independently of the donor (they may name a menu value)",
    "donor_events": "further donor-dependent events (index, body in A, body in B), served only by donor-visible arms",
    "variant": "sub-condition of the item within its suite (e.g. carrier kind and template)",
    "slot_alternatives": "event slots whose position budget covers every listed alternative body (fixed later positions)",
    "trace": "the trace readout's instruction, appended after the menu (the paper's wording for this suite)",
    "frame": "how the header and events are rendered (matbench.protocol.frames.FRAMES: trajectory, versioned, ...)",
    "padded": "event slots padded with newline tokens up to the longest listed body (served with the event)",
    "content_hash": "sha256 of the row's canonical JSON without this field",
}


def features():
    """The typed schema of every suite config (one row = one donor pair)."""
    from datasets import Features, Sequence, Value

    return Features(
        {
            "item_id": Value("string"),
            "suite": Value("string"),
            "version": Value("string"),
            "seed": Value("int64"),
            "index": Value("int64"),
            "events": Sequence(Value("string")),
            "source": Value("int32"),
            "source_bodies": Sequence(Value("string"), length=2),
            "values": Sequence(Value("string"), length=2),
            "menu": Sequence(Value("string")),
            "arms": [
                {
                    "name": Value("string"),
                    "served": Sequence(Value("int32")),
                    "question": Value("string"),
                    "uses_source": Value("bool"),
                    "query_at_end": Value("bool"),
                    "appended": Sequence(Value("string")),
                    "expected": Value("string"),
                    "encoding": Value("string"),
                    "menu": Sequence(Value("string")),
                    "values": Sequence(Value("string")),
                    "open_question": Value("bool"),
                    "swapped": Sequence(Value("int32")),
                    "trace": Value("string"),
                    "budget": Value("int32"),
                }
            ],
            "leak_patterns": Sequence(Value("string")),
            "registers": Sequence(Value("string")),
            "decoys": Sequence(Value("int32")),
            "donor_events": [{"index": Value("int32"), "bodies": Sequence(Value("string"), length=2)}],
            "variant": Value("string"),
            "slot_alternatives": [{"index": Value("int32"), "bodies": Sequence(Value("string"))}],
            "trace": Value("string"),
            "frame": Value("string"),
            "padded": [{"index": Value("int32"), "bodies": Sequence(Value("string"))}],
            "content_hash": Value("string"),
        }
    )


def content_hash(row: dict[str, Any]) -> str:
    """sha256 of the row's canonical JSON, the hash field itself excluded."""
    body = {k: row[k] for k in ROW_FIELDS if k != "content_hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def pair_to_row(pair: DonorPair, suite: str, version: str, seed: int, index: int) -> dict[str, Any]:
    row = {
        "item_id": pair.item_id,
        "suite": suite,
        "version": version,
        "seed": seed,
        "index": index,
        "events": list(pair.events),
        "source": pair.source,
        "source_bodies": list(pair.source_bodies),
        "values": list(pair.values),
        "menu": list(pair.menu),
        "arms": [
            {
                "name": a.name,
                "served": list(a.served),
                "question": a.question,
                "uses_source": a.uses_source,
                "query_at_end": a.query_at_end,
                "appended": list(a.appended),
                "expected": a.expected,
                "encoding": a.encoding,
                "menu": list(a.menu),
                "values": list(a.values),
                "open_question": a.open_question,
                "swapped": list(a.swapped),
                "trace": a.trace,
                "budget": a.budget,
            }
            for a in pair.arms
        ],
        "leak_patterns": list(pair.leak_patterns),
        "registers": list(pair.registers),
        "decoys": list(pair.decoys),
        "donor_events": [{"index": i, "bodies": [a, b]} for i, a, b in pair.donor_events],
        "variant": pair.variant,
        "slot_alternatives": [{"index": i, "bodies": list(b)} for i, b in pair.slot_alternatives],
        "trace": pair.trace,
        "frame": pair.frame,
        "padded": [{"index": i, "bodies": list(b)} for i, b in pair.padded],
    }
    row["content_hash"] = content_hash({**row, "content_hash": ""})
    return row


def row_to_pair(row: dict[str, Any]) -> DonorPair:
    """Rebuild and validate a pair; a malformed row is refused in one line naming the field."""
    item = row.get("item_id", "<no item_id>") if isinstance(row, dict) else "<not a mapping>"
    if not isinstance(row, dict):
        raise MatbenchError(f"malformed suite row {item}: a row must be a mapping of fields")
    missing = [k for k in ROW_FIELDS if k not in row]
    if missing:
        raise MatbenchError(f"malformed suite row {item}: missing field {missing[0]!r}")
    if row["content_hash"] != content_hash(row):
        raise MatbenchError(
            f"malformed suite row {item}: content_hash does not match its fields (edited or corrupted row)"
        )
    try:
        pair = DonorPair(
            item_id=row["item_id"],
            events=tuple(row["events"]),
            source=int(row["source"]),
            source_bodies=tuple(row["source_bodies"]),
            values=tuple(row["values"]),
            menu=tuple(row["menu"]),
            arms=tuple(
                Arm(
                    a["name"],
                    tuple(int(i) for i in a["served"]),
                    a["question"],
                    bool(a["uses_source"]),
                    bool(a["query_at_end"]),
                    tuple(a["appended"]),
                    a["expected"],
                    a["encoding"],
                    tuple(a["menu"]),
                    tuple(a["values"]),
                    bool(a["open_question"]),
                    tuple(int(i) for i in a["swapped"]),
                    a["trace"],
                    int(a["budget"]),
                )
                for a in row["arms"]
            ),
            leak_patterns=tuple(row["leak_patterns"]),
            registers=tuple(row["registers"]),
            decoys=tuple(int(i) for i in row["decoys"]),
            donor_events=tuple((int(e["index"]), e["bodies"][0], e["bodies"][1]) for e in row["donor_events"]),
            variant=row["variant"],
            slot_alternatives=tuple((int(e["index"]), tuple(e["bodies"])) for e in row["slot_alternatives"]),
            trace=row["trace"],
            frame=row["frame"],
            padded=tuple((int(e["index"]), tuple(e["bodies"])) for e in row["padded"]),
            # Lossless without a field: a pair's members differ in their donor values, an
            # unpaired item's (both members identical, e.g. sink_dependency's) do not.
            paired=len(set(row["values"])) == 2,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MatbenchError(f"malformed suite row {item}: {type(exc).__name__}: {exc}") from None
    if len(pair.source_bodies) != 2 or len(pair.values) != 2:
        raise MatbenchError(f"malformed suite row {item}: a donor pair needs exactly two source bodies and values")
    pair.validate()
    return pair
