"""The results store: runs kept once each, one folder per run, in the layout of a Hub dataset.

A store is a folder (or a snapshot of a Hub dataset repository) laid out as

    README.md                                        the dataset card
    <collection>/<model>/<stem>/<stem>.json          a run's results file (one line, sorted keys)
    <collection>/<model>/<stem>/<stem>.items.jsonl.gz  its per-item log, gzip-compressed
    submissions/<address>/<stem>.json                a run added by `matbench submit`
    submissions/<address>/<stem>.items.jsonl.gz

Invariants every reader relies on:
- A per-item log is found by the name its results file records (`items.log`), as written or
  with `.gz` appended: an eval output folder (plain logs) and a store (compressed) read the same.
- The log's sha256 in the results file is of the log's decompressed bytes, so a compressed log
  is checked against the hash the run recorded, and decompressing gives back the very bytes.
- A run's address is the sha256 of its results in the store's serialization (`results_bytes`),
  so an eval output file (indented) and its stored copy (one line) have the same address.
- Compression is deterministic (no name, no time in the gzip header): storing a run twice gives
  the same bytes, and a folder is never stored under two names.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError

GZ = ".gz"
RESULTS_GLOB = "*_*_*.json"  # <suite>_<readout>_<serving>[_<policy>...].json; scorecard.json does not match


def find_log(folder: Path, name: str) -> Path | None:
    """The per-item log `name` in `folder`, as written or compressed; None when neither is there."""
    for candidate in (Path(folder) / name, Path(folder) / f"{name}{GZ}"):
        if candidate.is_file():
            return candidate
    return None


def read_log_bytes(path: Path, max_bytes: int | None = None) -> bytes:
    """The decompressed bytes of a per-item log (plain or `.gz`); one line when it is over
    `max_bytes` decompressed (read in pieces: a small file cannot expand without bound) or is no
    gzip file."""
    path = Path(path)
    if not path.name.endswith(GZ):
        data = path.read_bytes()
    else:
        chunks, total = [], 0
        try:
            with gzip.open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
                    if max_bytes is not None and total > max_bytes:
                        break
                    chunks.append(chunk)
        except (OSError, EOFError, zlib.error) as exc:
            raise MatbenchError(
                f"per-item log {path} is not a complete gzip file ({exc}); store the log again"
            ) from None
        data = b"".join(chunks)
        if max_bytes is not None and total > max_bytes:
            raise MatbenchError(f"per-item log {path.name} is over the {max_bytes} byte limit (decompressed)")
    if max_bytes is not None and len(data) > max_bytes:
        raise MatbenchError(f"per-item log {path.name} is over the {max_bytes} byte limit")
    return data


def log_sha256(path: Path) -> str:
    """sha256 of the log's decompressed bytes: the hash its run recorded."""
    return hashlib.sha256(read_log_bytes(path)).hexdigest()


def results_bytes(payload: dict[str, Any]) -> bytes:
    """A results payload as the store keeps it: one line of JSON with sorted keys."""
    return (json.dumps(payload, sort_keys=True) + "\n").encode()


def run_address(payload: dict[str, Any]) -> str:
    """The run's content address: 16 hex digits of the sha256 of `results_bytes(payload)`."""
    return hashlib.sha256(results_bytes(payload)).hexdigest()[:16]


def compress_log(data: bytes) -> bytes:
    """gzip at level 9 with no file name and time 0: the same bytes every time."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def is_run_folder(results: Path) -> bool:
    """Whether the folder of the results file `results` is its run folder: named after the run
    (`<stem>/`) or after its address (`submissions/<address>/`), not an eval output folder."""
    folder = results.parent.name
    return folder == results.stem or (len(folder) == 16 and all(c in "0123456789abcdef" for c in folder))


def results_files(target: Path, recursive: bool = False) -> list[Path]:
    """`target` itself, or every results file of a folder: those in it and in its run folders
    (`is_run_folder`, one level down); in all its subfolders when `recursive`."""
    target = Path(target)
    if target.is_dir():
        if recursive:
            found = list(target.rglob(RESULTS_GLOB))
        else:
            found = [*target.glob(RESULTS_GLOB), *(p for p in target.glob(f"*/{RESULTS_GLOB}") if is_run_folder(p))]
        return sorted(p for p in found if p.is_file() and not p.name.startswith("."))
    if not target.exists():
        raise MatbenchError(f"{target} not found: pass a results file or an eval output directory")
    return [target]


def store_run(results: Path, folder: Path, payload: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Write the run of the results file `results` into the run folder `folder`: its results
    (one line) and its log compressed, under the names the run gave them. The log must be the
    one the run wrote (sha256). Returns the written (results, log) paths."""
    results = Path(results)
    payload = payload if payload is not None else json.loads(results.read_bytes())
    items = payload["items"]
    log = find_log(results.parent, items["log"])
    if log is None:
        raise MatbenchError(f"{results}: its per-item log {items['log']} is missing; keep it beside the results file")
    data = read_log_bytes(log)
    if hashlib.sha256(data).hexdigest() != items["sha256"]:
        raise MatbenchError(f"{results}: per-item log {log.name} is not the one the run wrote (sha256 differs)")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = (folder / results.name, folder / f"{items['log']}{GZ}")
    for path, content in zip(written, (results_bytes(payload), compress_log(data))):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(content)
        tmp.replace(path)
    plain = folder / items["log"]
    if plain.exists():  # a run folder holds its log once (the source's bytes are read already)
        plain.unlink()
    return written
