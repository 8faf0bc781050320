"""Several GPUs: donor pairs sharded over the processes of `torchrun` / `accelerate launch`.

Each process (rank) loads the model on its own GPU, runs a contiguous block of the pairs still to
do and appends their records to its own shard log (`<stem>.items.rank<r>.jsonl`, same config
hash). At the end, after a barrier, rank 0 merges every shard log into the run's log in the order a
single process would have written it, removes the shards, and writes the results; so the results
are those of a single-GPU run over the same items. An interrupted run resumes: shard logs left
behind are merged first, and only missing pairs are redone, whatever the new number of processes.

`matbench eval --shard I/N` splits a run the same way over machines that never meet (Slurm array
jobs): `Shard.independent`, no process group, no rank 0; `matbench merge` joins the shard files
(their names and reading: `matbench.results.shards`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from matbench.errors import MatbenchError
from matbench.protocol.records import PairRecord
from matbench.results.shards import read_shard_records, shard_log_path, shard_logs

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """This process's place among `world_size` processes (1 = an ordinary single run).
    `rendezvous`: the processes meet (torchrun: a process group, rank 0 merges and writes the
    results); without it each is one of `matbench eval --shard I/N`'s independent shards."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    rendezvous: bool = True

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`--shard I/N`: shard I (0-based, as SLURM_ARRAY_TASK_ID under --array=0-N-1) of N."""
        index, _, count = text.partition("/")
        if not (index.isdigit() and count.isdigit()):
            raise MatbenchError(
                f"--shard takes I/N, this shard's 0-based index and the number of shards (e.g. 0/4); got {text!r}"
            )
        i, n = int(index), int(count)
        if n < 1 or i >= n:
            raise MatbenchError(
                f"--shard {text}: the index of one of {n} shards is 0 to {n - 1} (0-based, as "
                f"SLURM_ARRAY_TASK_ID under --array=0-{max(n - 1, 0)})"
            )
        return cls(i, n, 0, rendezvous=False)

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
        """The process that merges the shard logs and writes the results (none among independent shards)."""
        return self.rank == 0 and self.rendezvous

    @property
    def active(self) -> bool:
        """Several processes of one process group (torchrun)."""
        return self.world_size > 1 and self.rendezvous

    @property
    def independent(self) -> bool:
        """One of several shards that never meet (`--shard I/N`): it runs as a single process would."""
        return self.world_size > 1 and not self.rendezvous

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
        return shard_log_path(log_path, self.rank)

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


def merge_shard_logs(log: Any, order: Sequence[str]) -> int:
    """Append to `log` (an `ItemLog`) every record of its shard logs that it lacks, in `order`
    (item ids; records of ids not in `order` follow in file order), then delete the shards.
    Returns the number of records merged. A partial last line (a rank killed mid-write) is dropped."""
    shards = shard_logs(log.path)
    records = {
        item_id: record
        for item_id, (record, _) in read_shard_records(shards, (log.config_key,), "remove it or pass --fresh").items()
    }
    rank = {item_id: k for k, item_id in enumerate(order)}
    merged = 0
    for item_id in sorted(records, key=lambda i: rank.get(i, len(rank))):
        if item_id not in log:
            log.append(PairRecord.from_json(records[item_id], f"{log.path} shard record"))
            merged += 1
    for shard in shards:
        shard.unlink()
    return merged
