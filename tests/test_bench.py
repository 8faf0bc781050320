"""`matbench bench`: the record's numbers are consistent with each other; bad input is one line."""

from __future__ import annotations

import json

import pytest
from matbench.cli import main


def test_discovery_bench_record_on_a_random_tiny_shape(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "discovery", "--random-weights", "qwen3-tiny", "--n", "3", "--naive-n", "2",
                 "--device", "cpu", "--output", str(out)]) == 0
    record = json.loads(out.read_text())
    assert (record["n_pairs"], record["naive_pairs"], record["dtype"]) == (3, 2, "float32")
    # 4 discovery arms x (probe, short) per naive pair; float32 on CPU: the paths agree exactly.
    assert record["class_agreement"]["compared"] == 2 * 4 * 2
    assert record["class_agreement"]["rate"] == 1.0 and record["class_agreement"]["flips"] == []
    engine, naive = record["engine"], record["naive"]
    assert engine["pairs_per_s"] == pytest.approx(3 / engine["seconds"], rel=1e-2)
    assert record["speedup"] == pytest.approx(engine["pairs_per_s"] / naive["pairs_per_s"], rel=1e-2)
    assert engine["prefill_tokens_per_s"] == pytest.approx(engine["prefill_tokens"] / engine["prefill_seconds"], rel=1e-2)
    assert engine["prefill_mfu"] is None  # no card peak on a CPU
    assert record["n_parameters"] == 6365568 and record["peak_memory_gib"] > 0


@pytest.mark.parametrize("argv, message", [
    (["bench", "discovery", "--random-weights", "qwen3-8", "--device", "cpu"], "Did you mean 'qwen3-8b'"),
    (["bench", "discovery", "--device", "cpu"], "pass exactly one of --model NAME or --random-weights SHAPE"),
    (["bench", "nosuch"], "unknown benchmark"),
    (["bench", "leaderboard", "--n", "0"], "--n must be at least 1"),
])
def test_bench_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
