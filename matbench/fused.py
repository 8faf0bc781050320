"""Fused elementwise work on GPUs: each RMSNorm and each MLP activation as one compiled kernel.

A transformers decoder layer spends a third of a bf16 prefill on an H200 outside the matrix
products: an RMSNorm is seven kernels, each reading and writing the whole hidden state, half of
them in float32 (upcast, square, mean, rsqrt, scale, downcast, weight), and Qwen3 runs four per
layer (two on the hidden state, one on every query and key head); the gated MLP's activation and
product are two more passes over a 3x wider tensor. `fuse(model)` compiles the model's own
`forward` of those modules with `torch.compile` (dynamic shapes: one compilation per module class
serves every layer and batch shape), so the arithmetic is the module's own, in the same dtypes
and roundings, done in one pass; only the order of float32 additions inside the mean may differ.
Measured on an H200 at Qwen3-8B shape: prefill 28.1k -> 33.7k tokens/s (benchmarks/README.md);
the first call compiles (about 10 s).

Patched per instance (the classes are left alone, so other models in the process are untouched),
and only where it pays: CUDA devices with Triton installed (`available`).
"""

from __future__ import annotations

import functools
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
    compiled: dict[type, Any] = {}
    count = 0
    for module in model.modules():
        cls = type(module)
        if not cls.__name__.endswith(FUSED_SUFFIXES) or "forward" in module.__dict__:
            continue
        if cls not in compiled:
            # emulate_precision_casts: round to bf16 wherever the eager module does (inductor would
            # otherwise keep float32 through the whole fused kernel: more precise, but not the
            # model's arithmetic; measured max |dlogit| .30 at Qwen3-8B shape without it).
            options = {"emulate_precision_casts": True} if backend == "inductor" else None
            compiled[cls] = torch.compile(cls.forward, dynamic=True, backend=backend, options=options)
        module.forward = functools.partial(compiled[cls], module)
        count += 1
    return count
