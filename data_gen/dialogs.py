"""Reading LoCoMo and REALTALK conversations (the harvest suite's sources, SPEC 3.6, 7).

matbench never redistributes their text: suite rows name a conversation, turn ids and a QA
index, and carry the sha256 of the source file; `load_sources` reads the user's own copies and
the rows are hydrated from them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError

CORPORA = ("locomo", "realtalk")


@dataclass(frozen=True)
class Turn:
    session: int
    dia_id: str
    speaker: str
    date: str
    text: str

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

    def index_of(self) -> dict[str, int]:
        return {t.dia_id: i for i, t in enumerate(self.turns)}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sessions(record: dict[str, Any]):
    # Iterate over session_<N> lists, not date keys: conv-26 has date keys without sessions.
    numbers = sorted(int(m.group(1)) for k in record for m in [re.fullmatch(r"session_(\d+)", k)] if m)
    for n in numbers:
        yield n, str(record.get(f"session_{n}_date_time", "")), record[f"session_{n}"]


def _turns(record: dict[str, Any], text_key: str) -> tuple[Turn, ...]:
    turns = []
    for n, date, messages in _sessions(record):
        for m in messages:
            text = " ".join(str(m.get(text_key) or "").split())  # one line per turn
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
    return [Conversation("locomo", str(d.get("sample_id", f"conv-{i}")), path.name, digest,
                         _turns(d["conversation"], "text"), tuple(d.get("qa", []))) for i, d in enumerate(data)]


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
        out.append(Conversation("realtalk", f.stem, f.name, file_sha256(f), _turns(d, "clean_text"),
                                tuple(d["qa"])))
    return out


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


def resolve_evidence(raw: list[Any], known: dict[str, int]) -> list[str]:
    """Evidence dia_ids that exist, in order, after normalising the malformed ones: joined ids
    ("D8:6; D9:17", "D9:1 D4:4"), trailing dots, ranges ("D12:3-D12:5"), a stray colon
    ("D:11:26") and zero padding ("D30:05"). Ids of deleted messages (REALTALK gaps) and bare
    fragments ("D", "D58") do not resolve and are dropped."""
    out: list[str] = []
    for entry in raw or []:
        for piece in re.split(r"[;,\s]+", str(entry)):
            piece = piece.strip().rstrip(".")
            if not piece:
                continue
            span = re.fullmatch(r"D(\d+):(\d+)-(?:D(\d+):)?(\d+)", piece)
            if span and (span.group(3) is None or span.group(3) == span.group(1)):
                ids = [f"D{span.group(1)}:{k}" for k in range(int(span.group(2)), int(span.group(4)) + 1)]
            else:
                fixed = re.fullmatch(r"D:?(\d+):0*(\d+)", piece)
                ids = [f"D{fixed.group(1)}:{fixed.group(2)}"] if fixed else [piece]
            out += [i for i in ids if i in known and i not in out]
    return out
