"""The engine's sharing and batching change nothing: the naive path (whole re-prefill per arm and
member, batch of one, token-by-token decoding) gives the same classes, answers and log-probs."""

from __future__ import annotations

import pytest

from matbench.engine.naive import naive_pair
from tests.helpers import engine_for


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_engine_equals_the_naive_path(tiny, pairs, serving):
    engine = engine_for(tiny)
    items = [(p, *engine.prepare(p)) for p in pairs]
    records = engine.score_many(items, [("probe", serving), ("short", serving)])
    for pair, record in zip(pairs, records):
        naive = naive_pair(engine, pair, serving)
        for arm, n in naive["arms"].items():
            probe, short = record[("probe", serving)].arms[arm], record[("short", serving)].arms[arm]
            assert (probe.outcome, probe.probe_answers) == (n["probe_class"], tuple(n["probe_answers"]))
            assert (short.outcome, short.answers) == (n["class"], tuple(n["answers"]))
            for got, ref in zip(probe.probe_logp, n["probe_logp"]):
                assert got == pytest.approx(ref, abs=1e-4)  # float32: shared prefix and batching
            assert probe.shift == pytest.approx(n["shift"], abs=1e-4)
