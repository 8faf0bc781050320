"""`engine.decode`: the fixed-shape decoding steps (what a CUDA graph replays) decode exactly the
tokens of the eager loop, under compact and native serving, per-head selections and stop tokens."""

from __future__ import annotations

import pytest
import torch

from matbench.engine.decode import eager_decode, greedy_decode, static_decode
from matbench.engine.runtime import ModelRunner
from matbench.engine.serving import SERVING, ServeRequest
from tests.helpers import engine_for

STEPS = 12


def _requests(engine, pair, caches, per_head: bool) -> list[ServeRequest]:
    """Every arm x member of `pair`, probe queries; with `per_head`, each layer's KV heads keep a
    seeded random 70% of the served rows (the last four kept by all)."""
    layers, kv_heads = engine.runner.head_shape
    out = []
    for k, arm in enumerate(pair.arms):
        for m in (0, 1):
            ids = engine.query_ids(pair, arm, engine.probe_readout)
            if not per_head:
                out.append(ServeRequest(caches[m], arm.served, ids))
                continue
            slots = caches[m].kept_slots(arm.served)
            heads = torch.rand(layers, kv_heads, len(slots), generator=torch.Generator().manual_seed(2 * k + m)) < 0.7
            heads[..., -4:] = True
            out.append(ServeRequest(caches[m], arm.served, ids, slots=tuple(slots.tolist()), head_valid=heads))
    return out


def _counting(monkeypatch) -> list[int]:
    calls = []
    original = ModelRunner.step_forward

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelRunner, "step_forward", counted)
    return calls


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("serving", ["compact", "native"])
def test_static_steps_decode_the_eager_loops_tokens(tiny, pairs, serving, per_head, monkeypatch):
    engine = engine_for(tiny, serving=serving)
    pair = pairs[0]
    _, caches = engine.prepare(pair)
    requests = _requests(engine, pair, caches, per_head)
    batch, first = SERVING[serving](engine.runner, requests, reserve=STEPS)
    eager = eager_decode(engine.runner, batch, first, STEPS, set())
    calls = _counting(monkeypatch)
    batch, again = SERVING[serving](engine.runner, requests, reserve=STEPS)
    assert torch.equal(first, again)
    static = static_decode(engine.runner, batch, again, STEPS, set())
    assert len(calls) == STEPS - 1  # one fixed-shape step per token after the query's
    assert static == eager and [len(row) for row in eager] == [STEPS] * len(requests)
    assert len({tuple(row) for row in eager}) > 1  # rows differ: the comparison reads each row


def test_stop_tokens_cut_rows_alike_and_end_the_steps_when_every_row_stopped(tiny_gemma, pairs, monkeypatch):
    engine = engine_for(tiny_gemma)
    pair = pairs[1]
    _, caches = engine.prepare(pair)
    requests = _requests(engine, pair, caches, False)
    batch, first = SERVING[engine.serving](engine.runner, requests, reserve=STEPS)
    free = eager_decode(engine.runner, batch, first, STEPS, set())
    stops = {free[0][3], free[1][5]}  # cut row 0 at step 3 at the latest, others where they meet them
    results = {}
    calls = _counting(monkeypatch)
    for name, decode in (("eager", eager_decode), ("static", static_decode)):
        batch, first = SERVING[engine.serving](engine.runner, requests, reserve=STEPS)
        results[name] = decode(engine.runner, batch, first, STEPS, stops)
    assert results["static"] == results["eager"]
    assert len(results["eager"][0]) <= 3 and results["eager"] != free
    assert [r[: len(c)] for r, c in zip(free, results["eager"])] == results["eager"]
    calls.clear()
    firsts = {row[0] for row in free}  # every row stops at once: no step runs
    batch, first = SERVING[engine.serving](engine.runner, requests, reserve=STEPS)
    assert static_decode(engine.runner, batch, first, STEPS, firsts) == [[]] * len(requests)
    assert calls == []


def test_greedy_decode_takes_the_static_steps_where_the_runner_graphs_and_room_allows(tiny_llama, pairs, monkeypatch):
    engine = engine_for(tiny_llama)
    assert engine.runner.decode_graphs is False  # a CPU model decodes eagerly
    pair = pairs[0]
    _, caches = engine.prepare(pair)
    requests = _requests(engine, pair, caches, False)
    batch, first = SERVING["compact"](engine.runner, requests, reserve=STEPS)
    eager = eager_decode(engine.runner, batch, first, STEPS, set())
    calls = _counting(monkeypatch)
    monkeypatch.setattr(engine.runner, "decode_graphs", True)  # on the CPU: the same steps, uncaptured
    batch, first = SERVING["compact"](engine.runner, requests, reserve=STEPS)
    assert greedy_decode(engine.runner, batch, first, STEPS, set()) == eager and len(calls) == STEPS - 1
    batch, first = SERVING["compact"](engine.runner, requests, reserve=0)  # no room for the steps
    assert static_decode(engine.runner, batch, first, STEPS, set()) is None
    assert greedy_decode(engine.runner, batch, first, STEPS, set()) == eager and len(calls) == STEPS - 1


def test_decode_graphs_on_a_cpu_is_refused_in_one_line_before_the_model_loads(tiny_dir, tmp_path, capsys, monkeypatch):
    from tests.test_cli import eval_refused_before_loading

    argv = ["--model", str(tiny_dir), "--device", "cpu", "--decode-graphs", "on", "--output", str(tmp_path)]
    assert "--decode-graphs on needs the model on one CUDA device" in eval_refused_before_loading(
        argv, monkeypatch, capsys
    )


@pytest.mark.parametrize(
    "setting, device, device_map, expected",
    [
        ("auto", "cpu", None, False),
        ("auto", "cuda", None, True),
        ("auto", "cuda:1", None, True),
        ("auto", "cuda", "auto", False),
        ("off", "cuda", None, False),
        ("on", "cuda:0", None, True),
    ],
)
def test_decode_graphs_resolve_to_a_single_cuda_device(setting, device, device_map, expected):
    from matbench.models.loading import resolve_decode_graphs

    assert resolve_decode_graphs(setting, device, device_map) is expected


def test_results_record_graph_decoding_only_when_on(tiny_llama):
    """The model block says `decode_graphs: true` when the steps were replayed (schema 1.11) and
    leaves the key out otherwise, so earlier runs' config hashes hold."""
    from dataclasses import replace

    from matbench.results.schema import ModelInfo

    off = tiny_llama.describe()
    on = replace(tiny_llama, decode_graphs=True).describe()
    assert "decode_graphs" not in off and on["decode_graphs"] is True
    assert {k: v for k, v in on.items() if k != "decode_graphs"} == off
    assert ModelInfo(**on).decode_graphs is True and ModelInfo(**off).decode_graphs is None
