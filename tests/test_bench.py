"""`matbench bench`: the record counts what was run, and the engine agrees with the naive path; bad
input is one line."""

from __future__ import annotations

import json

import pytest

from matbench.cli import main
from matbench.data_gen import SUITES
from matbench.engine.layout import layout_pair
from matbench.engine.pair_engine import PairEngine
from matbench.models.shapes import random_model


def test_discovery_bench_record_on_a_random_tiny_shape(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert (
        main(
            [
                "bench",
                "discovery",
                "--random-weights",
                "qwen3-tiny",
                "--n",
                "3",
                "--naive-n",
                "2",
                "--device",
                "cpu",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert (record["n_pairs"], record["naive_pairs"], record["dtype"]) == (3, 2, "float32")
    from matbench.bench.records import read_bench_records, recorded_now

    assert record["recorded"] == recorded_now("cpu") and record["recorded"]["hardware"].endswith(" CPU")
    # the command that made it, as given to main (not the test runner's own arguments)
    assert record["command"] == (
        f"matbench bench discovery --random-weights qwen3-tiny --n 3 --naive-n 2 --device cpu --output {out}"
    )
    (row,) = read_bench_records(tmp_path)  # the new record reads as a row of the README's table
    assert (row.file, row.command) == ("bench.json", record["command"])
    # 4 discovery arms x (probe, short) per naive pair; float32 on CPU: the paths agree exactly.
    assert record["class_agreement"]["compared"] == 2 * 4 * 2
    assert record["class_agreement"]["rate"] == 1.0 and record["class_agreement"]["flips"] == []
    # Prefill tokens: both members of every pair, the shared prefix once, as the layouts give them.
    engine = PairEngine(random_model("qwen3-tiny", "cpu"))
    layouts = [layout_pair(p, engine.renderer) for p in SUITES.get("discovery").generate(0, 3)]
    expected = sum(len(lay.members[0].input_ids) + len(lay.members[1].input_ids) - lay.prefix_tokens for lay in layouts)
    assert record["engine"]["prefill_tokens"] == expected
    assert record["n_parameters"] == sum(p.numel() for p in engine.loaded.model.parameters())
    assert record["engine"]["prefill_mfu"] is None  # no card peak on a CPU


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "discovery", "--random-weights", "qwen3-8", "--device", "cpu"], "Did you mean 'qwen3-8b'"),
        (["bench", "discovery", "--device", "cpu"], "pass exactly one of --model NAME or --random-weights SHAPE"),
        (["bench", "nosuch"], "unknown benchmark"),
        (["bench", "leaderboard", "--decode-graphs", "on"], "benchmark 'leaderboard' takes no --decode-graphs"),
        (["bench", "leaderboard", "--n", "0"], "--n must be at least 1"),
        (
            ["bench", "discovery", "--random-weights", "qwen3-tiny", "--device", "cpu", "--device-map", "auto"],
            "--device-map takes auto, and spreads a model over GPUs: use it with --device cuda",
        ),
    ],
)
def test_bench_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_long_context_bench_record_on_a_random_tiny_shape(tmp_path):
    out = tmp_path / "long.json"
    assert (
        main(
            [
                "bench",
                "long-context",
                "--random-weights",
                "qwen3-tiny",
                "--context",
                "3000",
                "--chunk-size",
                "1024",
                "--requests",
                "3",
                "--serving",
                "native",
                "--device",
                "cpu",
                "--decode-graphs",
                "compare",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert (record["context_tokens"], record["chunk_size"], record["requests"]) == (3000, 1024, 3)
    assert record["kept_rows_per_request"] == 256 + 4 * 512 and record["serving"] == "native"
    prefill = record["prefill"]
    # seconds are rounded to 1 ms in the record: the ratio holds within that rounding
    decode = record["decode"]
    assert prefill["tokens_per_s"] == pytest.approx(3000 / prefill["seconds"], rel=1e-2 + 5e-4 / prefill["seconds"])
    assert decode["tokens_per_s"] == pytest.approx(3 * 12 / decode["seconds"], rel=1e-2 + 5e-4 / decode["seconds"])
    assert set(record["native_layout_peak_memory_gib_2_requests"]) == {"gathered", "literal"}
    # compared: the eager loop, then the fixed-shape steps (uncaptured on a CPU), the same tokens
    assert set(record["decode_by_mode"]) == {"eager", "graphs"} and record["decode"]["mode"] == "graphs"
    assert record["decode_same_tokens"] is True


def test_discovery_bench_compares_eager_and_graph_decoding_in_one_run(tmp_path):
    out = tmp_path / "bench.json"
    assert (
        main(
            [
                "bench",
                "discovery",
                "--random-weights",
                "qwen3-tiny",
                "--n",
                "2",
                "--naive-n",
                "1",
                "--device",
                "cpu",
                "--decode-graphs",
                "compare",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert set(record["engine_by_decode"]) == {"eager", "graphs"} and record["decode"] == "graphs"
    # 2 pairs x (probe, short) x 4 arms, every class the same both ways
    assert record["decode_classes_agree"] == {"compared": 2 * 2 * 4, "agree": 2 * 2 * 4}
    eager = record["engine_by_decode"]["eager"]
    # both times are rounded to 1 ms: the ratio of rounded times is off by up to 5e-4 (1 + share) / seconds
    share = eager["serve_probe_decode_seconds"] / eager["seconds"]
    assert eager["serve_probe_decode_share"] == pytest.approx(share, abs=5e-4 * (1 + share) / eager["seconds"] + 5e-4)


def test_scaling_needs_several_processes(capsys):
    assert main(["bench", "scaling", "--random-weights", "qwen3-tiny", "--device", "cpu"]) == 2
    assert "torchrun --nproc-per-node N -m matbench bench scaling" in capsys.readouterr().err


def test_an_option_the_benchmark_does_not_take_is_one_line(capsys):
    assert main(["bench", "leaderboard", "--context", "5"]) == 2
    assert "benchmark 'leaderboard' takes no --context" in capsys.readouterr().err


def test_patch_cost_renders_kv_timings_log_and_times_three_paths(tmp_path):
    from matbench.bench.patch_cost import timing_pair
    from matbench.protocol.frames import FRAMES

    pair = timing_pair(24)
    frame = FRAMES[pair.frame]
    assert frame.render_event(0, pair.events[0]).startswith("<step 1>\naction: reg_op()\nobservation: register ")
    assert pair.events[12].endswith("set to state ONLINE") and " mirrors register " in pair.events[23]
    patch = pair.arm("patch").appended[0]
    assert frame.appended_text(24, patch) == (
        f"<step 25>\naction: memory_patch()\nobservation: {patch.split(' => ')[1]}\n"
    )
    out = tmp_path / "patch.json"
    assert (
        main(
            [
                "bench",
                "patch-cost",
                "--random-weights",
                "qwen3-tiny",
                "--device",
                "cpu",
                "--n",
                "1",
                "--events",
                "48",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert sorted(record["scales"]) == ["N24", "N48"] and record["repetitions"] == 1
    assert record["serving"] == "compact"  # auto, on a model without sliding-window layers
    for scale in record["scales"].values():
        assert scale["recompute_tokens"] == scale["context_tokens"] + scale["patch_tokens"] + scale["question_tokens"]
        assert scale["patch_tokens"] > 20 and min(scale["reuse_ms"], scale["patch_ms"], scale["recompute_ms"]) > 0
        assert scale["patch_over_recompute"] == pytest.approx(scale["patch_ms"] / scale["recompute_ms"], rel=1e-2)
    assert record["scales"]["N48"]["context_tokens"] > record["scales"]["N24"]["context_tokens"]


@pytest.mark.parametrize("serving, expected", [("auto", "native"), ("compact", "compact")])
def test_patch_cost_serves_a_sliding_window_model_as_the_protocol_does(tiny_gemma, monkeypatch, serving, expected):
    from matbench.bench import patch_cost
    from matbench.engine import pair_engine

    served = []
    real = pair_engine.probe_logits

    def recording(*args, serving=None, **kw):
        served.append(serving)
        return real(*args, serving=serving, **kw)

    monkeypatch.setattr(pair_engine, "probe_logits", recording)
    monkeypatch.setattr(patch_cost, "load_for_bench", lambda *args, **kw: tiny_gemma)
    record = patch_cost.patch_cost(model="tiny-gemma3", n=1, events=30, serving=serving)

    assert record["serving"] == expected and sorted(record["scales"]) == ["N24", "N30"]
    # per scale: reuse and patch, each a warm-up and one timed run
    assert served == [expected] * 8


def test_policies_bench_times_every_scoring_policy_against_prefill_and_oracle(tmp_path):
    from matbench.bench.policies import POLICIES
    from matbench.data_gen import SUITES
    from matbench.engine.layout import layout_pair
    from matbench.engine.render import Renderer
    from matbench.models.shapes import random_model

    out = tmp_path / "policies.json"
    assert (
        main(
            [
                "bench",
                "policies",
                "--random-weights",
                "qwen3-tiny",
                "--device",
                "cpu",
                "--n",
                "2",
                "--batch-pairs",
                "1",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert sorted(record["policies"]) == sorted(POLICIES) and len(POLICIES) == 11
    assert (record["pairs"], record["batch_pairs"], record["budget"], record["serving"]) == (2, 1, "0.5", "compact")
    renderer = Renderer(random_model("qwen3-tiny", "cpu").tokenizer)
    expected = sum(
        len(m.input_ids) for p in SUITES.get("discovery").generate(0, 2) for m in layout_pair(p, renderer).members
    )
    assert record["prefill_tokens"] == expected
    for name, entry in record["policies"].items():
        assert min(entry["select_ms_per_pair"], entry["serve_ms_per_pair"]) > 0, name
        assert entry["select_over_prefill"] == pytest.approx(
            entry["select_ms_per_pair"] / record["prefill_ms_per_pair"], rel=0.02, abs=2e-3
        )
        assert entry["serve_over_oracle"] == pytest.approx(
            entry["serve_ms_per_pair"] / record["oracle_serve_ms_per_pair"], rel=0.02, abs=2e-3
        )


def test_the_benchmarks_readme_lists_every_record_as_its_files_say():
    from pathlib import Path

    from matbench.bench.records import history_table
    from matbench.bench.targets import TARGETS, cited, current_table

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    readme = (folder / "README.md").read_text()
    current, history = current_table(folder), history_table(folder, cited())
    assert "## Current targets\n" in readme and current in readme  # the generated targets table
    assert readme.rstrip().endswith(history)  # the README closes with the generated history
    assert current.count("\n") - 1 == len(TARGETS)  # a row per target
    # every record once: cited by a target, or a row of the history
    assert history.count("\n") - 1 + len(cited()) == len(list(folder.glob("*.json")))
    assert all((folder / name).is_file() for name in cited())


def test_a_target_reads_its_figure_from_its_record(tmp_path):
    from matbench.bench.targets import Target, current_table

    record = {
        "command": "matbench bench discovery",
        "recorded": {"date": "2026-12-07", "commit": "abc1234", "hardware": "H"},
    }
    (tmp_path / "d.json").write_text(json.dumps({**record, "engine": {"pairs_per_s": 31.456}}))
    faster = Target("discovery", 30, "pairs/s", False, "d.json", lambda r: r["engine"]["pairs_per_s"])
    share = Target("share", 0.25, "%", True, "d.json", lambda r: r["engine"]["pairs_per_s"] / 100)
    pending = Target("contract", 10, "min", True, None)
    lines = current_table(tmp_path, (faster, share, pending)).splitlines()[2:]
    assert lines[0] == (
        "| discovery | ≥ 30 pairs/s | 31.46 pairs/s | yes | `d.json` | 2026-12-07 | abc1234 | H "
        "| `matbench bench discovery` |"
    )
    assert lines[1].startswith("| share | ≤ 25% | 31% | no | `d.json` |")
    assert lines[2] == "| contract | ≤ 10 min | not measured yet | | | | | | |"


def test_a_record_that_does_not_say_how_it_was_made_is_named_in_one_line(tmp_path):
    from matbench.bench.records import read_bench_records
    from matbench.errors import MatbenchError

    (tmp_path / "x.json").write_text(json.dumps({"command": "matbench bench discovery", "recorded": {"date": "d"}}))
    with pytest.raises(MatbenchError, match=r"x.json: a benchmark record needs recorded.date, .commit, .hardware"):
        read_bench_records(tmp_path)
    (tmp_path / "x.json").write_text("[1, 2]")
    with pytest.raises(MatbenchError, match=r"x.json: a benchmark record needs recorded.date"):
        read_bench_records(tmp_path)
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(MatbenchError, match=r"x.json is not a JSON record \(.*\); write it with matbench bench"):
        read_bench_records(tmp_path)


def test_contract_bench_times_every_contract_suite_of_one_loaded_model(tiny_dir, tmp_path):
    from matbench.run.config import EvalConfig
    from matbench.run.evaluate import contract_suites

    out, results = tmp_path / "contract.json", tmp_path / "results"
    argv = ["bench", "contract", "--model", str(tiny_dir), "--n", "2", "--device", "cpu"]
    assert main([*argv, "--results", str(results), "--output", str(out)]) == 0
    record = json.loads(out.read_text())
    names = contract_suites(EvalConfig(model="x"))  # harvest left out: no dialog copies given
    assert [s["suite"] for s in record["suites"]] == names
    assert all(s["pairs"] == 2 for s in record["suites"]) and record["pairs"] == 2 * len(names)
    # every suite's run is there, one results file per combination the record counts
    assert sum(s["results_files"] for s in record["suites"]) == len(list(results.glob("*.json")))
    parts = record["load_s"] + sum(s["wall_s"] for s in record["suites"])
    assert record["wall_s"] >= parts - 0.005 * (len(names) + 2)  # each figure rounded to 0.01 s
    assert record["scorecard_s"] is None and record["limit"] == 2  # a scorecard needs whole suites
    assert record["peak_memory_gib"] == max(s["peak_memory_gib"] for s in record["suites"]) > 0
    assert record["command"] == "matbench " + " ".join([*argv, "--results", str(results), "--output", str(out)])


def test_a_record_names_the_device_a_benchmark_chose_itself(tiny_dir, tmp_path, monkeypatch):
    from matbench.bench import records

    monkeypatch.setattr(records, "hardware", lambda device: f"hardware of {device}")
    out = tmp_path / "contract.json"
    argv = ["bench", "contract", "--model", str(tiny_dir), "--n", "1", "--output", str(out)]  # no --device
    assert main(argv) == 0
    record = json.loads(out.read_text())
    assert record["machine"]["device"] == "cpu" and record["recorded"]["hardware"] == "hardware of cpu"


def test_contract_bench_refuses_a_results_folder_that_would_resume(tmp_path, capsys):
    (tmp_path / "old.json").write_text("{}")
    argv = ["bench", "contract", "--model", "smollm2-135m", "--results", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"--results {tmp_path} already holds files" in err


def test_a_scripts_record_says_its_command_machine_and_when(monkeypatch):
    import sys

    from matbench.bench.common import machine
    from matbench.bench.records import recorded_now, script_provenance

    monkeypatch.setattr(sys, "argv", ["benchmarks/scripts/x.py", "--out", "a b.json"])
    made = script_provenance("cpu")
    assert made == {
        "command": "python benchmarks/scripts/x.py --out 'a b.json'",
        "machine": {**machine(), "gpu": None},
        "recorded": recorded_now("cpu"),
    }
