"""`runtime.ReservedLayer`: tokens appended to a served cache are written in place, and serving
and greedy decoding give what the concatenating `DynamicLayer` gives."""

from __future__ import annotations

import pytest
import torch

from matbench.engine.decode import greedy_decode
from matbench.engine.runtime import ReservedLayer, cache_from_rows, cache_rows
from matbench.engine.serving import SERVING, ServeRequest
from tests.helpers import engine_for


def test_appending_writes_into_the_room_then_concatenates():
    torch.manual_seed(0)
    rows, room = torch.randn(2, 3, 5, 4), torch.empty(2, 3, 8, 4)
    room[:, :, :5] = rows
    layer = ReservedLayer.holding(room, room.clone(), 5)
    assert layer.get_seq_length() == 5 and torch.equal(layer.keys, rows)
    new = torch.randn(2, 3, 2, 4)
    keys, _ = layer.update(new, new)
    assert keys.data_ptr() == room.data_ptr() and layer.get_seq_length() == 7  # in place
    assert torch.equal(keys, torch.cat([rows, new], dim=2))
    more = torch.randn(2, 3, 2, 4)  # 9 > 8 slots: out of room
    keys, _ = layer.update(more, more)
    assert keys.data_ptr() != room.data_ptr() and torch.equal(keys, torch.cat([rows, new, more], dim=2))


def test_cache_from_rows_with_room_reads_like_a_dynamic_cache():
    rows = [torch.randn(1, 2, 3, 4) for _ in range(2)]
    rooms = [torch.cat([r, torch.zeros(1, 2, 5, 4)], dim=2) for r in rows]
    plain, reserved = cache_from_rows(rows, rows), cache_from_rows(rooms, rooms, length=3)
    assert reserved.get_seq_length() == plain.get_seq_length() == 3
    for a, b in zip(cache_rows(plain)[0], cache_rows(reserved)[0]):
        assert torch.equal(a, b)


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_serving_and_decoding_do_not_depend_on_the_room(tiny, pairs, serving, monkeypatch):
    from matbench.engine import runtime

    engine = engine_for(tiny, serving=serving)
    pair = pairs[0]
    _layout, caches = engine.prepare(pair)
    requests = [
        ServeRequest(caches[m], arm.served, engine.query_ids(pair, arm, engine.probe_readout))
        for arm in pair.arms
        for m in (0, 1)
    ]
    out = {}
    for reserve in (12, 0, None):  # room for every step, for the query only, none (DynamicLayer)
        if reserve is None:
            monkeypatch.setattr(
                runtime.ReservedLayer, "holding", classmethod(lambda cls, k, v, n: _dynamic(k[:, :, :n], v[:, :, :n]))
            )
        batch, first = SERVING[serving](engine.runner, requests, reserve=reserve or 0)
        out[reserve] = first, greedy_decode(engine.runner, batch, first, 12, set())
    for reserve in (0, None):
        assert torch.allclose(out[12][0], out[reserve][0], atol=1e-5)
        assert out[12][1] == out[reserve][1]


def _dynamic(keys, values):
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()
    layer.lazy_initialization(keys, values)
    layer.keys, layer.values = keys.contiguous(), values.contiguous()
    return layer
