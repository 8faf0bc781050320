"""Fused elementwise work on GPUs: each RMSNorm and each MLP activation as one compiled kernel.

A transformers decoder layer spends a third of a bf16 prefill on an H200 outside the matrix
products: an RMSNorm is seven kernels, each reading and writing the whole hidden state, half of
them in float32 (upcast, square, mean, rsqrt, scale, downcast, weight), and Qwen3 runs four per
layer (two on the hidden state, one on every query and key head); the gated MLP's activation and
product are two more passes over a 3x wider tensor. `fuse(model)` compiles the model's own
`forward` of those modules with `torch.compile` (dynamic shapes: one compilation per module class
serves every layer and batch shape), so the arithmetic is the module's own, in the same dtypes
and roundings, done in one pass; only the order of float32 additions inside the mean may differ.
Measured on an H200 at Qwen3-8B shape: prefill 26.8k -> 31.8k tokens/s (benchmarks/
discovery-qwen3-8b-member-prefill.json against discovery-qwen3-8b-fused.json);
the first call compiles (about 10 s).

Patched per instance (the classes are left alone, so other models in the process are untouched),
and only where it pays: CUDA devices with Triton installed (`available`), inputs of at least
`MIN_ELEMENTS` (prefills and batched serving, not decoding steps).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

from matbench.errors import MatbenchError

# The module classes whose whole forward is elementwise or a row reduction (by class name suffix:
# every transformers decoder names them so). The MLPs' matrix products stay cuBLAS calls inside
# the compiled graph; what fuses is the activation times the up projection.
FUSED_SUFFIXES = ("RMSNorm", "MLP")


def resolve(setting: str, device: str) -> bool:
    """`--fused-kernels auto|on|off` -> whether to fuse on `device` (auto: where `available`)."""
    if setting not in ("auto", "on", "off"):
        raise MatbenchError(f"unknown --fused-kernels {setting!r}; use auto, on or off")
    if setting == "on" and not available(device):
        raise MatbenchError(f"--fused-kernels on needs a CUDA device and Triton (device {device!r}); use auto or off")
    return setting == "on" or (setting == "auto" and available(device))


def available(device: str) -> bool:
    """Whether fusing pays and works here: a CUDA device and Triton to write its kernels."""
    if not str(device).startswith("cuda"):
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def fuse(model: torch.nn.Module, backend: str = "inductor") -> int:
    """Compile the forward of every RMSNorm and MLP module of `model`; returns how many.

    One compiled function per class, shared by its instances (a compilation per layer would hit
    dynamo's recompile limit and fall back to eager)."""
    # Dynamo keeps its compilations per code object, shared by every model in the process: each
    # dtype of each class is one. Past the default limit of 8 it would silently fall back to
    # eager in a process that fuses several models (the GPU gate script).
    limit = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"
    setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), 64))
    compiled: dict[type, Any] = {}
    count = 0
    for module in model.modules():
        cls = type(module)
        if not cls.__name__.endswith(FUSED_SUFFIXES) or "forward" in module.__dict__ or not _row_wise(cls):
            continue
        if cls not in compiled:
            # emulate_precision_casts: round to bf16 wherever the eager module does (inductor would
            # otherwise keep float32 through the whole fused kernel: more precise, but not the
            # model's arithmetic; measured max |dlogit| .30 at Qwen3-8B shape without it).
            options: dict[str, str | int | bool | Callable[..., Any]] | None = (
                {"emulate_precision_casts": True} if backend == "inductor" else None
            )
            compiled[cls] = torch.compile(cls.forward, dynamic=True, backend=backend, options=options)
        module.forward = functools.partial(_forward, compiled[cls], cls.forward, module)
        count += 1
    return count


# Below this many elements in the input (256 tokens of a 4096-wide model) a forward is bound by
# kernel launches, not memory passes: a decoding step gains nothing from fusing and would pay
# the compiled call's guard checks in every module.
MIN_ELEMENTS = 1 << 20


def _row_wise(cls: type[torch.nn.Module]) -> bool:
    """A forward of one tensor (an RMSNorm, a gated MLP): each row of the last dimension on its own."""
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    return len(params) == 1 and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


def _forward(compiled: Any, eager: Any, module: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    if hidden.numel() < MIN_ELEMENTS:
        return eager(module, hidden)
    # Row-wise, so compiled on [rows, width]: one compilation serves every batch, length and head
    # layout (dynamic shapes specialise sizes 0 and 1, and a batch of one would be another).
    out = compiled(module, hidden.reshape(-1, hidden.shape[-1]))
    return out.reshape(*hidden.shape[:-1], out.shape[-1])
