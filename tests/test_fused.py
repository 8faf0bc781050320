"""`matbench.fused`: compiled RMSNorm/MLP forwards give the model's own outputs."""

from __future__ import annotations

import copy

import pytest
import torch

from matbench.fused import available, fuse
from matbench.runtime import ModelRunner, new_cache


def test_fused_modules_give_the_same_logits(tiny):
    # aot_eager traces and runs the same graph as inductor without generating code (fast, any
    # machine); the GPU path differs only in the backend that turns the graph into kernels.
    model = copy.deepcopy(tiny.model)
    layers = tiny.text_config.num_hidden_layers
    n = fuse(model, backend="aot_eager")
    norms = sum(type(m).__name__.endswith("RMSNorm") for m in model.modules())
    assert n == norms + layers  # every norm and one MLP per layer
    assert norms >= 2 * layers + 1
    ids = torch.randint(5, 100, (2, 9))
    pos = torch.arange(9).repeat(2, 1) * 3  # gaps
    valid = torch.ones(2, 9, dtype=torch.bool)
    out = []
    for m in (tiny.model, model):
        runner = ModelRunner(m, tiny.text_config)
        out.append(runner.forward(ids, pos, new_cache(), query_coords=pos, key_coords=pos, key_valid=valid,
                                  logits_to_keep=0))
    assert torch.allclose(out[0], out[1], atol=1e-5)
    assert fuse(model, backend="aot_eager") == 0  # already fused: not wrapped twice


@pytest.mark.parametrize("device", ["cpu", "mps"])
def test_fusing_is_for_cuda_only(device):
    assert not available(device)


def test_fused_kernels_setting_is_checked():
    from matbench.errors import MatbenchError
    from matbench.fused import resolve

    assert resolve("auto", "cpu") is False and resolve("off", "cuda") is False
    with pytest.raises(MatbenchError, match="--fused-kernels on needs a CUDA device and Triton"):
        resolve("on", "cpu")
    with pytest.raises(MatbenchError, match="unknown --fused-kernels 'yes'"):
        resolve("yes", "cpu")


def test_cpu_runs_record_no_fused_kernels(tiny_llama):
    assert tiny_llama.fused_kernels is False and "fused_kernels" not in tiny_llama.describe()
