"""Batch invariance: serving several pairs, arms and readouts together changes no outcome."""

from __future__ import annotations

import pytest

from matbench.engine.pair_engine import PairEngine
from matbench.engine.runtime import ModelRunner
from matbench.models.windows import layer_windows
from tests.helpers import tiny_config


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_batched_equals_one_at_a_time(tiny, pairs, serving):
    engine = PairEngine(tiny)
    items = [(p, *engine.prepare(p)) for p in pairs]
    combos = [("probe", serving), ("short", serving)]
    together = engine.score_many(items, combos)
    for item, batched in zip(items, together):
        alone = engine.score_many([item], combos)[0]
        for combo in combos:
            for arm, entry in batched[combo].arms.items():
                ref = alone[combo].arms[arm]
                assert entry.outcome == ref.outcome and entry.answers == ref.answers
                assert entry.shift == pytest.approx(ref.shift, abs=1e-4)
        # The probe is shared by every readout of a serving mode.
        assert batched[combos[0]].arms["root"].shift == batched[combos[1]].arms["root"].shift


def test_chunked_prefill_matches_one_shot(tiny_gemma, pairs):
    whole = PairEngine(tiny_gemma).run_pair(pairs[0])
    chunked = PairEngine(tiny_gemma, chunk_size=50).run_pair(pairs[0])
    for arm, entry in whole.arms.items():
        for got, ref in zip(chunked.arms[arm].probe_logp, entry.probe_logp):
            assert got == pytest.approx(ref, abs=1e-4)


def test_a_prefill_too_long_to_attend_at_once_is_chunked_by_its_memory():
    from matbench.engine.memory import ATTENTION_TRANSIENT_BYTES, CHUNK_STEP, attention_transient, prefill_chunk

    # Qwen3-8B under eager, one 26.5k-token member: the float32 softmax alone is 83.7 GiB (the
    # allocation a default harvest run failed on); with the bf16 scores and the mask, 170 GiB.
    assert attention_transient(1, 26_500, 26_500, 32, 2, True, 1) == 26_500**2 * (32 * (2 * 2 + 4) + 2 + 2)
    chunk = prefill_chunk(1, 26_500, 0, 32, 2, eager=True)
    assert chunk is not None and chunk % CHUNK_STEP == 0
    assert attention_transient(1, chunk, 26_500, 32, 2, True, 1) <= ATTENTION_TRANSIENT_BYTES
    assert attention_transient(1, chunk + CHUNK_STEP, 26_500, 32, 2, True, 1) > ATTENTION_TRANSIENT_BYTES
    # Boolean masks alone (SDPA): the same member in one forward; a 66k-token one in chunks.
    assert prefill_chunk(1, 26_500, 0, 32, 2, eager=False) is None
    assert prefill_chunk(1, 66_000, 0, 32, 2, eager=False) == 32_512  # 2 bytes a mask element
    # A suffix after a long past counts the past's keys; never below one step.
    assert prefill_chunk(1, 300, 10**9, 32, 2, eager=True) == CHUNK_STEP
    assert prefill_chunk(1, 200, 10**9, 32, 2, eager=True) is None  # one step covers it


def test_the_cpu_prefills_in_one_forward(tiny_gemma, monkeypatch):
    """Runs on the CPU keep their numbers: no automatic chunks there, however long the prefill."""
    from matbench.engine import memory
    from matbench.engine.runtime import ModelRunner

    runner = ModelRunner(tiny_gemma.model, tiny_gemma.text_config)
    monkeypatch.setattr(memory, "ATTENTION_TRANSIENT_BYTES", 1)
    assert runner.prefill_chunk(4, 10_000, 0) is None


def test_automatic_chunks_give_the_chunked_prefill(tiny_gemma, pairs, monkeypatch):
    """Where the runner chooses chunks (a GPU's memory), the prefill is `--chunk-size`'s."""
    from matbench.engine.runtime import ModelRunner

    asked = []
    monkeypatch.setattr(ModelRunner, "prefill_chunk", lambda self, rows, width, past: asked.append(width) or 50)
    auto = PairEngine(tiny_gemma).run_pair(pairs[0])
    assert asked  # it fired
    monkeypatch.undo()
    chunked = PairEngine(tiny_gemma, chunk_size=50).run_pair(pairs[0])
    for arm, entry in chunked.arms.items():
        assert auto.arms[arm].probe_logp == entry.probe_logp


def test_layer_windows():
    assert layer_windows(tiny_config("llama")) == [None, None]
    assert layer_windows(tiny_config("gemma3")) == [64, 64, 64, None]


def test_masks_follow_coordinates(tiny_gemma):
    import torch

    runner = ModelRunner(tiny_gemma.model, tiny_gemma.text_config)
    masks = runner.build_masks(
        torch.tensor([[100]]),
        torch.tensor([[0, 36, 37, 99, 100, 101]]),
        torch.tensor([[True, True, True, False, True, True]]),
    )
    visible = {name: (m[0, 0, 0] if m.dtype == torch.bool else m[0, 0, 0] == 0).tolist() for name, m in masks.items()}
    assert visible["full_attention"] == [True, True, True, False, True, False]
    assert visible["sliding_attention"] == [False, False, True, False, True, False]  # 100 - 37 < 64


def test_logit_readout_is_the_raw_first_token_logit_after_the_question(tiny_llama, pairs):
    """kv_harvnative's readout: the query ends at the chat tail (no "Answer:"), and the answer is
    the candidate whose first token of " W" has the highest raw logit there."""
    from matbench.engine.probe import first_token_answers, first_token_ids
    from matbench.engine.serving import SERVING, ServeRequest
    from matbench.protocol.readouts import READOUTS

    engine = PairEngine(tiny_llama)
    pair, layout, caches = engine.prepare_many(pairs[:1])[0]
    record = engine.score_many([(pair, layout, caches)], [("logit", "compact")])[0][("logit", "compact")]
    readout = READOUTS.get("logit")
    arm = pair.arms[0]
    ids = engine.query_ids(pair, arm, readout)
    assert engine.renderer.arm_query(pair, arm, readout).endswith(engine.renderer.tail)  # no "Answer:" prefix
    _, logits = SERVING["compact"](engine.runner, [ServeRequest(caches[m], arm.served, ids) for m in (0, 1)])
    menu = pair.arm_menu(arm)
    firsts = [engine.renderer.ids(" " + w)[0] for w in menu]
    expected = [menu[int(row[firsts].argmax())] for row in logits.float()]
    assert (
        list(record.arms[arm.name].answers)
        == expected
        == first_token_answers(logits, menu, first_token_ids(menu, engine.renderer.ids))
    )
    assert record.arms[arm.name].paper_answers == record.arms[arm.name].answers  # the paper's own reading
    assert record.arms[arm.name].texts is None


def test_an_arms_token_budget_cuts_its_generation_exactly(tiny_llama, pairs):
    """An arm with the paper's own budget (e.g. 8 tokens for recognition) answers within it under
    any generating readout: its text is the first `budget` tokens of the unbudgeted generation."""
    import dataclasses

    engine = PairEngine(tiny_llama)
    pair = pairs[0]
    budgeted = dataclasses.replace(
        pair, arms=tuple(dataclasses.replace(a, budget=3) if a.name == "root" else a for a in pair.arms)
    )
    combo = ("short", "compact")
    free = engine.score_many([(pair, *engine.prepare(pair))], [combo])[0][combo]
    cut = engine.score_many([(budgeted, *engine.prepare(budgeted))], [combo])[0][combo]
    for m in (0, 1):
        short, full = cut.arms["root"].texts[m], free.arms["root"].texts[m]
        assert full.startswith(short) and len(short) < len(full)
        assert cut.arms["chain"].texts[m] == free.arms["chain"].texts[m]  # other arms keep the readout's 12


def test_gate_a_is_not_applicable_when_no_member_of_a_sliding_model_is_gap_free(tiny_gemma):
    """transformers measures windows in slots, the global prefill in positions: on a sliding-window
    model gate A needs a member without a position gap. Trigger's bank-wide budgets leave gaps in
    both members, so the gate says n/a instead of failing (or crashing on no member)."""
    from matbench.data_gen import SUITES
    from matbench.engine.gates import gate_a

    engine = PairEngine(tiny_gemma)
    pair = SUITES.get("trigger").generate(0, 1)[0]
    layout, caches = engine.prepare(pair)
    assert not any(m.positions[-1] - m.positions[0] + 1 == len(m.positions) for m in layout.members)
    result = gate_a(engine, pair, layout, caches)
    assert (result.passed, result.max_abs_diff) == (True, None) and result.detail.startswith("n/a")
