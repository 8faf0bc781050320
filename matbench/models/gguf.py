"""GGUF checkpoints: dequantised once into matbench's cache and loaded from there afterwards."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from matbench.errors import MatbenchError, first_line
from matbench.models.sources import ModelSource, cache_root, file_sha256


def gguf_cache_dir(source: ModelSource) -> Path:
    path = Path(source.location) / (source.gguf_file or "")
    stat = path.stat()
    return cache_root() / "gguf" / file_sha256(str(path), stat.st_size, stat.st_mtime_ns)[:24]


def convert_gguf(source: ModelSource, trust_remote_code: bool) -> Path:
    """Dequantise a GGUF file once and keep it as safetensors: later loads take ~1 s instead of ~30 s.

    `save_pretrained` refuses a GGUF-loaded model although its weights are plain floats; clearing
    the quantizer first works and reloads with identical logits (SPEC 4).
    """
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = gguf_cache_dir(source)
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
