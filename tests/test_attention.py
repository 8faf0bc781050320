"""`sdpa_grouped` (matbench.attention) is the same attention as transformers' eager and sdpa:
same records within float32 rounding, every gate passing, on all three tiny architectures."""

from __future__ import annotations

import copy

import pytest
import torch

from matbench.kernels.attention import grouped_sdpa_forward
from matbench.models.loading import resolve_attn
from tests.helpers import engine_for, gated_records


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
    square = key[:, :, :5], value[:, :, :5]  # no past: the causal kernel with grouped heads
    causal, _ = grouped_sdpa_forward(torch.nn.Module(), query, *square, None, scaling=0.25)
    ref = torch.nn.functional.scaled_dot_product_attention(
        query,
        *[t.repeat_interleave(4, dim=1) for t in square],
        attn_mask=torch.ones(5, 5, dtype=torch.bool).tril(),
        scale=0.25,
    )
    assert torch.allclose(causal, ref.transpose(1, 2), atol=1e-6)


@pytest.mark.parametrize("impl", ["sdpa_grouped", "sdpa", "eager"])
def test_causal_forward_equals_the_explicit_mask(tiny, impl, monkeypatch):
    """`causal=True` (no past, right padding, position gaps) gives the rows and logits of the
    explicit coordinate mask; on full-attention models the mask is really left out."""
    from matbench.engine.runtime import ModelRunner, cache_rows, new_cache

    loaded = _with_attn(tiny, impl)
    runner = ModelRunner(loaded.model, loaded.text_config)
    torch.manual_seed(1)
    ids = torch.randint(5, 100, (3, 12))
    pos = torch.stack([torch.arange(12) * 2, torch.arange(12) + 40, torch.arange(12)])  # gaps, offsets
    valid = torch.ones(3, 12, dtype=torch.bool)
    valid[1, 9:], valid[2, 5:] = False, False  # right padding at the row's last coordinate + 1
    pos[1, 9:], pos[2, 5:] = pos[1, 8] + 1, pos[2, 4] + 1
    built = []
    original = ModelRunner.build_masks
    monkeypatch.setattr(ModelRunner, "build_masks", lambda self, *a: built.append(1) or original(self, *a))
    out = {}
    for causal in (True, False):
        cache = new_cache()
        logits = runner.forward(
            ids, pos, cache, query_coords=pos, key_coords=pos, key_valid=valid, logits_to_keep=0, causal=causal
        )
        out[causal] = logits, cache_rows(cache)
    assert len(built) == (2 if any(runner.windows) else 1)  # sliding windows keep explicit masks
    (got, (gk, gv)), (ref, (rk, rv)) = out[True], out[False]
    for b, n in enumerate((12, 9, 5)):  # real tokens only: padded outputs are never read
        assert torch.allclose(got[b, :n], ref[b, :n], atol=1e-5)
        for x, y in zip(gk + gv, rk + rv):
            assert torch.allclose(x[b, :, :n], y[b, :, :n], atol=1e-5)
    assert not runner.causal_past  # the CPU: every mask after a past is explicit
    with pytest.raises(ValueError, match="after a past needs causal_past"):
        runner.forward(
            ids[:, :1],
            pos[:, :1],
            cache,
            query_coords=pos[:, :1],
            key_coords=torch.cat([pos, pos[:, :1]], 1),
            key_valid=torch.ones(3, 13, dtype=torch.bool),
            causal=True,
        )


@pytest.mark.parametrize("tiny", ["llama", "qwen3"], indirect=True)  # no sliding windows
def test_causal_after_a_past_equals_the_explicit_mask(tiny, monkeypatch):
    """A chunk after a contiguous past with `causal=True`: under `sdpa_grouped` the mask is left
    out (the attention sees None with a past) and rows and logits equal the explicit mask's."""
    from transformers import AttentionInterface

    from matbench.engine.runtime import ModelRunner, cache_rows, new_cache

    loaded = _with_attn(tiny, "sdpa_grouped")
    runner = ModelRunner(loaded.model, loaded.text_config)
    runner.causal_past = True  # as on a GPU (where flash takes the mask); the CPU falls back to the explicit one
    seen = []

    def spy(module, query, key, *args, **kwargs):
        seen.append(
            (args[1] if len(args) > 1 else kwargs.get("attention_mask")) is None and key.shape[2] > query.shape[2]
        )
        return grouped_sdpa_forward(module, query, key, *args, **kwargs)

    monkeypatch.setitem(AttentionInterface._global_mapping, "sdpa_grouped", spy)
    torch.manual_seed(2)
    ids = torch.randint(5, 100, (2, 14))
    pos = torch.stack([torch.arange(14) * 3, torch.arange(14) + 7])  # gaps, an offset
    out = {}
    for causal in (True, False):
        cache = new_cache()
        kw = {"key_valid": torch.ones(2, 6, dtype=torch.bool), "logits_to_keep": 0}
        runner.forward(ids[:, :6], pos[:, :6], cache, query_coords=pos[:, :6], key_coords=pos[:, :6], **kw)
        seen.clear()
        logits = runner.forward(
            ids[:, 6:],
            pos[:, 6:],
            cache,
            query_coords=pos[:, 6:],
            key_coords=pos,
            key_valid=torch.ones(2, 14, dtype=torch.bool),
            logits_to_keep=0,
            causal=causal,
        )
        assert seen == [causal] * tiny.text_config.num_hidden_layers  # the mask really was left out
        out[causal] = logits, cache_rows(cache)
    (got, (gk, gv)), (ref, (rk, rv)) = out[True], out[False]
    assert torch.allclose(got, ref, atol=1e-5)
    for x, y in zip(gk + gv, rk + rv):
        assert torch.allclose(x, y, atol=1e-5)


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
        for arm, entry in record.arms.items():
            assert entry.outcome == ref.arms[arm].outcome
            for got, want in zip(entry.probe_logp, ref.arms[arm].probe_logp):
                assert got == pytest.approx(want, abs=1e-4)


def test_unknown_attention_is_one_line():
    from matbench.errors import MatbenchError

    with pytest.raises(MatbenchError, match="unknown attention implementation 'flash'"):
        resolve_attn("flash")


def test_default_attention_is_grouped_sdpa_unless_logits_are_soft_capped():
    """The same on every device: the choice reads the model's config only."""
    from transformers import Gemma2Config

    from matbench.models.loading import default_attn
    from tests.helpers import tiny_config

    assert default_attn(tiny_config("llama")) == "sdpa_grouped"
    assert default_attn(tiny_config("gemma3")) == "sdpa_grouped"
    capped = Gemma2Config(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
    assert capped.attn_logit_softcapping  # Gemma 2 soft-caps by default: SDPA cannot apply it
    assert default_attn(capped) == "eager"
