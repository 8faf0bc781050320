"""The per-item log.

The per-item log (JSONL) is appended one finished item at a time (flushed and fsynced), so an
interrupted run loses nothing it finished; re-running the same command skips logged items. Each
line carries the hash of the run's config, and a log written under another config is refused.
Each record also carries the item's own hash, so a suite whose rows changed under the same ids
is refused too. The results JSON is written atomically at the end; its typed schema is in
`matbench.results.schema`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.protocol.records import PairRecord


class ItemLog:
    """Append-only JSONL of per-item records for one config."""

    def __init__(self, path: Path, config_key: str, fresh: bool = False, write_to: Path | None = None):
        """`write_to`: append new records there instead (a rank's shard log, see
        `matbench.run.distributed`); `path` is then only read."""
        self.path = path
        self.config_key = config_key
        self.write_path = write_to or path
        if fresh and path.exists():
            path.unlink()
        self.records: dict[str, PairRecord] = {}
        if path.exists():
            self._load()
        self.n_loaded = len(self.records)

    def _load(self) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        if lines and lines[-1] != b"":
            # The last line was being written when the run stopped: drop it, keep the rest.
            lines = lines[:-1]
            with self.path.open("r+b") as fh:
                fh.truncate(sum(len(line) + 1 for line in lines))
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise MatbenchError(
                    f"{self.path}: line {number} is not valid JSON; move the file away or pass --fresh"
                ) from None
            if record.get("config_hash") != self.config_key:
                raise MatbenchError(
                    f"{self.path} holds items of another configuration; pass --fresh to start afresh "
                    "or choose another --output"
                )
            self.records[record["item_id"]] = PairRecord.from_json(record, f"{self.path} line {number}")

    def check_items(self, hashes: dict[str, str]) -> None:
        """Refuse a log whose records were made from other items under the same ids."""
        for item_id, record in self.records.items():
            if item_id in hashes and record.item_hash != hashes[item_id]:
                raise MatbenchError(
                    f"{self.path}: item {item_id} was logged from different rows than this run's; "
                    "pass --fresh to start afresh or choose another --output"
                )

    def __contains__(self, item_id: str) -> bool:
        return item_id in self.records

    def append(self, record: PairRecord) -> None:
        record = replace(record, config_hash=self.config_key)
        self.write_path.parent.mkdir(parents=True, exist_ok=True)
        with self.write_path.open("a") as fh:
            fh.write(record_line(record))
            fh.flush()
            os.fsync(fh.fileno())
        self.records[record.item_id] = record

    def ordered(self, item_ids: Iterable[str]) -> list[PairRecord]:
        return [self.records[i] for i in item_ids]


def record_line(record: PairRecord) -> str:
    """A record as its log line: the one serialization, so that logs merged from shards are the
    bytes one process writes."""
    return json.dumps(record.to_json(), sort_keys=True) + "\n"
