"""Results file and per-item log.

The per-item log (JSONL) is appended one finished item at a time (flushed and fsynced), so an
interrupted run loses nothing it finished; re-running the same command skips logged items. Each
line carries the hash of the run's config, and a log written under another config is refused.
Each record also carries the item's own hash, so a suite whose rows changed under the same ids
is refused too. The results JSON is written atomically at the end; its typed schema is in
`matbench.result_schema`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any, Iterable

from matbench.errors import MatbenchError

def item_hash(pair: Any) -> str:
    """sha256 prefix of everything a donor pair is made of (events, arms, values, ...)."""
    from dataclasses import asdict

    return hashlib.sha256(json.dumps(asdict(pair), sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


class ItemLog:
    """Append-only JSONL of per-item records for one config."""

    def __init__(self, path: Path, config_key: str, fresh: bool = False, write_to: Path | None = None):
        """`write_to`: append new records there instead (a rank's shard log, see
        `matbench.distributed`); `path` is then only read."""
        self.path = path
        self.config_key = config_key
        self.write_path = write_to or path
        if fresh and path.exists():
            path.unlink()
        self.records: dict[str, dict] = {}
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
                raise MatbenchError(f"{self.path}: line {number} is not valid JSON; move the file away or pass --fresh") from None
            if record.get("config_hash") != self.config_key:
                raise MatbenchError(
                    f"{self.path} holds items of another configuration; pass --fresh to start afresh "
                    "or choose another --output"
                )
            self.records[record["item_id"]] = record

    def check_items(self, hashes: dict[str, str]) -> None:
        """Refuse a log whose records were made from other items under the same ids."""
        for item_id, record in self.records.items():
            if item_id in hashes and record.get("item_hash") != hashes[item_id]:
                raise MatbenchError(f"{self.path}: item {item_id} was logged from different rows than this run's; "
                                    "pass --fresh to start afresh or choose another --output")

    def __contains__(self, item_id: str) -> bool:
        return item_id in self.records

    def append(self, record: dict) -> None:
        record = {**record, "config_hash": self.config_key}
        self.write_path.parent.mkdir(parents=True, exist_ok=True)
        with self.write_path.open("a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records[record["item_id"]] = record

    def ordered(self, item_ids: Iterable[str]) -> list[dict]:
        return [self.records[i] for i in item_ids]


def environment() -> dict[str, Any]:
    import torch
    import transformers

    import matbench

    try:
        import datasets  # only suites read from a dataset repository need it

        datasets_version = datasets.__version__
    except ImportError:
        datasets_version = None

    env = {
        "matbench": matbench.__version__,
        "matbench_git": git_revision(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "datasets": datasets_version,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    return env


def git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
