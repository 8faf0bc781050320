"""The records of `matbench bench` in a folder (`benchmarks/`): when, from which commit, on which
hardware and by which command each was made, and the dated table of them that the folder's README
shows (a test holds the two equal).

Each record carries `recorded = {"date", "commit", "hardware"}` (written by `matbench bench`; a
record made by another command also names it there as `command`) beside its own `command`.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from matbench.errors import MatbenchError

RECORDED = "recorded"
HEADER = ("| record | date | commit | hardware | command |", "|---|---|---|---|---|")


@dataclass(frozen=True)
class BenchRecord:
    """One record file: its name and where it came from."""

    file: str
    date: str
    commit: str
    hardware: str
    command: str

    def row(self) -> str:
        return f"| `{self.file}` | {self.date} | {self.commit} | {self.hardware} | `{self.command}` |"


def hardware(device: str | None) -> str:
    """The machine a benchmark ran on, as the table names it: the GPU's name, else the CPU."""
    if device and device.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            name = torch.cuda.get_device_name(0)
            return f"{n} x {name}" if n > 1 and os.environ.get("WORLD_SIZE", "1") != "1" else name
    return f"{os.cpu_count()}-core {platform.machine()} CPU"


def recorded_now(device: str | None) -> dict[str, str]:
    """The `recorded` block of a record written now by the code of this checkout."""
    from matbench.results.provenance import git_revision

    revision = git_revision() or "unknown"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "commit": revision[:7] + ("+dirty" if revision.endswith("+dirty") else ""),
        "hardware": hardware(device),
    }


def script_provenance(device: str | None) -> dict[str, object]:
    """The `command`, `machine` and `recorded` blocks of a record that a script (not `matbench
    bench`) writes: this process's command line, the machine with its GPU, and `recorded_now`."""
    import shlex
    import sys

    from matbench.bench.common import gpu_name, machine

    ran_on = device if device and device.startswith("cuda") else "cpu"
    return {
        "command": "python " + shlex.join(sys.argv),
        "machine": {**machine(), "gpu": gpu_name(ran_on)},
        RECORDED: recorded_now(device),
    }


def read_bench_records(folder: Path) -> list[BenchRecord]:
    """Every record of `folder`, oldest first (then by name); one line naming a record that does
    not say when, where or how it was made."""
    records = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise MatbenchError(f"{path} is not a JSON record ({exc}); write it with matbench bench --output") from None
        data = data if isinstance(data, dict) else {}  # then it names no field: refused below
        made = data.get(RECORDED) if isinstance(data.get(RECORDED), dict) else None
        command = (made or {}).get("command") or data.get("command")
        if not made or not command or not all(made.get(k) for k in ("date", "commit", "hardware")):
            raise MatbenchError(
                f"{path}: a benchmark record needs {RECORDED}.date, .commit, .hardware and a command; "
                "write it with matbench bench --output"
            )
        records.append(BenchRecord(path.name, made["date"], made["commit"], made["hardware"], command))
    return sorted(records, key=lambda r: (r.date, r.file))


def history_table(folder: Path, current: set[str] | frozenset[str] = frozenset()) -> str:
    """The Markdown table of the records of `folder` but the `current` ones, oldest first."""
    rows = [r.row() for r in read_bench_records(folder) if r.file not in current]
    return "\n".join([*HEADER, *rows])


if __name__ == "__main__":  # python -m matbench.bench.records benchmarks: the README's two tables
    import sys

    from matbench.bench.targets import cited, current_table

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks")
    print(current_table(folder), history_table(folder, cited()), sep="\n\n")
