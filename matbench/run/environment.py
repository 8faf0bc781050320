"""Where a run ran: package versions and hardware (the results file's `environment`)."""

from __future__ import annotations

import os
import platform
from typing import Any

from matbench.results.provenance import git_revision


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
