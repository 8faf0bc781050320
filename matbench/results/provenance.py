"""Where a run ran: package versions, hardware, the matbench git revision."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


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
