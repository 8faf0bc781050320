"""`matbench.fused`: compiled RMSNorm/MLP forwards give the model's own outputs."""

from __future__ import annotations

import copy

import pytest
import torch

from matbench.engine.runtime import ModelRunner, new_cache
from matbench.kernels.fused import fuse


def test_fused_modules_give_the_same_logits(tiny, monkeypatch):
    # aot_eager traces and runs the same graph as inductor without generating code (fast, any
    # machine); the GPU path differs only in the backend that turns the graph into kernels.
    import matbench.kernels.fused as fused_mod

    monkeypatch.setattr(fused_mod, "MIN_ELEMENTS", 0)  # tiny inputs take the compiled path too
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
        out.append(
            runner.forward(ids, pos, new_cache(), query_coords=pos, key_coords=pos, key_valid=valid, logits_to_keep=0)
        )
    assert torch.allclose(out[0], out[1], atol=1e-5)
    assert fuse(model, backend="aot_eager") == 0  # already fused: not wrapped twice


def test_small_inputs_take_the_eager_forward(tiny, monkeypatch):
    import matbench.kernels.fused as fused_mod

    model = copy.deepcopy(tiny.model)
    calls = []
    monkeypatch.setattr(fused_mod.torch, "compile", lambda fn, **kw: lambda *a, **k: calls.append(1) or fn(*a, **k))
    fuse(model)
    norm = next(m for m in model.modules() if type(m).__name__.endswith("RMSNorm"))
    width = norm.weight.shape[-1]
    small = torch.randn(2, 3, width)
    assert torch.equal(norm(small), type(norm).forward(norm, small)) and calls == []
    monkeypatch.setattr(fused_mod, "MIN_ELEMENTS", small.numel())
    assert torch.equal(norm(small), type(norm).forward(norm, small)) and calls == [1]


def test_fused_kernels_setting_is_checked():
    from matbench.errors import MatbenchError
    from matbench.kernels.fused import resolve

    assert resolve("auto", "cpu") is False and resolve("off", "cuda") is False
    with pytest.raises(MatbenchError, match="--fused-kernels on needs a CUDA device and Triton"):
        resolve("on", "cpu")
    with pytest.raises(MatbenchError, match="unknown --fused-kernels 'yes'"):
        resolve("yes", "cpu")


def test_cpu_runs_record_no_fused_kernels(tiny_llama):
    assert tiny_llama.fused_kernels is False and "fused_kernels" not in tiny_llama.describe()


def test_only_one_tensor_forwards_are_fused():
    from matbench.kernels.fused import _row_wise

    class TwoInputMLP(torch.nn.Module):
        def forward(self, hidden, routing):
            return hidden * routing

    class NormLikeRMSNorm(torch.nn.Module):
        def forward(self, hidden):
            return hidden

    assert not _row_wise(TwoInputMLP) and _row_wise(NormLikeRMSNorm)
    model = torch.nn.Sequential(TwoInputMLP(), NormLikeRMSNorm())
    assert fuse(model, backend="aot_eager") == 1


def test_fused_kernels_on_a_cpu_is_refused_before_loading(tiny_dir, tmp_path, capsys, monkeypatch):
    from tests.test_cli import eval_refused_before_loading

    argv = ["--model", str(tiny_dir), "--device", "cpu", "--fused-kernels", "on", "--output", str(tmp_path)]
    assert "--fused-kernels on needs a CUDA device and Triton" in eval_refused_before_loading(argv, monkeypatch, capsys)
