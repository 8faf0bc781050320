"""Several GPUs: donor pairs sharded over the processes of `torchrun` / `accelerate launch`.

Each process (rank) loads the model on its own GPU, runs a contiguous block of the pairs still to
do and appends their records to its own shard log (`<stem>.items.rank<r>.jsonl`, same config
hash). At the end, after a barrier, rank 0 merges every shard log into the run's log in the order a
single process would have written it, removes the shards, and writes the results; so the results
are those of a single-GPU run over the same items. An interrupted run resumes: shard logs left
behind are merged first, and only missing pairs are redone, whatever the new number of processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from matbench.errors import MatbenchError
from matbench.protocol.records import PairRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """This process's place among `world_size` processes (1 = an ordinary single run)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Shard:
        """Read RANK / WORLD_SIZE / LOCAL_RANK, which torchrun and accelerate launch set."""
        try:
            world = int(os.environ.get("WORLD_SIZE", "1"))
            rank = int(os.environ.get("RANK", "0"))
            local = int(os.environ.get("LOCAL_RANK", str(rank)))
        except ValueError:
            raise MatbenchError("RANK, WORLD_SIZE and LOCAL_RANK must be integers (set by torchrun)") from None
        if world < 1 or not 0 <= rank < world:
            raise MatbenchError(f"RANK {rank} is not within WORLD_SIZE {world}")
        return cls(rank, world, local)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def device(self, requested: str | None) -> str | None:
        """Each rank's own GPU: `cuda` (or nothing) becomes `cuda:<local rank>`."""
        if not self.active:
            return requested
        if requested and requested.startswith("cuda:"):
            raise MatbenchError("with several processes each one takes its own GPU; pass --device cuda, not cuda:N")
        import torch

        if requested in (None, "auto", "cuda") and torch.cuda.is_available():
            return f"cuda:{self.local_rank}"
        return requested

    def config_device(self, device: str) -> str:
        """The device as the run's config records it: every rank's `cuda:<r>` is `cuda`, so that
        all ranks share one config hash (and their shard logs merge)."""
        return device.split(":")[0] if self.active else device

    def block(self, items: Sequence[T]) -> list[T]:
        """This rank's contiguous block of `items` (sizes differ by at most one). Contiguous, so
        that items over one long dialog stay together and reuse its prefill."""
        n, world = len(items), self.world_size
        lo = self.rank * n // world
        hi = (self.rank + 1) * n // world
        return list(items[lo:hi])

    def shard_log(self, log_path: Path) -> Path:
        return log_path.with_name(log_path.name.replace(".items.jsonl", f".items.rank{self.rank}.jsonl"))

    def start(self) -> None:
        """Join the process group (gloo on CPU, nccl on GPU); a no-op for a single process."""
        if not self.active:
            return
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            if backend == "nccl":
                torch.cuda.set_device(self.local_rank)
            dist.init_process_group(backend=backend)

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as dist

            dist.barrier()

    def stop(self) -> None:
        if self.active:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def shard_logs(log_path: Path) -> list[Path]:
    """Shard logs of `log_path` left by any earlier run, rank order."""
    prefix = log_path.name.replace(".items.jsonl", ".items.rank")
    found = [p for p in log_path.parent.glob(prefix + "*.jsonl") if p.name[len(prefix):-len(".jsonl")].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(prefix):-len(".jsonl")]))


def merge_shard_logs(log: Any, order: Sequence[str]) -> int:
    """Append to `log` (an `ItemLog`) every record of its shard logs that it lacks, in `order`
    (item ids; records of ids not in `order` follow in file order), then delete the shards.
    Returns the number of records merged. A partial last line (a rank killed mid-write) is dropped."""
    records: dict[str, dict] = {}
    shards = shard_logs(log.path)
    for shard in shards:
        for number, line in enumerate(shard.read_bytes().split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # only the last line of a killed rank can be cut short
            if record.get("config_hash") != log.config_key:
                raise MatbenchError(f"{shard} holds items of another configuration; remove it or pass --fresh")
            records.setdefault(record["item_id"], record)
    rank = {item_id: k for k, item_id in enumerate(order)}
    merged = 0
    for item_id in sorted(records, key=lambda i: rank.get(i, len(rank))):
        if item_id not in log:
            log.append(PairRecord.from_json(records[item_id], f"{log.path} shard record"))
            merged += 1
    for shard in shards:
        shard.unlink()
    return merged
