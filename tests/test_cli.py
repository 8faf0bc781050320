"""The command line: bad input gives one clear line; a tiny model runs end to end and resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.errors import MatbenchError


def run_cli(args, capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("matbench: error: ")
    return lines[0]


def eval_refused_before_loading(argv: list[str], monkeypatch, capsys) -> str:
    """`matbench eval ARGV` exits 2 with one error line and never loads weights; the line."""
    from transformers import AutoModelForCausalLM

    from matbench.cli import main

    loads = []
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: loads.append(a))
    code = main(["eval", *argv])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2 and loads == [], (code, loads)
    return line


def test_help_lists_eval():
    out = subprocess.run(
        [sys.executable, "-m", "matbench.cli", "eval", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0
    for flag in ("--model", "--readout", "--serving", "--limit", "--check", "--output", "examples:"):
        assert flag in out.stdout


def test_misspelt_alias(capsys, tmp_path):
    code, _, err = run_cli(["eval", "--model", "smolm2-135m", "--output", str(tmp_path)], capsys)
    line = one_line_error(err)
    assert code == 2 and "unknown model 'smolm2-135m': did you mean the offline alias 'smollm2-135m'?" in line


BEFORE_TORCH = [
    (["--readout", "prob"], "unknown readout 'prob'; did you mean 'probe'?"),
    (["--suite", "discovry"], "unknown suite 'discovry'. Did you mean 'discovery'?"),
    (["--limit", "0"], "--limit must be at least 1 (got 0)"),
    (["--model", "smolm2-135m"], "did you mean the offline alias 'smollm2-135m'?"),
    (["--model", "no-such-org/no-such-model"], "'no-such-org/no-such-model' is not in the local Hub cache"),
    (["--output", "FILE"], "is a file; name a directory"),
    (["--policy", "snapk"], "unknown serving policy 'snapk'. Did you mean 'snapkv'?"),
    (["--policy", "snapkv:0.5"], "a budget follows @: did you mean snapkv@0.5?"),
]


@pytest.mark.parametrize(("args", "message"), BEFORE_TORCH)
def test_eval_refuses_bad_options_in_one_line_before_torch_imports(args, message, tmp_path):
    """Each refusal is one line on stderr, exit 2, and torch was never imported (so it takes a
    fraction of a second however heavy the engine is)."""
    file = tmp_path / "a-file"
    file.write_text("")
    options = {"--model": "smollm2-135m", "--output": str(tmp_path / "out")}
    options.update((key, str(file) if value == "FILE" else value) for key, value in zip(args[::2], args[1::2]))
    argv = ["eval", *(x for pair in options.items() for x in pair)]
    probe = (
        "import sys\nfrom matbench.cli import main\ntry:\n    code = main(sys.argv[1:])\n"
        "except SystemExit as exc:  # argparse's own refusals\n    code = exc.code\n"
        "print('torch' in sys.modules, code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=60,
    )
    assert done.stdout.split() == ["False", "2"], done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


def test_an_unreachable_hub_uses_the_cached_copy_and_goes_offline(monkeypatch, capsys):
    import huggingface_hub
    from huggingface_hub import constants

    from matbench.models import sources

    tried = []

    def refuse(address, timeout):
        tried.append(address)
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr("socket.create_connection", refuse)
    monkeypatch.setattr(
        huggingface_hub, "try_to_load_from_cache", lambda repo, name, revision=None: "/cache/config.json"
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    sources.check_hub_reachable("org/cached-model")
    assert tried and constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"
    assert "using the cached copy of org/cached-model" in capsys.readouterr().err
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda repo, name, revision=None: None)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(MatbenchError, match="cannot reach .* to fetch model 'org/other' .Network is unreachable."):
        sources.check_hub_reachable("org/other")
    assert len(tried) == 2


def test_limit_zero(capsys, tmp_path):
    code, _, err = run_cli(["eval", "--model", "smollm2-135m", "--limit", "0", "--output", str(tmp_path)], capsys)
    assert code == 2 and "--limit must be at least 1" in one_line_error(err)


def test_directory_without_config(capsys, tmp_path):
    code, _, err = run_cli(["eval", "--model", str(tmp_path), "--output", str(tmp_path / "o")], capsys)
    assert code == 2 and "holds no config.json" in one_line_error(err)


def test_directory_without_weights(capsys, tmp_path, tiny_llama):
    tiny_llama.model.config.save_pretrained(tmp_path)
    tiny_llama.tokenizer.save_pretrained(tmp_path)
    code, _, err = run_cli(["eval", "--model", str(tmp_path), "--output", str(tmp_path / "o")], capsys)
    line = one_line_error(err)
    assert code == 2 and "has a config.json but no weights" in line


@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda: __import__("transformers").MambaConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1),
            "no token-addressable KV cache",
        ),
        (
            lambda: __import__("transformers").Qwen3NextConfig(num_hidden_layers=4, vocab_size=100),
            "no token-addressable KV cache",
        ),
        (lambda: __import__("transformers").T5Config(), "encoder-decoder, not a causal LM"),
        (lambda: __import__("transformers").BertConfig(architectures=["BertForMaskedLM"]), "is not a causal LM"),
    ],
)
def test_unservable_architectures(capsys, tmp_path, make, expected):
    make().save_pretrained(tmp_path)
    code, _, err = run_cli(["eval", "--model", str(tmp_path), "--output", str(tmp_path / "o")], capsys)
    assert code == 2 and expected in one_line_error(err)


def test_truncated_gguf(capsys, tmp_path):
    from matbench.models.sources import resolve_source

    source = resolve_source("smollm2-135m")
    full = Path(source.location) / source.gguf_file
    broken = tmp_path / "broken.gguf"
    with full.open("rb") as fh:
        broken.write_bytes(fh.read(1 << 20))
    code, _, err = run_cli(["eval", "--model", str(broken), "--output", str(tmp_path / "o")], capsys)
    assert code == 2 and "truncated or corrupt" in one_line_error(err)


def test_missing_gguf_file(capsys, tmp_path):
    code, _, err = run_cli(["eval", "--model", str(tmp_path / "nope.gguf"), "--output", str(tmp_path)], capsys)
    assert code == 2 and "does not exist" in one_line_error(err)


def test_unknown_suite(capsys, tmp_path):
    code, _, err = run_cli(
        ["eval", "--model", "smollm2-135m", "--suite", "discovry", "--output", str(tmp_path)], capsys
    )
    assert code == 2 and "Did you mean 'discovery'" in one_line_error(err)


def test_eval_end_to_end_and_resume(capsys, tmp_path, tiny_dir, monkeypatch):
    out = tmp_path / "run"
    args = [
        "eval",
        "--model",
        str(tiny_dir),
        "--limit",
        "3",
        "--check",
        "--readout",
        "short",
        "--no-progress",
        "--output",
        str(out),
    ]
    code, _stdout, _ = run_cli(args, capsys)
    assert code == 0
    results = json.loads((out / "discovery_short_compact.json").read_text())
    log = (out / "discovery_short_compact.items.jsonl").read_text().splitlines()
    assert len(log) == 3 and results["config"]["n_items"] == 3
    metrics = results["metrics"]
    for arm in ("root", "chain", "txt", "control"):
        m = metrics["arms"][arm]
        assert sum(m["classes"].values()) == 3 and m["n_pairs"] == 3
    assert metrics["headline"]["control_clean"] is True
    assert {k: v for k, v in results["gates"]["A"].items() if k != "max_abs_diff"} == {
        "checked": 3,
        "passed": 3,
        "skipped": 0,
    }
    assert 0 <= results["gates"]["A"]["max_abs_diff"] <= 1e-3
    assert results["items"]["log"] == "discovery_short_compact.items.jsonl" and results["items"]["n_from_log"] == 0

    # A rerun recomputes nothing: the engine is never asked to prefill or score. (Shown to fire:
    # with the log moved away, the same patch stops the run.)
    import matbench.engine.pair_engine

    def boom(*a, **k):
        raise AssertionError("recomputed a finished item")

    for method in ("prepare_many", "score_many"):
        monkeypatch.setattr(matbench.engine.pair_engine.PairEngine, method, boom)
    code, _, _ = run_cli(args, capsys)
    assert code == 0
    log_path = out / "discovery_short_compact.items.jsonl"
    saved = log_path.read_bytes()
    log_path.unlink()
    with pytest.raises(AssertionError, match="recomputed a finished item"):
        run_cli(args, capsys)
    log_path.write_bytes(saved)
    again = json.loads((out / "discovery_short_compact.json").read_text())
    assert again["metrics"] == metrics
    monkeypatch.undo()

    # A half-written last line (killed mid-write) is dropped and only that item is redone.
    path = out / "discovery_short_compact.items.jsonl"
    path.write_text("\n".join(log[:2]) + "\n" + log[2][:40])
    code, _, _ = run_cli(args, capsys)
    assert code == 0
    assert len(path.read_text().splitlines()) == 3
    assert json.loads((out / "discovery_short_compact.json").read_text())["metrics"] == metrics

    # Another configuration refuses to mix with the old log.
    code, _, err = run_cli(args[:-2] + ["--seed", "1", "--output", str(out)], capsys)
    assert code == 2 and "another configuration" in one_line_error(err)
    # and so does another --chunk-size (the out-of-memory line says it starts a new log)
    code, _, err = run_cli([*args, "--chunk-size", "7"], capsys)
    assert code == 2 and "another configuration" in one_line_error(err)


def test_a_larger_limit_resumes_the_cell_and_computes_only_the_new_items(capsys, tmp_path, tiny_dir, monkeypatch):
    """--limit is not in the per-item log's key: raising it extends a finished cell (how a committed
    32-pair harvest cell grows to reach its injected positive controls), item ids and records kept."""
    import matbench.engine.pair_engine

    args = ["eval", "--model", str(tiny_dir), "--readout", "short", "--no-progress", "--output", str(tmp_path)]
    assert run_cli(args + ["--limit", "2"], capsys)[0] == 0
    log = tmp_path / "discovery_short_compact.items.jsonl"
    first = log.read_text().splitlines()
    asked: list[str] = []
    prepare = matbench.engine.pair_engine.PairEngine.prepare_many

    def counting(self, pairs):
        asked.extend(p.item_id for p in pairs)
        return prepare(self, pairs)

    monkeypatch.setattr(matbench.engine.pair_engine.PairEngine, "prepare_many", counting)
    assert run_cli(args + ["--limit", "3"], capsys)[0] == 0
    lines = log.read_text().splitlines()
    assert asked == [json.loads(lines[2])["item_id"]]  # the patch fired, on the new item alone
    assert lines[:2] == first and len(lines) == 3
    assert json.loads((tmp_path / "discovery_short_compact.json").read_text())["config"]["n_items"] == 3


def test_eval_in_float64_records_it_and_gate_a_reads_zero(capsys, tmp_path, tiny_dir):
    code, _, _ = run_cli(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--dtype",
            "float64",
            "--limit",
            "2",
            "--check",
            "--no-progress",
            "--output",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0
    results = json.loads((tmp_path / "discovery_probe_compact.json").read_text())
    assert results["config"]["model"]["dtype"] == "float64"
    assert results["config"]["model"]["attn_implementation"] == "sdpa_grouped"
    assert results["gates"]["A"] == {"checked": 2, "passed": 2, "skipped": 0, "max_abs_diff": 0.0}
    code, _, err = run_cli(["eval", "--model", str(tiny_dir), "--dtype", "float128", "--output", str(tmp_path)], capsys)
    assert code == 2 and one_line_error(err) == (
        "matbench: error: unknown --dtype 'float128'; use one of float32, bfloat16, float16, float64"
    )


def test_console_script_reports_one_line(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    script = Path(sys.executable).with_name("matbench")  # the console script of this environment
    out = subprocess.run(
        [str(script), "eval", "--model", "smollm2-135m", "--limit", "0", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == "matbench: error: --limit must be at least 1 (got 0)"


def test_eval_from_a_dataset_repository(capsys, tmp_path, tiny_dir):
    from matbench.data_gen.publish import write_repo

    summary = write_repo(tmp_path / "suites", ["discovery"], seed=3, n=4, revision="t")[0]
    out = tmp_path / "run"
    code, _, err = run_cli(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--dataset",
            str(tmp_path / "suites"),
            "--limit",
            "2",
            "--no-progress",
            "--output",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    results = json.loads((out / "discovery_probe_compact.json").read_text())
    config = results["config"]
    assert config["dataset"] == str(tmp_path / "suites") and config["seed"] == 3 and config["n_items"] == 2
    assert config["config_content_hash"] == summary.content_hash
    assert sum(results["metrics"]["arms"]["root"]["classes"].values()) == 2


def test_first_line_of_an_empty_exception_is_its_type():
    from matbench.errors import first_line

    assert first_line(OSError()) == "OSError"
    assert first_line(ValueError("bad\nmore detail")) == "bad"


def test_eval_all_writes_every_suite_and_the_scorecard(capsys, tmp_path, tiny_dir, short_dialogs):
    from matbench.data_gen import SUITES
    from matbench.results.schema import read_results
    from tests.helpers import dialog_args

    out = tmp_path / "contract"
    code, stdout, err = run_cli(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--suite",
            "all",
            "--limit",
            "5",
            "--chunk-size",
            "4096",
            *dialog_args(short_dialogs),
            "--no-progress",
            "--output",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    contract = [name for name in SUITES.names() if SUITES.get(name).contract]
    assert len(contract) == 7 and "edge_swap" not in contract  # the paper's further experiments run by name
    for name in contract:
        assert read_results(out / f"{name}_probe_compact.json").config.n_items == 5
    assert sorted(p.name for p in out.glob("*_probe_compact.json")) == [f"{n}_probe_compact.json" for n in contract]
    card = json.loads((out / "scorecard.json").read_text())
    assert stdout.strip().endswith(f"scorecard: {out / 'scorecard.json'}")
    assert sum(line.startswith(("results: ", "items: ")) for line in stdout.splitlines()) == 2 * len(contract)
    assert card["suites"] == contract and set(card["contract"]) == set(contract)
    trigger = card["contract"]["trigger"]
    assert sum(trigger["classes"].values()) == 5  # 5 items = 5 constructions, each W, U or N
    from matbench.evaluators import EVALUATORS

    declared = [m for m in EVALUATORS.get("trigger").contract if m.in_scorecard and m.valid_for("probe")]
    assert trigger["evidence"] == {
        "results": "trigger_probe_compact.json",
        "items": "trigger_probe_compact.items.jsonl",
        "keys": {m.key: f"metrics.{m.path}" for m in declared},
        "n_items": 5,
        "device": "cpu",
    }
    assert trigger["evidence"]["keys"]["write_through"] == "metrics.headline.write_through_accuracy"
    assert card["contract"]["access"]["bin2"]["chance"] == 0.5
    code, stdout, err = run_cli(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--suite",
            "all",
            "--limit",
            "5",
            "--chunk-size",
            "4096",
            "--no-progress",
            "--json",
            "--output",
            str(out),
        ],
        capsys,
    )  # resumed: nothing redone
    assert code == 0 and json.loads(stdout) == card["contract"] and card["contract"]["update"]["control_clean"] is True
    (out / "scorecard.json").unlink()
    code, stdout, err = run_cli(["scorecard", str(out)], capsys)
    assert code == 0 and json.loads((out / "scorecard.json").read_text()) == card
    code, _, err = run_cli(["scorecard", str(tmp_path)], capsys)
    assert code == 2 and "no probe results files" in one_line_error(err)


def test_out_of_memory_is_one_line_and_says_what_to_lower(capsys, monkeypatch, tmp_path):
    import torch

    import matbench.run.evaluate

    def exhausted(cfg, loaded=None, shard=None):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.16 GiB.\nmore detail")

    monkeypatch.setattr(matbench.run.evaluate, "run_eval", exhausted)
    code = main(["eval", "--model", "smollm2-135m", "--output", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1
    assert "Tried to allocate 2.16 GiB" in err and "--batch-pairs 1" in err and "more detail" not in err
    # a smaller --chunk-size does not resume (it keys another log): the line must not say it does
    assert "--chunk-size lowers a long prefill's peak but starts a new per-item log" in err


def test_out_of_memory_backs_off_without_losing_or_changing_items(capsys, tmp_path, tiny_dir, monkeypatch):
    import torch

    import matbench.engine.pair_engine

    base = ["eval", "--model", str(tiny_dir), "--limit", "5", "--no-progress"]
    assert main([*base, "--batch-pairs", "1", "--output", str(tmp_path / "one")]) == 0
    real = matbench.engine.pair_engine.PairEngine.score_many
    sizes = []

    def tight(self, items, combos):
        sizes.append(len(items))
        if len(items) > 1:  # a device that fits one pair at a time
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB.")
        return real(self, items, combos)

    monkeypatch.setattr(matbench.engine.pair_engine.PairEngine, "score_many", tight)
    assert main([*base, "--batch-pairs", "4", "--output", str(tmp_path / "tight")]) == 0
    assert sizes == [4, 2, 1, 1, 1, 1, 1]  # halved twice, then every pair once
    name = "discovery_probe_compact.items.jsonl"
    assert (tmp_path / "tight" / name).read_text() == (tmp_path / "one" / name).read_text()
    capsys.readouterr()


def test_a_full_device_from_a_kernel_launch_is_out_of_memory_too(capsys, monkeypatch, tmp_path):
    """cudaErrorMemoryAllocation reaches Python as the generic AcceleratorError (seen with several
    runs on one H200): still the one-line out-of-memory answer; any other accelerator error is not."""
    import torch

    import matbench.run.evaluate

    def full(cfg, loaded=None, shard=None):
        raise torch.AcceleratorError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported")

    monkeypatch.setattr(matbench.run.evaluate, "run_eval", full)
    code = main(["eval", "--model", "smollm2-135m", "--output", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "CUDA error: out of memory" in err

    def broken(cfg, loaded=None, shard=None):
        raise torch.AcceleratorError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(matbench.run.evaluate, "run_eval", broken)
    with pytest.raises(torch.AcceleratorError):
        main(["eval", "--model", "smollm2-135m", "--output", str(tmp_path)])


@pytest.mark.parametrize("fraction", ["0", "1.5", "-0.2"])
def test_memory_fraction_outside_zero_to_one_is_one_line(capsys, tmp_path, fraction):
    code, _, err = run_cli(
        ["eval", "--model", "smollm2-135m", "--memory-fraction", fraction, "--output", str(tmp_path)], capsys
    )
    assert code == 2 and f"--memory-fraction must be in (0, 1] (got {float(fraction)})" in one_line_error(err)


def test_memory_fraction_on_the_cpu_is_one_line(capsys, tmp_path, tiny_dir):
    code, _, err = run_cli(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--device",
            "cpu",
            "--memory-fraction",
            "0.5",
            "--limit",
            "1",
            "--output",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 2 and "--memory-fraction caps a GPU's memory; this run is on cpu" in one_line_error(err)
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_check_pairs_gates_the_first_n_pairs_and_resumes_a_fully_checked_log(capsys, tmp_path, tiny_dir):
    """`--check-pairs 2` of 4 pairs: gates on exactly the suite's first two pairs (the log says
    which), recorded in the config; the log's key ignores it, so a run with --check on every pair
    resumes that log and gates only the two pairs it scores."""
    out = tmp_path / "run"
    common = ["eval", "--model", str(tiny_dir), "--readout", "short", "--no-progress", "--output", str(out)]
    code, _, _ = run_cli([*common, "--limit", "4", "--check-pairs", "2"], capsys)
    assert code == 0
    results = json.loads((out / "discovery_short_compact.json").read_text())
    assert results["config"]["check"] is True and results["config"]["check_pairs"] == 2
    assert results["gates"]["A"]["checked"] == 2 and results["gates"]["A"]["passed"] == 2
    log = [json.loads(line) for line in (out / "discovery_short_compact.items.jsonl").read_text().splitlines()]
    from matbench.run.evaluate import EvalConfig, load_suite

    pairs, _ = load_suite(EvalConfig(model=str(tiny_dir), suite="discovery", output=str(out), limit=4))
    assert sorted(r["item_id"] for r in log if r.get("gates")) == sorted(p.item_id for p in pairs[:2])
    code, _, _ = run_cli([*common, "--limit", "6", "--check"], capsys)
    assert code == 0
    results = json.loads((out / "discovery_short_compact.json").read_text())
    assert results["items"]["n_from_log"] == 4 and "check_pairs" not in results["config"]
    assert results["gates"]["A"]["checked"] == 4  # the two gated before and the two new pairs
    code, _, err = run_cli([*common, "--limit", "2", "--check-pairs", "0"], capsys)
    assert code == 2 and one_line_error(err) == "matbench: error: --check-pairs must be at least 1 (got 0)"


def test_the_error_records_lines_are_what_eval_prints_now(tmp_path, capsys, monkeypatch):
    """docs/errors.md is rendered from benchmarks/cpu-error-lines.json: each eval mistake there
    still prints exactly its recorded line (the record cannot go stale)."""
    import shlex

    record = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "cpu-error-lines.json").read_text())
    (tmp_path / "a-file").write_text("")
    checked = 0
    for row in record["mistakes"]:
        words = shlex.split(row["command"].replace("TMP", str(tmp_path)))
        settings = [w for w in words if "=" in w and w.split("=")[0].isupper()]
        words = words[len(settings) :]
        if words[:2] != ["matbench", "eval"] or "Qwen/" in row["command"]:
            continue  # the Hub rows depend on the network; their lines are tested with patches above
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        try:
            code = main(words[1:])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err.strip().replace(str(tmp_path), "TMP")
        assert (code, err) == (row["exit"], row["line"]), row["command"]
        checked += 1
    assert checked == 7


def test_the_policy_registry_loads_without_torch():
    """Every built-in policy registers without importing torch or transformers (see CONTRIBUTING,
    "A serving policy"), so --policy is checked in a fraction of a second."""
    probe = (
        "import sys\nfrom matbench.engine.policies import POLICIES\n"
        "print(len(POLICIES.names()), 'torch' in sys.modules, 'transformers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    from matbench.engine.policies import POLICIES

    assert done.stdout.split() == [str(len(POLICIES.names())), "False", "False"]
