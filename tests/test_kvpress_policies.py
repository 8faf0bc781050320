"""matbench's scoring policies and kvpress policies keep exactly the rows kvpress's presses keep.

kvpress is driven here as kvpress drives itself: its own `forward_hook` runs after every
attention module of a plain prefill, on the layer's real attention input, keys and values, and the
rows it leaves in the cache (found there by brute force) or does not mask are the rows it keeps.
matbench's policy scores the same context through its own observation forward. The models run in float64 so that no two rows tie within rounding. CI
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
from matbench.engine.policies.kvpress_calls import OWN_BUDGET, REFUSED
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


def _typed_rotary(rotary, kind, x, ids):
    return rotary(x, ids, kind)


def member_rows(loaded, ids: torch.Tensor) -> tuple[MemberLayout, EventCache]:
    """A plain prefill of `ids` as the engine holds a member: its layout (no header) and rows."""
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
    return MemberLayout(tuple(ids[0].tolist()), tuple(range(total)), (0, 0), ()), rows


def matbench_kept(loaded, ids: torch.Tensor, spec: str, question: tuple[int, ...] = ()) -> tuple[torch.Tensor, object]:
    """`[L, H_kv, T]` bool: the rows matbench's policy keeps of the same context (no header),
    scored with `question` appended where the policy is question-aware."""
    engine = PairEngine(loaded)
    member, rows = member_rows(loaded, ids)
    policy = parse_policy(spec)
    scores = policy.layer_scores(member, rows, SelectionContext(engine.runner, question=question))
    return policy.allocate(scores, policy.layer_budgets(ids.shape[1], scores.shape[0])).cpu(), policy


def _kept_text(kept) -> str:
    """A policy's choice (slots, or a KeptRows with its per-head bits) as comparable text."""
    return str((kept.slots, kept.heads.tolist())) if hasattr(kept, "heads") else str(kept)


@pytest.mark.parametrize("ratio", [0.5, 0.875])
@pytest.mark.parametrize("spec", sorted(BOTH))
def test_each_shared_policy_keeps_exactly_kvpress_rows(tiny, spec, ratio):
    press_name, kwargs = BOTH[spec]
    if press_name == "AdaKVPress":
        press = find_press(press_name)(find_press("KnormPress")(compression_ratio=ratio), **kwargs)
    else:
        press = find_press(press_name)(compression_ratio=ratio, **kwargs)
    # Observed attention reads the eager kernel's weights; AdaKV refuses eager.
    loaded = _double(tiny, "eager" if press_name == "ObservedAttentionPress" else "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(5))
    theirs = kvpress_hook_kept(loaded.model, ids, press)
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
        via_adapter, kvpress_hook_kept(loaded.model, ids, find_press("SnapKVPress")(0.5, window_size=32))
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


def kvpress_hook_kept(model, ids: torch.Tensor, press) -> torch.Tensor:
    """`[L, H_kv, T]` bool: the rows kvpress keeps of a plain prefill, its own `forward_hook` run
    after every attention module (with the keywords kvpress 0.5 reads: `past_key_values`,
    `cache_position`), each surviving row found among the layer's rows by brute force, masked
    rows (`masked_key_indices`) dropped. Random draws are seeded with the layer index."""
    kept: dict[int, torch.Tensor] = {}

    def hook(module, args, kwargs, output):
        cache = kwargs["cache"] if kwargs.get("cache") is not None else kwargs["past_key_values"]
        layer = cache.layers[module.layer_idx]
        keys, values = layer.keys.clone(), layer.values.clone()
        total = keys.shape[2]
        module.masked_key_indices = None
        torch.manual_seed(module.layer_idx)
        press.forward_hook(
            module, args, {**kwargs, "past_key_values": cache, "cache_position": torch.arange(total)}, output
        )
        heads = keys.shape[1]
        where = torch.full((heads, layer.keys.shape[2]), -1)
        for h in range(heads):
            for j in range(layer.keys.shape[2]):
                hits = (keys[0, h] == layer.keys[0, h, j]).all(-1) & (values[0, h] == layer.values[0, h, j]).all(-1)
                assert int(hits.sum()) == 1, f"layer {module.layer_idx} head {h}: row {j} is not one prefill row"
                where[h, j] = int(hits.nonzero()[0])
        mask = torch.zeros(heads, total, dtype=torch.bool)
        for h in range(heads):
            mask[h, where[h]] = True
        if module.masked_key_indices is not None:
            _, hs, slots = module.masked_key_indices
            for h, slot in zip(hs.tolist(), slots.tolist()):
                mask[h, where[h, slot]] = False
        del module.masked_key_indices
        kept[module.layer_idx] = mask

    layers = _prefill_with_hook(model, ids, hook)
    return torch.stack([kept[i] for i in range(layers)])


def _prefill_with_hook(model, ids: torch.Tensor, hook) -> int:
    """A plain prefill of `ids` with `hook` after every attention module, each module given the
    `rotary_emb` kvpress's context manager sets; the number of attention layers."""
    from transformers import DynamicCache

    decoder = model.get_decoder()
    modules = [m for m in decoder.modules() if type(m).__name__.endswith("Attention") and hasattr(m, "layer_idx")]
    handles = [m.register_forward_hook(hook, with_kwargs=True) for m in modules]
    _with_rotary(decoder, modules, model)
    try:
        with torch.no_grad():
            model(input_ids=ids, use_cache=True, **{cache_keyword(model): DynamicCache()})
    finally:
        for h in handles:
            h.remove()
        for m in modules:
            object.__delattr__(m, "rotary_emb")
    return len(modules)


def _with_rotary(decoder, modules, model) -> None:
    """What kvpress's context manager sets on each attention module (`rotary_emb`); Gemma 3's
    rotary takes the layer type, which kvpress does not pass."""
    import inspect

    typed = "layer_type" in inspect.signature(decoder.rotary_emb.forward).parameters and model.config.layer_types
    for m in modules:
        rotary = decoder.rotary_emb
        if typed:
            rotary = functools.partial(_typed_rotary, decoder.rotary_emb, typed[m.layer_idx])
        object.__setattr__(m, "rotary_emb", rotary)


def _press(text: str, ratio: float | None):
    """The press `text` spells, built from kvpress's classes directly, at `ratio`."""
    from matbench.engine.policies.kvpress_calls import PressCall

    press = PressCall.parse(text).build()
    if ratio is not None:
        press.compression_ratio = ratio
    return press


# Presses driven through their own hook (or scored, for the plain scorers), each against the rows
# kvpress keeps itself; None: the press keeps its own budget (no @ratio).
HOOKED = {
    "AdaKVPress(press=KnormPress())": 0.5,
    "AdaKVPress(alpha_safeguard=0.1, press=SnapKVPress(window_size=16))": 0.75,
    "CriticalKVPress(press=KnormPress())": 0.5,
    "CriticalAdaKVPress(press=KeyDiffPress())": 0.5,
    "ChunkPress(chunk_length=64, press=KnormPress())": 0.5,
    "ChunkKVPress(chunk_length=20, press=KnormPress())": 0.5,
    "EntropyGatedChunkKVPress(press=KeyDiffPress())": 0.75,
    "BlockPress(block_size=64, press=KeyDiffPress())": 0.5,
    "PyramidKVPress(window_size=16)": 0.5,
    "CURPress()": 0.5,
    "CapPress()": 0.5,
    "LagKVPress(lag_size=16)": 0.5,
    "LeverageScorePress()": 0.5,
    "NonCausalAttnPress()": 0.5,
    "CompactorPress()": 0.5,
    "ComposedPress(presses=[StreamingLLMPress(compression_ratio=0.25), KnormPress(compression_ratio=0.5)])": None,
    "DMSPress(press=RandomPress(seed=3), sliding_window_size=32, threshold=0.5)": None,
    "SimLayerKVPress(lazy_threshold=0.0, n_initial=8, n_last=1, n_recent=32)": None,
}


@pytest.mark.parametrize("text", sorted(HOOKED))
def test_every_supported_press_keeps_exactly_the_rows_kvpress_keeps(tiny, text):
    """Per layer and KV head, the rows matbench serves for `kvpress:PRESS` equal the rows kvpress
    leaves in the cache of a plain prefill (or does not mask), for wrappers, per-head and
    per-layer budgets, chunked and masking presses and chains alike."""
    ratio = HOOKED[text]
    loaded = _double(tiny, "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(11))
    theirs = kvpress_hook_kept(loaded.model, ids, _press(text, ratio))
    spec = f"kvpress:{text}" + (f"@{ratio}" if ratio is not None else "")
    ours, policy = matbench_kept(loaded, ids, spec)
    assert parse_policy(policy.spec) == policy  # the spec rebuilds the policy
    assert ours.shape == theirs.shape
    assert torch.equal(ours, theirs), f"{text}: {(ours != theirs).sum().item()} rows differ"
    assert 0 < int(theirs.sum()) < theirs.numel()  # the press dropped rows and kept some


def test_per_layer_ratios_keep_exactly_kvpress_rows(tiny_llama):
    layers = tiny_llama.model.config.num_hidden_layers
    ratios = [round(0.2 + 0.6 * i / max(1, layers - 1), 2) for i in range(layers)]
    text = f"PerLayerCompressionPress(compression_ratios={ratios}, press=KnormPress())"
    loaded = _double(tiny_llama, "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(12))
    theirs = kvpress_hook_kept(loaded.model, ids, _press(text, None))
    ours, _ = matbench_kept(loaded, ids, f"kvpress:{text}")
    assert torch.equal(ours, theirs)
    per_layer = theirs.sum(dim=(1, 2)).tolist()
    assert len(set(per_layer)) == layers > 1  # every layer kept its own count


@pytest.mark.parametrize(
    "text", ["AdaKVPress(press=SnapKVPress(window_size=8))", "ChunkKVPress(press=SnapKVPress(window_size=8))"]
)
def test_a_hooked_press_with_the_question_keeps_kvpress_rows_of_context_and_question(tiny_llama, text):
    """Query-aware: the press compresses the context with the question after it, as kvpress's
    pipeline does; matbench serves the context's rows the press kept (the question is asked
    again), and they differ from the question-agnostic choice."""
    loaded = _double(tiny_llama, "sdpa")
    ids = torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(13))
    question = torch.randint(0, 49152, (1, 12), generator=torch.Generator().manual_seed(14))
    theirs = kvpress_hook_kept(loaded.model, torch.cat([ids, question], 1), _press(text, 0.5))[..., :CONTEXT]
    inner = text[:-1] + (", " if not text.endswith("()") else "")
    ours, policy = matbench_kept(loaded, ids, f"kvpress:{inner}question=True)@0.5", tuple(question[0].tolist()))
    assert policy.question_aware and torch.equal(ours, theirs)
    agnostic, _ = matbench_kept(loaded, ids, f"kvpress:{text}@0.5")
    assert int((ours != agnostic).sum()) > 0


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_press_matbench_does_not_drive_is_refused_in_one_line_with_its_reason(name):
    from matbench.errors import MatbenchError

    with pytest.raises(MatbenchError, match=rf"^matbench does not audit kvpress {name}: it[s ][^\n]+$"):
        parse_policy(f"kvpress:{name}()@0.5")
    with pytest.raises(MatbenchError, match=rf"^matbench does not audit kvpress {name}: "):
        parse_policy(f"kvpress:AdaKVPress(press={name}())@0.5")  # nested too


def test_press_calls_errors_and_budgets_are_one_line():
    from matbench.engine.policies.setting import PolicySetting
    from matbench.errors import MatbenchError

    own = {
        "ComposedPress": "ComposedPress(presses=[KnormPress(compression_ratio=0.5)])",
        "PerLayerCompressionPress": "PerLayerCompressionPress(compression_ratios=[0.5], press=KnormPress())",
        "DMSPress": "DMSPress(press=KnormPress())",
        "SimLayerKVPress": "SimLayerKVPress()",
    }
    assert set(own) == set(OWN_BUDGET)
    for text in own.values():
        policy = parse_policy(f"kvpress:{text}")
        assert not policy.budgeted and policy.spec == f"kvpress:{text}"
        with pytest.raises(MatbenchError, match=r"^policy 'kvpress' keeps what it declares and takes no budget"):
            parse_policy(f"kvpress:{text}@0.5")
    with pytest.raises(MatbenchError, match=r"^kvpress DMSPress takes no compression_ratio: threshold= "):
        parse_policy("kvpress:DMSPress(press=KnormPress(), compression_ratio=0.5)")
    with pytest.raises(MatbenchError, match=r"^kvpress press arguments are keywords"):
        parse_policy("kvpress:AdaKVPress(KnormPress())@0.5")
    with pytest.raises(MatbenchError, match=r"^kvpress press arguments must be literals or presses"):
        parse_policy("kvpress:SnapKVPress(window_size=x)@0.5")
    with pytest.raises(MatbenchError, match=r"^kvpress AdaKVPress\(press=1\) cannot be built: "):
        parse_policy("kvpress:AdaKVPress(press=1)@0.5")
    with pytest.raises(MatbenchError, match=r"^ScorerPress is kvpress's base class"):
        parse_policy("kvpress:ScorerPress()@0.5")
    with pytest.raises(MatbenchError, match=r"^kvpress has no press 'SnapPress'"):
        parse_policy("kvpress:AdaKVPress(press=SnapPress())@0.5")
    hooked, scored = (
        parse_policy("kvpress:AdaKVPress(press=KnormPress())@0.5"),
        parse_policy("kvpress:KnormPress()@0.5"),
    )
    assert hooked.spec == "kvpress:AdaKVPress(press=KnormPress())@0.5" and parse_policy(hooked.spec) == hooked
    assert scored.honours_banned and not hooked.honours_banned
    PolicySetting(scored, "evicted")
    with pytest.raises(MatbenchError, match=r"chooses its rows in its own kvpress hook.*--source-mode evicted"):
        PolicySetting(hooked, "evicted")
    composed = parse_policy("kvpress:ComposedPress(presses=[KnormPress(compression_ratio=0.5), RandomPress()])")
    assert composed.spec == "kvpress:ComposedPress(presses=[KnormPress(compression_ratio=0.5), RandomPress()])"


def test_rows_a_press_changed_are_refused_and_kept_rows_are_found_exactly():
    from matbench.engine.policies.kvpress_driver import find_rows
    from matbench.errors import MatbenchError

    g = torch.Generator().manual_seed(0)
    keys, values = torch.randn(2, 50, 8, generator=g), torch.randn(2, 50, 8, generator=g)
    picks = torch.stack([torch.randperm(50, generator=g)[:20] for _ in range(2)])
    gather = picks[..., None].expand(-1, -1, 8)
    assert torch.equal(find_rows(keys, values, keys.gather(1, gather), values.gather(1, gather), "P"), picks)
    merged = values.gather(1, gather).clone()
    merged[1, 3] += 1e-6  # one value folded into a kept row
    with pytest.raises(MatbenchError, match=r"^kvpress P serves rows that are not the prefill's"):
        find_rows(keys, values, keys.gather(1, gather), merged, "P")
    twice = torch.cat([gather[:, :1], gather], 1)
    with pytest.raises(MatbenchError, match=r"^kvpress P kept one row twice"):
        find_rows(keys, values, keys.gather(1, twice), values.gather(1, twice), "P")


def test_every_press_the_docs_call_supported_is_tested_against_kvpress():
    """The presses docs/kvpress.md lists as scored or hooked are exactly those the equality tests
    above run: a press a newer kvpress adds fails here until it is tested or refused."""
    import re

    from matbench.engine.policies.kvpress_calls import press_table

    tested = {BOTH[s][0] for s in BOTH} | {re.match(r"\w+", t).group() for t in HOOKED} | {"PerLayerCompressionPress"}
    tested -= {"ObservedAttentionPress"}  # compared with the built-in h2o; refused as a kvpress policy
    supported = {row.name for row in press_table() if row.how != "refused"}
    assert supported == tested


def test_every_kvpress_press_and_budget_of_a_member_shares_one_observation(tiny_llama, monkeypatch):
    """Scored and hooked presses at several budgets, scored with one memo (one pair): the member
    is observed by one forward, and each press keeps the rows it keeps observed on its own."""
    from matbench.engine.policies import observe as observe_module

    loaded = _double(tiny_llama, "sdpa")
    engine = PairEngine(loaded)
    member, rows = member_rows(
        loaded, torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(15))
    )
    specs = [f"kvpress:{p}@{r}" for p in ("SnapKVPress()", "AdaKVPress(press=KnormPress())") for r in (0.5, 0.75)]
    alone = [parse_policy(s).keep(None, member, rows, SelectionContext(engine.runner)) for s in specs]
    calls = []
    real = observe_module.observe
    monkeypatch.setattr(observe_module, "observe", lambda *a, **k: calls.append(1) or real(*a, **k))
    shared = SelectionContext(engine.runner)
    together = [parse_policy(s).keep(None, member, rows, shared) for s in specs]
    assert len(calls) == 1  # one observation forward for four press x budget settings
    texts = [_kept_text(k) for k in together]
    assert texts == [_kept_text(k) for k in alone] and len(set(texts)) == 4


def test_an_observation_too_large_to_hold_is_run_by_each_policy(tiny_llama, monkeypatch):
    """Over MAX_SHARED_VIEW_BYTES the views are not kept: each press of a pair observes on its
    own, and keeps the rows it keeps with the views shared."""
    from matbench.engine.policies import observe as observe_module
    from matbench.engine.policies import scored

    loaded = _double(tiny_llama, "sdpa")
    engine = PairEngine(loaded)
    member, rows = member_rows(
        loaded, torch.randint(0, 49152, (1, CONTEXT), generator=torch.Generator().manual_seed(16))
    )
    specs = ["kvpress:SnapKVPress()@0.5", "kvpress:ChunkKVPress(press=KnormPress())@0.5"]
    calls = []
    real = observe_module.observe
    monkeypatch.setattr(observe_module, "observe", lambda *a, **k: calls.append(1) or real(*a, **k))
    context = SelectionContext(engine.runner)
    shared = [parse_policy(s).keep(None, member, rows, context) for s in specs]
    assert len(calls) == 1
    monkeypatch.setattr(scored, "MAX_SHARED_VIEW_BYTES", 0)
    context = SelectionContext(engine.runner)
    alone = [parse_policy(s).keep(None, member, rows, context) for s in specs]
    assert len(calls) == 3 and [_kept_text(k) for k in alone] == [_kept_text(k) for k in shared]
