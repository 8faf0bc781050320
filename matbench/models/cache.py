"""matbench's cache (MATBENCH_CACHE, default ~/.cache/matbench), as entries a user can see and free.

Two kinds of entry: a GGUF file dequantised into float32 safetensors (`gguf/<sha256 prefix>/`,
several times the file's size, `matbench.models.gguf`) and an offline model's GGUF file assembled
from its PyPI package (`<alias>/`). Both are rebuilt on the next load, so clearing loses nothing but
the time to rebuild them. The Hub's own cache is not matbench's: `hf cache` manages it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.models.gguf import SOURCE_FILE, folder_bytes
from matbench.models.sources import OFFLINE_ALIASES, cache_root


@dataclass(frozen=True)
class CacheEntry:
    name: str  # what `matbench cache clear NAME` takes: gguf/<prefix> or the alias
    kind: str  # "converted GGUF" or "assembled offline model"
    source: str  # the GGUF file a converted entry came from (recorded since schema 1.12's matbench)
    bytes: int
    path: Path


def _converted_source(folder: Path) -> str:
    try:
        recorded = json.loads((folder / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return "(converted by an earlier matbench: source not recorded)"
    return f"{recorded.get('name') or '?'} <- {recorded.get('gguf_file')}"


def cache_entries(root: Path | None = None) -> list[CacheEntry]:
    """Every entry, converted models first, each group by name."""
    root = root or cache_root()
    entries = [
        CacheEntry(f"gguf/{d.name}", "converted GGUF", _converted_source(d), folder_bytes(d), d)
        for d in sorted((root / "gguf").glob("*"))
        if d.is_dir()
    ]
    entries += [
        CacheEntry(alias, "assembled offline model", ", ".join(sorted(f.name for f in d.iterdir())), folder_bytes(d), d)
        for alias in sorted(OFFLINE_ALIASES)
        if (d := root / alias).is_dir()
    ]
    return entries


def select(entries: list[CacheEntry], names: list[str]) -> list[CacheEntry]:
    """The entries named, or a one-line error naming one that is not there."""
    by_name = {e.name: e for e in entries}
    for name in names:
        if name.rstrip("/") not in by_name:
            known = ", ".join(by_name) or "none: the cache is empty"
            raise MatbenchError(f"no cache entry {name!r}; `matbench cache list` shows them ({known})")
    return [by_name[n.rstrip("/")] for n in dict.fromkeys(names)]


def remove(entries: list[CacheEntry]) -> int:
    """Delete the entries; the bytes freed."""
    for entry in entries:
        shutil.rmtree(entry.path)
    return sum(e.bytes for e in entries)
