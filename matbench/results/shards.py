"""Shard files: what one shard of a run leaves in its output folder, whoever split the run.

A run split over processes writes each shard's records to `<stem>.items.rank<r>.jsonl` (same
config hash as the run's log). Under torchrun (`matbench.run.distributed`) rank 0 merges them at
the end. A run split over machines with `matbench eval --shard I/N` has no rank 0: each shard
also writes `<stem>.shard.rank<r>.jsonl`, one line describing it (which slice of which items,
the run's config, where it ran), and its attempts file `<stem>.attempts.rank<r>.jsonl`
(`matbench.results.attempts`), and `matbench merge` (`matbench.results.merge`) joins them
without the model. Torch-free, so that merging runs on a login node.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError
from matbench.results.files import complete_json_lines


def shard_log_path(log_path: Path, rank: int) -> Path:
    """`<stem>.items.jsonl` -> `<stem>.items.rank<r>.jsonl`."""
    return log_path.with_name(log_path.name.replace(".items.jsonl", f".items.rank{rank}.jsonl"))


def shard_logs(log_path: Path) -> list[Path]:
    """Shard logs of `log_path` left by any earlier run, rank order."""
    prefix = log_path.name.replace(".items.jsonl", ".items.rank")
    found = [p for p in log_path.parent.glob(prefix + "*.jsonl") if p.name[len(prefix) : -len(".jsonl")].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(prefix) : -len(".jsonl")]))


def read_shard_records(
    paths: Iterable[Path], config_keys: Collection[str], hint: str
) -> dict[str, tuple[dict[str, Any], Path]]:
    """Every record of the shard logs `paths`, by item id, with the log it came from. A partial
    last line (a process killed mid-write) is dropped; a record of none of `config_keys` (one
    configuration's keys: its own, and those it had before schema 1.15 on each device), or one
    item logged twice with different content, is refused in one line (`hint`: what to do then)."""
    records: dict[str, tuple[dict[str, Any], Path]] = {}
    for path in paths:
        for _, record in complete_json_lines(path):
            if record.get("config_hash") not in config_keys:
                raise MatbenchError(f"{path} holds items of another configuration; {hint}")
            item_id = record["item_id"]
            if item_id in records and records[item_id][0] != record:
                raise MatbenchError(
                    f"item {item_id} was logged with different content in {records[item_id][1]} and {path}; {hint}"
                )
            records.setdefault(item_id, (record, path))
    return records


def manifest_path(log_path: Path, rank: int) -> Path:
    """`<stem>.items.jsonl` -> `<stem>.shard.rank<r>.jsonl` (not `.json`: it is no results file,
    and `matbench rescore` / the scorecard glob `*_*_*.json`)."""
    return log_path.with_name(log_path.name.replace(".items.jsonl", f".shard.rank{rank}.jsonl"))


def manifests(folder: Path) -> list[Path]:
    """Every shard description in `folder`."""
    return sorted(
        p for p in folder.glob("*.shard.rank*.jsonl") if p.name.rsplit(".rank", 1)[1].removesuffix(".jsonl").isdigit()
    )


@dataclass(frozen=True)
class ShardManifest:
    """One shard of a run split with `--shard I/N`, as its latest attempt described it."""

    stem: str  # <suite>_<readout>_<serving>...: the results file the shards make together
    shard: int  # 0-based
    shards: int
    config: dict[str, Any]  # the results file's config: the same for every shard and for one process
    config_hash: str
    invocation: dict[str, Any]
    environment: dict[str, Any]  # the machine of its latest attempt
    items: tuple[str, ...]  # its slice, in the order one process logs them
    suite_order: tuple[str, ...]  # every item of the suite, in suite order (the metrics read them so)
    n_from_log: int  # records its log held when its latest attempt started

    @property
    def label(self) -> str:
        return f"{self.shard}/{self.shards}"

    def write(self, path: Path) -> None:
        """One line, replaced atomically (a new attempt may run on another machine)."""
        path.parent.mkdir(parents=True, exist_ok=True)  # written before the first record, in a new --output
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), sort_keys=True) + "\n")
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> ShardManifest:
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            raise MatbenchError(f"{path} is not a shard description (one JSON line); move it away") from None
        names = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or set(data) != names:
            raise MatbenchError(f"{path} is not a shard description (keys {', '.join(sorted(names))}); move it away")
        return cls(**{**data, "items": tuple(data["items"]), "suite_order": tuple(data["suite_order"])})
