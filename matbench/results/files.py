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


# What a run's config records but its key leaves out. Which items and whether the gates ran: a
# resumed run may take more items or switch the gates on. Where the model (and a judge) was read
# from and ran: the weights are pinned by what stays in (name, revision, commit, GGUF sha256,
# tokenizer fingerprint), an offline alias's file sits in each machine's own site-packages, and the
# arithmetic is fixed by the dtype, attention kernel, fused kernels and decode graphs; a CPU and a
# GPU run of one float32 config differ in rounding only, as two GPU kinds, both `cuda`, always
# have. So a run started on one machine resumes on another and `--shard` runs on a CPU and a GPU
# merge (schema 1.15: the device and location were in the key before).
UNKEYED = ("n_items", "check", "check_pairs")
PLACED = ("model", "judge")  # the config members whose `PLACE` the key leaves out
PLACE = ("device", "location")


def without_place(config: dict[str, Any]) -> dict[str, Any]:
    """`config` without where its model and judge were read from and ran."""
    return {
        k: {m: x for m, x in v.items() if m not in PLACE} if k in PLACED and isinstance(v, dict) else v
        for k, v in config.items()
    }


def keyed_config(config: dict[str, Any]) -> dict[str, Any]:
    """What of `config` keys its run: all but `UNKEYED` and `PLACE`."""
    return without_place({k: v for k, v in config.items() if k not in UNKEYED})


def run_key(config: dict[str, Any]) -> str:
    """The hash that keys a run's per-item log and attempts."""
    return config_hash(keyed_config(config))


def legacy_run_key(config: dict[str, Any]) -> str:
    """The key of matbench before schema 1.15 (device and location in it): what `rekey_lines` replaces."""
    return config_hash({k: v for k, v in config.items() if k not in UNKEYED})


def rekey_lines(path: Path, old: str, new: str) -> int:
    """Give the JSON lines of `path` keyed `old` the key `new`, in place (atomically, every other
    byte kept): a log or attempts file written before the place left the key resumes, and merges,
    under the new one. Both are written by `json.dumps` with its default separators, and a quote
    inside a string is escaped, so `"config_hash": "<old>"` can only be a line's key. Returns the
    lines changed; a file without the old key is read once and left alone."""
    if old == new or not Path(path).exists():
        return 0
    data = Path(path).read_bytes()
    needle = f'"config_hash": {json.dumps(old)}'.encode()
    changed = data.count(needle)
    if changed:
        tmp = Path(path).with_name(Path(path).name + ".rekey")
        tmp.write_bytes(data.replace(needle, f'"config_hash": {json.dumps(new)}'.encode()))
        tmp.replace(path)
    return changed


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
