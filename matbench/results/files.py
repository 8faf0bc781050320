"""Content hashes of items, configs and files, and atomic JSON writes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def item_hash(pair: Any) -> str:
    """sha256 prefix of everything a donor pair is made of (events, arms, values, ...)."""
    from dataclasses import asdict

    return hashlib.sha256(json.dumps(asdict(pair), sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def complete_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed line) of an append-only JSON-lines file, skipping blank lines and a line
    that does not parse: only the last one, cut short by a writer killed mid-line, can be so."""
    for number, line in enumerate(Path(path).read_bytes().split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError:
            continue
