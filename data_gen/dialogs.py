"""Reading LoCoMo and REALTALK conversations (the harvest suite's sources, SPEC 3.6, 7).

Turns read exactly as the paper's loaders make them (kv_harvest3.py `load_locomo`,
`load_realtalk`): the message stripped of surrounding whitespace (inner newlines kept), LoCoMo's
image caption appended as "  [shares an image: {blip_caption}]" (REALTALK's captions are not
read), empty turns skipped, sessions in the order of their number.

matbench never redistributes their text: suite rows name a conversation, turn ids and a QA
index, and carry the sha256 of the source file; `load_sources` reads the user's own copies and
the rows are hydrated from them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from matbench.errors import MatbenchError

CORPORA = ("locomo", "realtalk")


@dataclass(frozen=True)
class Turn:
    session: int
    dia_id: str
    speaker: str
    date: str
    text: str  # as served: the message stripped, with LoCoMo's image caption

    def body(self) -> str:
        """The turn as served (SPEC 3.6); the frame adds the closing newline."""
        return f"[session {self.session} {self.date}] {self.speaker}: {self.text}"


@dataclass(frozen=True)
class Conversation:
    corpus: str
    conversation: str  # LoCoMo sample_id, or the REALTALK file stem
    source_file: str  # file name within the user's copy
    sha256: str
    turns: tuple[Turn, ...]
    qa: tuple[dict[str, Any], ...]

    def index_of(self) -> Mapping[str, int]:
        """dia_id -> turn index (turns without an id are not addressable)."""
        return self._index

    def bodies(self) -> tuple[str, ...]:
        """Every turn as served, in order."""
        return self._bodies

    # Computed once per conversation: every row of a suite hydrates from them.
    @cached_property
    def _index(self) -> Mapping[str, int]:
        return MappingProxyType({t.dia_id: i for i, t in enumerate(self.turns) if t.dia_id})

    @cached_property
    def _bodies(self) -> tuple[str, ...]:
        return tuple(t.body() for t in self.turns)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sessions(record: dict[str, Any]):
    # Iterate over session_<N> lists, not date keys: conv-26 has date keys without sessions.
    numbers = sorted(int(m.group(1)) for k in record for m in [re.fullmatch(r"session_(\d+)", k)] if m)
    for n in numbers:
        yield n, str(record.get(f"session_{n}_date_time", "")), record[f"session_{n}"]


def _turns(record: dict[str, Any], text_key: str, captions: bool) -> tuple[Turn, ...]:
    turns = []
    for n, date, messages in _sessions(record):
        for m in messages:
            text = str(m.get(text_key) or "").strip()
            caption = m.get("blip_caption") if captions else None
            if caption:
                text += f"  [shares an image: {caption}]"
            if text:
                turns.append(Turn(n, str(m.get("dia_id", "")), str(m.get("speaker", "")), date, text))
    return tuple(turns)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatbenchError(f"{what} not found at {path}; pass the path of your local copy") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MatbenchError(f"{what} at {path} is not valid JSON ({exc}); re-download it") from None


def load_locomo(path: str | Path) -> list[Conversation]:
    """The 10 conversations of `locomo10.json` (snap-research/LoCoMo)."""
    path = Path(path)
    if path.is_dir():
        path = path / "locomo10.json"
    data = _read_json(path, "LoCoMo file locomo10.json")
    if not isinstance(data, list) or not all(isinstance(d, dict) and "conversation" in d for d in data):
        raise MatbenchError(f"{path} is not LoCoMo's locomo10.json (expected a list of samples with 'conversation')")
    digest = file_sha256(path)
    return [
        Conversation(
            "locomo",
            str(d.get("sample_id", f"conv-{i}")),
            path.name,
            digest,
            _turns(d["conversation"], "text", captions=True),
            tuple(d.get("qa", [])),
        )
        for i, d in enumerate(data)
    ]


def load_realtalk(directory: str | Path) -> list[Conversation]:
    """The REALTALK chats `Chat_<k>_<A>_<B>.json` of a directory, in chat order."""
    directory = Path(directory)
    files = sorted(directory.glob("Chat_*.json"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    if not files:
        raise MatbenchError(f"no REALTALK files Chat_*.json in {directory}; pass the directory of your copy")
    out = []
    for f in files:
        d = _read_json(f, f"REALTALK file {f.name}")
        if not isinstance(d, dict) or "qa" not in d:
            raise MatbenchError(f"{f} is not a REALTALK chat (expected a mapping with 'qa' and session_<N> keys)")
        out.append(
            Conversation(
                "realtalk", f.stem, f.name, file_sha256(f), _turns(d, "clean_text", captions=False), tuple(d["qa"])
            )
        )
    return out


def participants(conversation: str) -> tuple[str, ...]:
    """The two participants a REALTALK chat names in its file stem `Chat_<k>_<A>_<B>` (x8_audit2.py
    reads them the same way); () for any other name."""
    parts = conversation.split("_")
    return (parts[2], parts[3]) if len(parts) >= 4 and parts[0] == "Chat" else ()


def participant_components(conversations: list[str]) -> dict[str, str]:
    """conversation -> its connected component of the participant graph (one edge per chat),
    labelled by the component's participants joined with "+" (x8_audit2.py: REALTALK's 10 chats
    over 10 participants form 3 components, the clustering unit of its statistics). A name
    without participants is its own component."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for name in conversations:
        people = participants(name)
        if people:
            parent[find(people[0])] = find(people[1])
    members: dict[str, set[str]] = {}
    for person in list(parent):
        members.setdefault(find(person), set()).add(person)
    return {
        name: "+".join(sorted(members[find(participants(name)[0])])) if participants(name) else name
        for name in conversations
    }


@dataclass(frozen=True)
class DialogSources:
    """Where the user's copies are: LoCoMo's locomo10.json (or its folder), REALTALK's folder."""

    locomo: str | None = None
    realtalk: str | None = None


def load_sources(locomo: str | Path | None, realtalk: str | Path | None) -> list[Conversation]:
    conversations = []
    if locomo:
        conversations += load_locomo(locomo)
    if realtalk:
        conversations += load_realtalk(realtalk)
    return conversations
