"""`sdpa_grouped` (matbench.attention) is the same attention as transformers' eager and sdpa:
same records within float32 rounding, every gate passing, on all three tiny architectures."""

from __future__ import annotations

import copy

import pytest
import torch

from matbench.attention import grouped_sdpa_forward
from matbench.models import resolve_attn
from tests.conftest import engine_for, gated_records


def _with_attn(loaded, impl):
    model = copy.deepcopy(loaded.model)
    model.config._attn_implementation = resolve_attn(impl)
    return type(loaded)(model, loaded.tokenizer, loaded.source, loaded.dtype, loaded.device)


def test_grouped_attention_equals_repeated_heads():
    torch.manual_seed(0)
    query, key, value = torch.randn(3, 8, 5, 16), torch.randn(3, 2, 9, 16), torch.randn(3, 2, 9, 16)
    mask = torch.rand(3, 1, 5, 9) > 0.3
    mask[..., 0] = True  # every query sees at least one key
    out, _ = grouped_sdpa_forward(torch.nn.Module(), query, key, value, mask, scaling=0.25)
    repeated = [t.repeat_interleave(4, dim=1) for t in (key, value)]  # head h reads KV head h // 4
    ref = torch.nn.functional.scaled_dot_product_attention(query, *repeated, attn_mask=mask, scale=0.25)
    assert out.shape == (3, 5, 8, 16)
    assert torch.allclose(out, ref.transpose(1, 2), atol=1e-6)
    causal, _ = grouped_sdpa_forward(torch.nn.Module(), query, key, value, None)
    lower_right = torch.ones(5, 9, dtype=torch.bool).tril(4)
    ref = torch.nn.functional.scaled_dot_product_attention(query, *repeated, attn_mask=lower_right)
    assert torch.allclose(causal, ref.transpose(1, 2), atol=1e-6)


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_sdpa_grouped_gives_the_records_of_eager(tiny, pairs, serving, monkeypatch):
    from transformers import AttentionInterface

    calls = []

    def counted(*args, **kwargs):
        calls.append(args[1].shape)
        return grouped_sdpa_forward(*args, **kwargs)

    resolve_attn("sdpa_grouped")
    monkeypatch.setitem(AttentionInterface._global_mapping, "sdpa_grouped", counted)
    grouped = gated_records(_with_attn(tiny, "sdpa_grouped"), pairs, serving=serving)
    assert len(calls) > 0 and len(calls) % tiny.text_config.num_hidden_layers == 0  # it really ran
    monkeypatch.undo()
    eager_engine = engine_for(_with_attn(tiny, "eager"), serving=serving)
    for pair, record in zip(pairs, grouped):
        ref = eager_engine.score(pair, *eager_engine.prepare(pair))
        for arm, entry in record["arms"].items():
            assert entry["class"] == ref["arms"][arm]["class"]
            for got, want in zip(entry["probe_logp"], ref["arms"][arm]["probe_logp"]):
                assert got == pytest.approx(want, abs=1e-4)


def test_unknown_attention_is_one_line():
    from matbench.errors import MatbenchError

    with pytest.raises(MatbenchError, match="unknown attention implementation 'flash'"):
        resolve_attn("flash")
