"""What every benchmark shares: the registry, the machine record, the card peaks, model loading."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from typing import Any

from matbench.registry import Registry

BENCHMARKS: Registry[Callable[..., dict[str, Any] | None]] = Registry("benchmark")


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count()}


def gpu_name(device: str) -> str | None:
    """The card `device` names, or None off a GPU."""
    import torch

    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None


# Dense bf16 peak of the cards we measure on (vendor datasheets); MFU is reported against these.
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}


def peak_tflops(device: str) -> float | None:
    import torch

    if not device.startswith("cuda"):
        return None
    name = torch.cuda.get_device_name(torch.device(device))
    return next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def load_for_bench(
    model: str | None,
    shape: str | None,
    device: str | None,
    dtype: str | None,
    attn_implementation: str | None,
    tokenizer: str | None,
    device_map: str | None = None,
    fused_kernels: str | None = None,
):
    """A real model (`--model`) or random weights of a real shape (`--random-weights`)."""
    from matbench.errors import MatbenchError
    from matbench.models.loading import load_model
    from matbench.models.shapes import random_model

    if model is None and shape is not None:
        return random_model(
            shape,
            device,
            dtype,
            attn_implementation,
            tokenizer=tokenizer,
            device_map=device_map,
            fused_kernels=fused_kernels or "auto",
        )
    if model is None or shape is not None:
        raise MatbenchError("pass exactly one of --model NAME or --random-weights SHAPE")
    return load_model(
        model,
        device=device,
        dtype=dtype,
        attn_implementation=attn_implementation,
        device_map=device_map,
        fused_kernels=fused_kernels or "auto",
    )


def decode_settings(setting: str | None, device: str, device_map: str | None = None) -> tuple[bool, ...]:
    """`--decode-graphs` -> the `ModelRunner.decode_graphs` values to time, in order: auto, on and
    off as `matbench eval` resolves them; compare, the eager loop then the graph replays in one run
    on the same model and items (on a CPU the fixed-shape steps run uncaptured)."""
    from matbench.models.loading import resolve_decode_graphs

    if setting == "compare":
        return (False, True)
    return (resolve_decode_graphs(setting or "auto", device, device_map),)


def decode_label(runner: Any) -> str:
    return "graphs" if runner.decode_graphs else "eager"
