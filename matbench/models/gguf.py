"""GGUF checkpoints: dequantised once into matbench's cache and loaded from there afterwards.

The cache holds a float32 copy (transformers cannot run the quantised tensors): several times the
file's size (a 1.5B Q4 file became 6.7 GB). `matbench cache list` shows it, `matbench cache clear`
frees it (matbench/models/cache.py)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.models.sources import ModelSource, cache_root, file_sha256

SOURCE_FILE = "matbench-source.json"  # in a converted folder: which GGUF file it came from


def gguf_sha256(source: ModelSource) -> str:
    """The GGUF file's full sha256 (hashed once per path, size and mtime)."""
    path = Path(source.location) / (source.gguf_file or "")
    stat = path.stat()
    return file_sha256(str(path), stat.st_size, stat.st_mtime_ns)


def gguf_cache_dir(source: ModelSource) -> Path:
    return cache_root() / "gguf" / gguf_sha256(source)[:24]


# GGUF metadata value types (gguf-py's GGUFValueType) and the byte size of the fixed-size ones.
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


def gguf_name(path: str | Path) -> str | None:
    """The file's `general.name` (what llama.cpp and the Hub call the model), None when it has none.

    Reads the metadata header only: gguf-py's GGUFReader maps every tensor first (4-23 s for the
    offline models on a busy 2-core machine), and a results file is described on every run."""
    with open(path, "rb") as fh:

        def read(fmt: str):
            return struct.unpack("<" + fmt, fh.read(struct.calcsize("<" + fmt)))[0]

        def skip(kind: int) -> None:
            if kind == _STRING:
                fh.seek(read("Q"), 1)
            elif kind == _ARRAY:
                item, count = read("I"), read("Q")
                if item in _SIZES:
                    fh.seek(_SIZES[item] * count, 1)
                else:
                    for _ in range(count):
                        skip(item)
            else:
                fh.seek(_SIZES[kind], 1)

        try:
            if fh.read(4) != b"GGUF" or read("I") < 2:
                return None
            read("Q")  # tensors
            for _ in range(read("Q")):
                key = fh.read(read("Q")).decode("utf-8", "replace")
                kind = read("I")
                if key == "general.name" and kind == _STRING:
                    return fh.read(read("Q")).decode("utf-8", "replace").strip() or None
                skip(kind)
        except (struct.error, KeyError):  # cut short or an unknown type: no name rather than a wrong one
            return None
    return None


@contextlib.contextmanager
def quiet_gguf_progress(progress: bool):
    """Without progress, silence transformers' GGUF dequantisation bar: it is a bare tqdm that
    transformers' own `disable_progress_bar` does not reach (`--no-progress` left it on)."""
    if progress:
        yield
        return
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    bar = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


def _file_key(path) -> tuple[str, int, int]:
    """One file's identity for the parse block: a rewritten file (size or mtime) is read anew."""
    stat = os.stat(path)
    return os.path.realpath(path), stat.st_size, stat.st_mtime_ns


@contextlib.contextmanager
def one_gguf_parse(source: ModelSource):
    """While open, transformers parses each GGUF file once (nothing to do for a source that is not
    a GGUF file).

    transformers builds a fresh `gguf.GGUFReader` for the config, again for the model's config, the
    weights and the tokenizer: four parses of the whole metadata, ~30 s each for gemma3-270m's
    262k-token vocabulary on a 2-core machine. Its legacy loader imports the class when it runs, so
    the readers built inside this block come from a factory that keeps one per file (path, size,
    mtime) and hands it back; transformers only reads them. The metadata-to-config step runs once
    per file too (`_one_metadata_read`). The real functions are restored on exit. Without the gguf
    package it does nothing (`require_gguf` says what to install)."""
    gguf: Any  # the module, or None without it
    try:
        gguf = importlib.import_module("gguf")
    except ImportError:
        gguf = None
    if source.gguf_file is None or gguf is None or getattr(gguf.GGUFReader, "one_parse", False):
        yield  # not a GGUF file, no gguf, or nested (the outer block's readers serve)
        return
    import numpy as np

    real = gguf.GGUFReader

    class PlainArrayReader(real):  # type: ignore[misc, valid-type]  # whatever class gguf holds now
        """Reads the mapped file through a plain ndarray view of it: the same bytes, no copy, but
        without numpy.memmap's Python-level `__getitem__` and `__array_finalize__` on each of the
        million slices the vocabulary takes (gemma3-270m: 16.4 s -> 6.4 s, fields and tensors equal)."""

        @property
        def data(self):
            return self._plain

        @data.setter
        def data(self, mapped):
            self._plain = mapped.view(np.ndarray)

    readers: dict[tuple, object] = {}

    def reader(path, mode="r"):
        key = (*_file_key(path), mode)
        if key not in readers:
            readers[key] = PlainArrayReader(path, mode)
        return readers[key]

    reader.one_parse = True  # type: ignore[attr-defined]
    gguf.GGUFReader = reader
    with _one_metadata_read():
        try:
            yield
        finally:
            gguf.GGUFReader = real


@contextlib.contextmanager
def _one_metadata_read():
    """transformers turns a file's metadata into config and tokenizer values with
    `load_gguf_checkpoint(path, return_tensors=False)` for the config, the model's config and the
    tokenizer: the same Python loop over every field each time (gemma3-270m's vocabulary ~3 s per
    call on a 2-core machine). Inside `one_gguf_parse` it runs once per file (path, size, mtime);
    each caller gets its own deep copy, since callers pop keys from what they are given. Calls that
    read tensors go to the real function. Its callers import it when they run, so replacing the
    module attribute reaches them."""
    import copy

    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    real = gguf_utils.load_gguf_checkpoint
    parsed: dict[tuple, dict] = {}

    def load_gguf_checkpoint(gguf_checkpoint_path, return_tensors=False, model_to_load=None, torch_dtype=None):
        if return_tensors or model_to_load is not None or torch_dtype is not None:
            return real(gguf_checkpoint_path, return_tensors, model_to_load, torch_dtype)
        key = _file_key(gguf_checkpoint_path)
        if key not in parsed:
            parsed[key] = real(gguf_checkpoint_path, return_tensors=False)
        return copy.deepcopy(parsed[key])

    gguf_utils.load_gguf_checkpoint = load_gguf_checkpoint
    try:
        yield
    finally:
        gguf_utils.load_gguf_checkpoint = real


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _record_source(folder: Path, source: ModelSource, file: Path) -> None:
    """Which file a converted folder came from, for `matbench cache list`."""
    (folder / SOURCE_FILE).write_text(
        json.dumps(
            {
                "gguf_file": str(file.resolve()),
                "name": gguf_name(file),
                "sha256": gguf_sha256(source),
                "bytes": file.stat().st_size,
            }
        )
        + "\n"
    )


# Nine common English words: a subword vocabulary gives about one token each (SmolLM2, Gemma 3 and
# Qwen2.5 all give 9).
SUBWORD_PROBE = " the quick brown fox jumps over the lazy dog"
MAX_TOKENS_PER_WORD = 1.7
UPGRADE = "upgrade transformers and tokenizers with `pip install -U transformers tokenizers`"


def libraries() -> str:
    import tokenizers
    import transformers

    return f"transformers {transformers.__version__} (tokenizers {tokenizers.__version__})"


def check_subword_tokenizer(tokenizer: Any, what: str, fix: str = UPGRADE) -> None:
    """Refuse a tokenizer whose vocabulary has lost its merges; `what` names it in the error.

    transformers 5.17.0 (with tokenizers 0.23.3) builds Gemma 3's tokenizer from its GGUF file with
    20 tokens for `SUBWORD_PROBE`, and the copy it saves reads back with 44, one per character;
    5.18.0 and later give 9 both ways. Every prompt would be tokenized differently from the
    model's training, silently."""
    n = len(tokenizer.encode(SUBWORD_PROBE, add_special_tokens=False))
    words = len(SUBWORD_PROBE.split())
    if n > MAX_TOKENS_PER_WORD * words:
        raise MatbenchError(
            f"{what} splits common English into pieces ({n} tokens for {words} words, where a subword "
            f"vocabulary gives about one each), so every prompt would be tokenized wrongly: {fix}"
        )


def require_gguf(source: ModelSource) -> None:
    """Refuse, in one line, to read a GGUF file without the gguf package: transformers' own message
    asks for torch too, and matbench's reading errors would blame the file."""
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise MatbenchError(
            f"loading {source.gguf_file} needs the gguf package, which is not installed: run `pip install 'gguf>=0.10'`"
        ) from None


def convert_gguf(source: ModelSource, trust_remote_code: bool, progress: bool = True) -> Path:
    """Dequantise a GGUF file once and keep it as safetensors: later loads take ~1 s instead of ~30 s.

    `save_pretrained` refuses a GGUF-loaded model although its weights are plain floats; clearing
    the quantizer first works and reloads with identical logits (SPEC 4).
    """
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if source.gguf_file is None:
        raise ValueError(f"convert_gguf needs a GGUF source, not {source.location!r}")
    target = gguf_cache_dir(source)
    file = Path(source.location) / source.gguf_file
    if (target / "config.json").is_file():
        if not (target / SOURCE_FILE).is_file():  # converted by an earlier matbench
            _record_source(target, source, file)
        return target
    require_gguf(source)
    print(
        f"matbench: dequantising {source.gguf_file} ({file.stat().st_size / 1e9:.2f} GB) once into {target}: "
        "a float32 copy several times its size, 20 s to a few minutes (`matbench cache list` / `clear`)",
        file=sys.stderr,
    )
    try:
        with quiet_gguf_progress(progress), one_gguf_parse(source):
            tokenizer = AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)
            built = f"the tokenizer {libraries()} builds from {source.gguf_file}"
            check_subword_tokenizer(tokenizer, built)  # before minutes of dequantising
            model = AutoModelForCausalLM.from_pretrained(
                source.location, gguf_file=source.gguf_file, dtype=torch.float32, trust_remote_code=trust_remote_code
            )
    except MatbenchError:
        raise
    except Exception as exc:
        raise MatbenchError(
            f"could not load GGUF file {source.gguf_file!r} (truncated or corrupt?): {first_line(exc)}"
        ) from None
    # torch types nn.Module.__setattr__ for Tensor | Module values only; transformers reads a plain attribute
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:  # what every later load reads: the saved copy, which some releases write wrongly
        check_subword_tokenizer(AutoTokenizer.from_pretrained(tmp), f"{built}, saved and read back,")
    except MatbenchError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _record_source(tmp, source, file)
    try:
        tmp.replace(target)
    except OSError:  # another process converted it first (the target is a full folder): keep that one
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / "config.json").is_file():
            raise
    print(f"matbench: kept {folder_bytes(target) / 1e9:.2f} GB in {target}", file=sys.stderr)
    return target
