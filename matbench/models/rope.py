"""The harvest suite's position stress (the paper's llm_hf.py `SPRAG_ROPE_FACTOR`): the model's
RoPE stretched by YaRN, a run option that any suite can take (`matbench eval --rope-yarn F`)."""

from __future__ import annotations

from typing import Any

from matbench.errors import MatbenchError


def check_yarn_factor(factor: float) -> None:
    """`--rope-yarn` stretches: a factor above 1 (checked before any weights load)."""
    if not factor > 1:
        raise MatbenchError(f"--rope-yarn must be a factor above 1 (got {factor})")


def with_yarn(config: Any, factor: float, name: str) -> Any:
    """`config` with YaRN scaling by `factor` on every RoPE it has (the per-layer-type ones of a
    sliding-window model included), each keeping its own theta; the original context is the
    model's `max_position_embeddings`, as llm_hf.py sets it. One line if the model has no RoPE."""
    check_yarn_factor(factor)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    params = getattr(text, "rope_parameters", None)
    if not isinstance(params, dict) or not params:
        raise MatbenchError(f"--rope-yarn: model {name!r} has no RoPE parameters to stretch")
    original = getattr(text, "max_position_embeddings", None) or 32768

    def yarn(own: dict[str, Any]) -> dict[str, Any]:
        if own.get("rope_type", "default") not in ("default", "yarn"):
            raise MatbenchError(
                f"--rope-yarn: model {name!r} already scales its RoPE ({own['rope_type']}); "
                "stretch a model with plain RoPE"
            )
        return {
            **own,
            "rope_type": "yarn",
            "factor": float(factor),
            "original_max_position_embeddings": own.get("original_max_position_embeddings", original),
        }

    nested = all(isinstance(v, dict) for v in params.values())
    text.rope_parameters = {kind: yarn(own) for kind, own in params.items()} if nested else yarn(params)
    return config
