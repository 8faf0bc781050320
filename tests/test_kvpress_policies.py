"""matbench's scoring policies keep exactly the rows kvpress's own scorers keep.

kvpress is driven here as kvpress drives itself: a forward hook on every attention module of a
plain prefill calls the press's `score` (or, for AdaKV, its `compress`, which leaves the pruned
rows in `masked_key_indices`) on the layer's real attention input, keys and values, and keeps the
top `compute_n_kept` rows per head. matbench's policy scores the same context through its own
observation forward. The models run in float64 so that no two rows tie within rounding. CI
installs kvpress with `--no-deps` (its metadata pins transformers<5.3); a missing kvpress fails.
"""

from __future__ import annotations

import copy
import functools
import sys

import pytest
import torch

from matbench.engine.cache import EventCache
from matbench.engine.layout import MemberLayout
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies import SelectionContext, parse_policy
from matbench.engine.policies.kvpress_adapter import find_press, press_class
from matbench.engine.runtime import cache_keyword

CONTEXT = 200  # tokens: longer than SnapKV's 64-token window and Expected Attention's sinks

# matbench policy spec -> (kvpress press class, its arguments)
BOTH = {
    "random:seed=7": ("RandomPress", {"seed": 7}),
    "streaming_llm": ("StreamingLLMPress", {}),
    "knorm": ("KnormPress", {}),
    "keydiff": ("KeyDiffPress", {}),
    "snapkv": ("SnapKVPress", {}),
    "tova": ("TOVAPress", {}),
    "h2o": ("ObservedAttentionPress", {}),
    "pyramidkv": ("PyramidKVPress", {}),
    "expected_attention": ("ExpectedAttentionPress", {}),
    "adakv:inner=knorm": ("AdaKVPress", {}),
}


def _double(loaded, attn: str):
    model = copy.deepcopy(loaded.model).double()
    model.config._attn_implementation = attn
    return type(loaded)(model, loaded.tokenizer, loaded.source, "float64", loaded.device)


def kvpress_kept(model, ids: torch.Tensor, press, ratio: float) -> torch.Tensor:
    """`[L, H_kv, T]` bool: the rows kvpress keeps in each layer and KV head of a plain prefill."""
    from kvpress.utils import compute_n_kept

    adakv = type(press).__name__ == "AdaKVPress"
    decoder = model.get_decoder()
    kept: dict[int, torch.Tensor] = {}

    def hook(module, args, kwargs, output):
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        keys, values = cache.layers[module.layer_idx].keys, cache.layers[module.layer_idx].values
        hidden, total = kwargs["hidden_states"], keys.shape[2]
        mask = torch.zeros(keys.shape[1], total, dtype=torch.bool)
        if adakv:
            press.compress(module, hidden, keys, values, output[1], kwargs)
            _, heads, rows = module.masked_key_indices
            mask[:] = True
            mask[heads, rows] = False
        else:
            scores = press.score(module, hidden, keys, values, output[1], kwargs)[0]
            n = (
                press.get_layer_budget(module, total)
                if hasattr(press, "get_layer_budget")
                else compute_n_kept(total, ratio)
            )
            mask.scatter_(-1, scores.topk(n, dim=-1).indices, True)
        kept[module.layer_idx] = mask

    modules = [m for m in decoder.modules() if type(m).__name__.endswith("Attention") and hasattr(m, "layer_idx")]
    handles = [m.register_forward_hook(hook, with_kwargs=True) for m in modules]
    import inspect

    layer_types = "layer_type" in inspect.signature(decoder.rotary_emb.forward).parameters and model.config.layer_types
    for m in modules:  # what kvpress's context manager sets (Expected Attention reads it)
        rotary = decoder.rotary_emb
        if layer_types:  # Gemma 3's rotary takes the layer type, which kvpress does not pass
            rotary = functools.partial(_typed_rotary, decoder.rotary_emb, layer_types[m.layer_idx])
        object.__setattr__(m, "rotary_emb", rotary)
    try:
        from transformers import DynamicCache

        with torch.no_grad():
            model(input_ids=ids, use_cache=True, **{cache_keyword(model): DynamicCache()})
    finally:
        for h in handles:
            h.remove()
        for m in modules:
            object.__delattr__(m, "rotary_emb")
    return torch.stack([kept[i] for i in range(len(modules))])


def _typed_rotary(rotary, kind, x, ids):
    return rotary(x, ids, kind)


def matbench_kept(loaded, ids: torch.Tensor, spec: str, question: tuple[int, ...] = ()) -> tuple[torch.Tensor, object]:
    """`[L, H_kv, T]` bool: the rows matbench's policy keeps of the same context (no header),
    scored with `question` appended where the policy is question-aware."""
    engine = PairEngine(loaded)
    from transformers import DynamicCache

    cache = DynamicCache()
    with torch.no_grad():
        loaded.model(input_ids=ids, use_cache=True, **{cache_keyword(loaded.model): cache})
    total = ids.shape[1]
    rows = EventCache(
        tuple(layer.keys for layer in cache.layers),
        tuple(layer.values for layer in cache.layers),
        torch.arange(total),
        (0, 0),
        (),
        total,
    )
    member = MemberLayout(tuple(ids[0].tolist()), tuple(range(total)), (0, 0), ())
    policy = parse_policy(spec)
    scores = policy.layer_scores(member, rows, SelectionContext(engine.runner, question=question))
    return policy.allocate(scores, policy.layer_budgets(total, scores.shape[0])).cpu(), policy


@pytest.mark.parametrize("ratio", [0.5, 0.875])
@pytest.mark.parametrize("spec", sorted(BOTH))
def test_each_shared_policy_keeps_exactly_kvpress_rows(tiny, spec, ratio):
    press_name, kwargs = BOTH[spec]
    if press_name == "AdaKVPress":
        press = find_press(press_name)(press_class("KnormPress")(compression_ratio=ratio), **kwargs)
    else:
        press = press_class(press_name)(compression_ratio=ratio, **kwargs)
    # Observed attention reads the eager kernel's weights; AdaKV refuses eager.
    loaded = _double(tiny, "eager" if press_name == "ObservedAttentionPress" else "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(5))
    theirs = kvpress_kept(loaded.model, ids, press, ratio)
    ours, _ = matbench_kept(loaded, ids, f"{spec}@{ratio}")
    assert ours.shape == theirs.shape
    assert torch.equal(ours, theirs), f"{spec}: {(ours != theirs).sum().item()} rows differ"


def test_the_kvpress_policy_keeps_its_press_rows_and_never_patches_attention(tiny_llama):
    """`kvpress:PRESS(...)` is the press's own score, and importing the press classes left every
    transformers attention function as it was (kvpress/__init__.py's patch never ran)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = {name: ALL_ATTENTION_FUNCTIONS[name] for name in ALL_ATTENTION_FUNCTIONS}
    loaded = _double(tiny_llama, "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(6))
    via_adapter, policy = matbench_kept(loaded, ids, "kvpress:SnapKVPress(window_size=32, compression_ratio=0.5)")
    assert policy.spec == "kvpress:SnapKVPress(window_size=32)@0.5"
    assert torch.equal(via_adapter, matbench_kept(loaded, ids, "snapkv:window=32@0.5")[0])
    assert torch.equal(
        via_adapter, kvpress_kept(loaded.model, ids, press_class("SnapKVPress")(0.5, window_size=32), 0.5)
    )
    assert {name: ALL_ATTENTION_FUNCTIONS[name] for name in ALL_ATTENTION_FUNCTIONS} == before
    assert "kvpress.attention_patch" not in sys.modules and not hasattr(
        sys.modules["kvpress"], "patch_attention_functions"
    )


def test_a_question_aware_kvpress_press_keeps_the_builtin_question_aware_rows(tiny_llama):
    """`question=True` in the press call is matbench's question-aware mode: the press scores the
    context with the arm's question appended, exactly as the built-in SnapKV's question mode does,
    and the rows differ from the question-agnostic press's (the question moved them)."""
    from matbench.errors import MatbenchError

    loaded = _double(tiny_llama, "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(8))
    question = tuple(torch.randint(0, 49152, (12,), generator=torch.Generator().manual_seed(9)).tolist())
    aware, policy = matbench_kept(loaded, ids, "kvpress:SnapKVPress(question=True, window_size=8)@0.5", question)
    assert policy.spec == "kvpress:SnapKVPress(window_size=8, question=True)@0.5" and policy.question
    assert parse_policy(policy.spec) == policy  # the spec rebuilds it
    assert policy.question_aware and not parse_policy("kvpress:SnapKVPress()@0.5").question_aware
    assert not parse_policy("snapkv@0.5").question_aware and not parse_policy("recent:30").question_aware
    assert torch.equal(aware, matbench_kept(loaded, ids, "snapkv:window=8,question=true@0.5", question)[0])
    agnostic = matbench_kept(loaded, ids, "kvpress:SnapKVPress(window_size=8)@0.5")[0]
    assert int((aware != agnostic).sum()) > 0
    with pytest.raises(MatbenchError, match="question-aware but was given no question"):
        matbench_kept(loaded, ids, "kvpress:SnapKVPress(question=True)@0.5")
    with pytest.raises(MatbenchError, match=r"^kvpress question= takes True or False \(got 'yes'\)$"):
        parse_policy("kvpress:SnapKVPress(question='yes')@0.5")


def test_kvpress_missing_is_one_line(monkeypatch):
    import importlib.util

    from matbench.errors import MatbenchError

    monkeypatch.delitem(sys.modules, "kvpress", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kvpress" else real(name, *a))
    with pytest.raises(MatbenchError, match=r"^the kvpress policy needs kvpress: pip install --no-deps kvpress$"):
        press_class("SnapKVPress")
