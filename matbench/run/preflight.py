"""The checks of an evaluation's options that need neither torch nor a model, run before either
is imported, so that a mistyped option is named in one line in well under a second; the checks
that need the evaluators' registry follow in `evaluate.check_config`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError


def preflight(cfg: Any) -> None:
    """Refuse, one line each: counts below 1, an --output that is a file, an unknown suite
    (with the closest names), a serving policy that does not parse (`--policy`, `--budget`,
    `--source-mode`, `--kept-from`), and a --model or --judge that names nothing loadable
    (`matbench.models.sources.check_model_name`)."""
    from matbench.data_gen import SUITES
    from matbench.engine.policies.setting import expand_settings
    from matbench.models.sources import check_model_name

    for name, value in (
        ("--limit", cfg.limit),
        ("--batch-pairs", cfg.batch_pairs),
        ("--chunk-size", cfg.chunk_size),
        ("--check-pairs", cfg.check_pairs),
    ):
        if value is not None and value < 1:
            raise MatbenchError(f"{name} must be at least 1 (got {value})")
    output = Path(cfg.output)
    if output.exists() and not output.is_dir():
        raise MatbenchError(f"--output {cfg.output} is a file; name a directory (it is created if missing)")
    if cfg.suite != "all":
        SUITES.get(cfg.suite)  # a misspelt suite is named as a suite, with the closest names
    # the serving policies' names, arguments and budgets (the policy registry imports no torch)
    expand_settings(cfg.policies, cfg.budgets, cfg.source_modes, cfg.kept_from)
    check_model_name(cfg.model, cfg.revision)
    if cfg.judge and cfg.judge != cfg.model:
        check_model_name(cfg.judge)
