"""The scripts that feed the lent GPU (results/device): what a device session runs unattended.

cells.sh runs here with a stand-in `python` on PATH that logs each `matbench eval` and answers
with planned exit codes (the conversion step and the arithmetic go to the real interpreter or
nowhere); stage.py cuts files out of a stream whose chunks split them, as the calls deliver it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

DEVICE = Path(__file__).resolve().parent.parent / "results" / "device"

FAKE_PYTHON = """#!/usr/bin/env bash
# stand-in for the device's python: real for -c, silent for the conversion heredoc, logged for eval
if [ "$1" = -c ]; then exec {real} "$@"; fi
if [ "$1" = - ]; then cat > /dev/null; exit 0; fi
echo "$* OMP=$OMP_NUM_THREADS" >> {calls}
n=$(wc -l < {calls}); code=$(sed -n "${{n}}p" {codes})
if [ -f {hooks}/$n ]; then bash {hooks}/$n; fi  # a test's doing while the n-th eval runs
exit ${{code:-0}}
"""


def _cells(tmp_path: Path, plan: str, alias: str, codes: list[int], neighbours: tuple[str, ...] = (),
           hooks: dict[int, str] | None = None, env: dict[str, str] | None = None,
           waiting: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Run cells.sh for `alias` with evals exiting `codes` in turn, beside live `neighbours` chains
    (those also in `waiting` wait, out of memory, for a neighbour to finish); hooks[n] is a bash
    line run during the n-th eval; `env` adds to the environment."""
    bin_dir, root, fake, hook_dir = tmp_path / "bin", tmp_path / "root", tmp_path / "fake", tmp_path / "hooks"
    for d in (bin_dir, root / "stage" / "tok", root / "res" / "live", root / "res" / "waiting", fake, hook_dir):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEVICE / "cells.sh", bin_dir / "cells.sh")
    (bin_dir / "plan.txt").write_text(plan)
    (root / "stage" / "model.gguf").write_bytes(b"gguf")
    calls, code_file = tmp_path / "calls.txt", tmp_path / "codes.txt"
    code_file.write_text("".join(f"{c}\n" for c in codes))
    python = fake / "python"
    for name in neighbours:
        (root / "res" / "live" / name).touch()
    for name in waiting:
        (root / "res" / "waiting" / name).touch()
    for n, line in (hooks or {}).items():
        (hook_dir / str(n)).write_text(line + "\n")
    python.write_text(FAKE_PYTHON.format(real=sys.executable, calls=calls, codes=code_file, hooks=hook_dir))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    extra_env = env or {}
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "CELLS_ROOT": str(root), "CELLS_POLL": "0.1",
           "CELLS_CPUS": "16"}
    env.pop("MB_FRACTION", None)
    env.pop("OMP_NUM_THREADS", None)
    env.update(extra_env)
    done = subprocess.run(["bash", str(bin_dir / "cells.sh"), alias, "model.gguf", "tok"], env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    eval_calls = calls.read_text().splitlines() if calls.exists() else []
    times = (root / "res" / "times.txt").read_text().splitlines() if (root / "res" / "times.txt").exists() else []
    return eval_calls, times


def _arg(call: str, flag: str) -> str:
    """The value after `flag` in a logged eval command line."""
    args = call.split()
    return args[args.index(flag) + 1]


def test_cells_runs_the_plans_suites_with_their_dtype_count_and_an_equal_gpu_share(tmp_path):
    plan = "qwen2.5-coder-0.5b: update harvest/50\nsmollm2-135m: harvest@float64\n"
    calls, times = _cells(tmp_path, plan, "smollm2-135m", [0])
    assert len(calls) == 1 and len(times) == 1
    args = calls[0].split()
    assert args[:4] == ["-m", "matbench", "eval", "--model"] and _arg(calls[0], "--suite") == "harvest"
    assert _arg(calls[0], "--dtype") == "float64" and _arg(calls[0], "--limit") == "32"
    assert _arg(calls[0], "--memory-fraction") == "0.45"  # two chains in the plan
    assert _arg(calls[0], "--chunk-size") == "4096" and "--batch-pairs" not in args
    assert times[0].startswith("smollm2-135m harvest float64 n=32 rc=0 tries=1 ")

    calls, times = _cells(tmp_path / "coder", plan, "qwen2.5-coder-0.5b", [0, 0])
    suites = [(_arg(c, "--suite"), _arg(c, "--limit"), _arg(c, "--dtype")) for c in calls]
    assert suites == [("update", "32", "float32"), ("harvest", "50", "float32")]
    assert [t.split()[:4] for t in times] == [["qwen2.5-coder-0.5b", "update", "float32", "n=32"],
                                              ["qwen2.5-coder-0.5b", "harvest", "float32", "n=50"]]


def test_cells_passes_an_audits_readout_and_eval_arguments_to_every_cell(tmp_path):
    plan = "gemma3-270m: discovery | access\n"
    extra = "--policy snapkv --policy knorm --budget 0.5,0.875 --source-mode natural,evicted"
    calls, times = _cells(tmp_path, plan, "gemma3-270m", [0, 0], env={"READOUT": "probe", "EVAL_ARGS": extra})
    assert sorted(_arg(c, "--suite") for c in calls) == ["access", "discovery"] and len(times) == 2
    for call in calls:
        assert _arg(call, "--readout") == "probe" and f" {extra} --output " in call
    calls, _ = _cells(tmp_path / "plain", "gemma3-270m: update\n", "gemma3-270m", [0])
    assert _arg(calls[0], "--readout") == "all" and "--policy" not in calls[0]
    # EVAL_ARGS_<suite>: options for that suite's cells alone, after the common ones
    calls, _ = _cells(tmp_path / "per-suite", plan, "gemma3-270m", [0, 0],
                      env={"EVAL_ARGS": "--budget 0.5", "EVAL_ARGS_access": "--policy merging"})
    by_suite = {_arg(c, "--suite"): c for c in calls}
    assert " --budget 0.5 --policy merging --output " in by_suite["access"]
    assert " --budget 0.5 --output " in by_suite["discovery"] and "merging" not in by_suite["discovery"]


def test_cells_resumes_once_at_one_pair_a_batch_and_gives_up_when_alone(tmp_path):
    plan = "gemma3-270m: update\n"
    calls, times = _cells(tmp_path, plan, "gemma3-270m", [3, 3, 3])
    assert len(calls) == 2  # the first try and one resume; no neighbour to wait for, so it gives up
    assert "--batch-pairs" not in calls[0] and calls[1].endswith(" --batch-pairs 1 --output " + _arg(calls[1], "--output") + " OMP=16")
    assert [_arg(c, "--memory-fraction") for c in calls] == ["0.9", "0.9"]  # the one chain
    assert len(times) == 1 and times[0].startswith("gemma3-270m update float32 n=32 rc=3 tries=2 ")
    assert not (tmp_path / "root" / "res" / "live" / "gemma3-270m").exists()  # its mark is gone
    calls, times = _cells(tmp_path / "again", plan, "gemma3-270m", [3, 0])
    assert len(calls) == 2 and times[0].startswith("gemma3-270m update float32 n=32 rc=0 tries=2 ")


def test_cells_out_of_memory_twice_waits_for_a_neighbour_and_resumes_at_the_larger_share(tmp_path):
    plan = "qwen2.5-coder-0.5b: update\nsmollm2-135m: harvest@float64\n"
    live = tmp_path / "root" / "res" / "live" / "qwen2.5-coder-0.5b"
    # the neighbour finishes two seconds into the second eval's wait, not before it
    calls, times = _cells(tmp_path, plan, "smollm2-135m", [3, 3, 0], neighbours=("qwen2.5-coder-0.5b",),
                          hooks={2: f"(sleep 2; rm {live}) > /dev/null 2>&1 &"})
    assert [_arg(c, "--memory-fraction") for c in calls] == ["0.45", "0.45", "0.9"]
    assert [("--batch-pairs" in c) for c in calls] == [False, True, True]
    assert times[0].startswith("smollm2-135m harvest float64 n=32 rc=0 tries=3 ")
    # beside a neighbour that never finishes, MB_FRACTION fixed: no waiting, it gives up
    calls, times = _cells(tmp_path / "fixed", plan, "smollm2-135m", [3, 3, 0], neighbours=("qwen2.5-coder-0.5b",),
                          env={"MB_FRACTION": "0.45"})
    assert len(calls) == 2 and times[0].startswith("smollm2-135m harvest float64 n=32 rc=3 tries=2 ")


def test_chains_all_out_of_memory_do_not_wait_for_each_other(tmp_path):
    # the eighth session: Gemma and Qwen, both out of memory twice at 0.2, each waited for the other
    plan = "gemma3-270m: harvest%0.2\nqwen2.5-coder-0.5b: harvest%0.2\n"
    waiting = tmp_path / "root" / "res" / "waiting"
    calls, times = _cells(tmp_path, plan, "gemma3-270m", [3, 3, 0], neighbours=("qwen2.5-coder-0.5b",),
                          waiting=("qwen2.5-coder-0.5b",))
    # every live chain waits and gemma3-270m is the first by name: it resumes alone at the whole 0.9
    assert [_arg(c, "--memory-fraction") for c in calls] == ["0.2", "0.2", "0.9"]
    assert times[0].startswith("gemma3-270m harvest float32 n=32 rc=0 tries=3 ")
    assert sorted(p.name for p in waiting.iterdir()) == ["qwen2.5-coder-0.5b"]  # its own mark is gone
    # out of memory alone at 0.9 too: it gives up rather than wait again
    calls, times = _cells(tmp_path / "alone", plan, "gemma3-270m", [3, 3, 3, 0], neighbours=("qwen2.5-coder-0.5b",),
                          waiting=("qwen2.5-coder-0.5b",))
    assert len(calls) == 3 and times[0].startswith("gemma3-270m harvest float32 n=32 rc=3 tries=3 ")


def test_a_chain_not_first_by_name_waits_while_another_chain_still_runs(tmp_path):
    plan = "gemma3-270m: update\nqwen2.5-coder-0.5b: update\nsmollm2-135m: harvest@float64\n"
    live = tmp_path / "root" / "res" / "live" / "qwen2.5-coder-0.5b"
    # gemma3-270m waits, qwen2.5-coder-0.5b runs and finishes a second into the wait: smollm2-135m
    # resumes at the share of the two chains left, not alone
    calls, times = _cells(tmp_path, plan, "smollm2-135m", [3, 3, 0], neighbours=("gemma3-270m", "qwen2.5-coder-0.5b"),
                          waiting=("gemma3-270m",), hooks={2: f"(sleep 1; rm {live}) > /dev/null 2>&1 &"})
    assert [_arg(c, "--memory-fraction") for c in calls] == ["0.3", "0.3", "0.45"]
    assert times[0].startswith("smollm2-135m harvest float64 n=32 rc=0 tries=3 ")


def test_a_plan_entry_may_name_a_template_and_a_yarn_factor(tmp_path):
    calls, times = _cells(tmp_path, "smollm2-135m: discovery+para edge_swap+para@float64/40 access harvest~4@float64\n",
                          "smollm2-135m", [0, 0, 0, 0])
    assert [(_arg(c, "--suite"), _arg(c, "--limit"), _arg(c, "--dtype")) for c in calls] == [
        ("discovery", "32", "float32"), ("edge_swap", "40", "float64"), ("access", "32", "float32"),
        ("harvest", "32", "float64")]
    assert [_arg(c, "--template") for c in calls[:2]] == ["para", "para"] and "--template" not in calls[2]
    assert _arg(calls[3], "--rope-yarn") == "4" and all("--rope-yarn" not in c for c in calls[:3])
    assert [t.split()[1:4] for t in times] == [["discovery+para", "float32", "n=32"],
                                               ["edge_swap+para", "float64", "n=40"], ["access", "float32", "n=32"],
                                               ["harvest~4", "float64", "n=32"]]


def test_a_plan_entry_may_set_its_own_gpu_cap_until_a_neighbour_finishes(tmp_path):
    plan = "smollm2-135m: harvest~4@float64%0.62 | harvest_freeform@float64/40%0.3 discovery\n"
    calls, times = _cells(tmp_path, plan, "smollm2-135m", [0, 0, 0])
    caps = {(_arg(c, "--suite"), _arg(c, "--limit")): _arg(c, "--memory-fraction") for c in calls}
    assert caps == {("harvest", "32"): "0.62", ("harvest_freeform", "40"): "0.3", ("discovery", "32"): "0.45"}
    assert sorted(t.split()[1:4] for t in times) == [["discovery", "float32", "n=32"],
                                                     ["harvest_freeform", "float64", "n=40"],
                                                     ["harvest~4", "float64", "n=32"]]
    # out of memory twice: once the neighbour is gone the cell resumes at the share of those live
    live = tmp_path / "again" / "root" / "res" / "live" / "gemma3-270m"
    calls, _ = _cells(tmp_path / "again", "smollm2-135m: harvest@float64%0.2\ngemma3-270m: update\n",
                      "smollm2-135m", [3, 3, 0], neighbours=("gemma3-270m",),
                      hooks={2: f"(sleep 1; rm {live}) > /dev/null 2>&1 &"})
    assert [_arg(c, "--memory-fraction") for c in calls] == ["0.2", "0.2", "0.9"]


def test_a_plan_line_splits_into_groups_that_run_side_by_side(tmp_path):
    plan = "smollm2-135m: phantom_erase note_knob | var_tracking | sliding_window\ngemma3-270m: update\n"
    # the first three evals to start each wait until three chains are live at once (or were): the
    # groups do run side by side. Only the first eval waited before, and a chain whose eval returned
    # at once could end (its live mark gone) before the third began: on a loaded CI machine it did.
    live, met = tmp_path / "root" / "res" / "live", tmp_path / "met"
    wait = (f"for i in $(seq 600); do {{ [ -f {met} ] || [ $(ls {live} | wc -l) -ge 3 ]; }} && touch {met} && exit 0; "
            f"sleep 0.1; done; echo never > {tmp_path}/not_side_by_side")
    calls, times = _cells(tmp_path, plan, "smollm2-135m", [0, 0, 0, 0], hooks={1: wait, 2: wait, 3: wait})
    assert not (tmp_path / "not_side_by_side").exists()
    suites = [_arg(c, "--suite") for c in calls]
    assert sorted(suites) == ["note_knob", "phantom_erase", "sliding_window", "var_tracking"]
    assert suites.index("phantom_erase") < suites.index("note_knob")  # one group keeps its order
    assert {_arg(c, "--memory-fraction") for c in calls} == {"0.23"}  # four chains in the plan
    assert {c.split()[-1] for c in calls} == {"OMP=4"}  # 16 cores shared by the four chains
    assert len(times) == 4 and list(live.iterdir()) == []  # every group's mark is gone


def test_harvest_freeform_reads_the_dialogs_and_is_judged_by_the_model_itself(tmp_path):
    calls, _ = _cells(tmp_path, "gemma3-270m: harvest_freeform discovery\n", "gemma3-270m", [0, 0])
    assert _arg(calls[0], "--judge") == "gemma3-270m" and _arg(calls[0], "--chunk-size") == "4096"
    assert _arg(calls[0], "--locomo").endswith("/data/locomo/locomo10.json") and "--judge" not in calls[1]


def test_cells_runs_nothing_for_a_model_without_a_plan_line(tmp_path):
    calls, times = _cells(tmp_path, "gemma3-270m: update\n", "smollm2-135m", [])
    assert calls == [] and times == []


def _manifest(files: dict[str, bytes]) -> list[dict]:
    return [{"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()]


def test_stage_cuts_each_file_out_once_complete_and_unpacks_the_partial_logs(tmp_path):
    logs = tmp_path / "logs"
    (logs / "res" / "m").mkdir(parents=True)
    (logs / "res" / "m" / "update_probe_compact.items.jsonl").write_text('{"item_id": "x"}\n')
    with tarfile.open(tmp_path / "partial.tgz", "w:gz") as tar:
        tar.add(logs / "res", "res")
    files = {"partial.tgz": (tmp_path / "partial.tgz").read_bytes(), "a.gguf": os.urandom(3000),
             "b.gguf": os.urandom(5000)}
    bin_dir, stage_dir, root = tmp_path / "bin", tmp_path / "stage", tmp_path / "root"
    bin_dir.mkdir()
    shutil.copy(DEVICE / "stage.py", bin_dir / "stage.py")
    (bin_dir / "manifest.json").write_text(json.dumps(_manifest(files)))
    stream = b"".join(files.values())
    cuts = [len(files["partial.tgz"]) + 1000, len(files["partial.tgz"]) + 4000, len(stream)]
    env = {**os.environ, "STAGE_DIR": str(stage_dir), "STAGE_ROOT": str(root), "STAGE_DRY": "1"}
    ready = []
    start = 0
    for k, end in enumerate(cuts):
        chunk = tmp_path / f"part{k:02d}"
        chunk.write_bytes(stream[start:end])
        start = end
        for _ in range(2):  # a chunk delivered twice is appended once
            done = subprocess.run([sys.executable, str(bin_dir / "stage.py"), str(chunk)], env=env,
                                  capture_output=True, text=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
        ready.append(sorted(p.name for p in stage_dir.iterdir() if p.suffix in (".gguf", ".tgz")))
    assert ready == [["partial.tgz"], ["a.gguf", "partial.tgz"], ["a.gguf", "b.gguf", "partial.tgz"]]
    assert (stage_dir / "stream.bin").stat().st_size == len(stream)
    assert all((stage_dir / n).read_bytes() == b for n, b in files.items())
    assert (root / "res" / "m" / "update_probe_compact.items.jsonl").read_text() == '{"item_id": "x"}\n'


def test_stage_refuses_a_file_whose_bytes_do_not_match_the_manifest(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(DEVICE / "stage.py", bin_dir / "stage.py")
    (bin_dir / "manifest.json").write_text(json.dumps(_manifest({"a.gguf": b"right bytes"})))
    (tmp_path / "part00").write_bytes(b"wrong bytes")
    env = {**os.environ, "STAGE_DIR": str(tmp_path / "stage"), "STAGE_ROOT": str(tmp_path), "STAGE_DRY": "1"}
    done = subprocess.run([sys.executable, str(bin_dir / "stage.py"), str(tmp_path / "part00")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and done.stderr.strip() == "a.gguf: sha256 mismatch"
    assert not (tmp_path / "stage" / "a.gguf").exists()


@pytest.mark.parametrize("script", ["cells.sh", "pack.sh", "call.sh", "slim.sh"])
def test_the_shell_scripts_parse(script):
    assert subprocess.run(["bash", "-n", str(DEVICE / script)], check=False).returncode == 0


def test_slim_takes_the_results_off_the_index_and_puts_them_back(tmp_path):
    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True).stdout

    for path in ("results/contract/m/a.json", "results/experiments/m/a.json", "results/audit/m/a.json",
                 "leaderboard/submissions/h/a.json", "matbench/x.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(path)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    exclude = tmp_path / ".git" / "info" / "exclude"
    exclude.write_text("/.gpu/\n")
    slim = str(DEVICE / "slim.sh")

    def run(arg):
        return subprocess.run(["bash", slim, arg], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)

    assert run("on").returncode == 0
    assert git("ls-files").split() == ["matbench/x.py"]  # only the code travels
    assert git("status", "--short", "--untracked-files=all").count("??") == 0  # ignored, not untracked
    assert (tmp_path / "results/contract/m/a.json").read_text() == "results/contract/m/a.json"  # still on disk
    assert run("on").stdout.strip() == "slim: already on"
    (tmp_path / "matbench/x.py").write_text("changed")  # committing anything while on is refused
    refused = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 1 and "slim.sh is on" in refused.stderr and len(git("log", "--format=%h").split()) == 1
    git("checkout", "--", "matbench/x.py")
    assert run("off").returncode == 0
    assert not (tmp_path / ".git/hooks/pre-commit").exists()
    assert git("status", "--short") == "" and exclude.read_text() == "/.gpu/\n"
    (tmp_path / "results/contract/m/b.json").write_text("new")  # an uncommitted result: refused
    done = run("on")
    assert done.returncode == 1 and "uncommitted changes" in done.stderr and len(git("ls-files").split()) == 5


def _integrate_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("integrate", DEVICE / "integrate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _contract_cell_in_res(tmp_path: Path, name: str = "discovery_probe_native") -> Path:
    """A finished Gemma cell (the contract's results file and log) under tmp_path/res, as a device
    call leaves it; the contract folder it came from."""
    contract = Path(__file__).resolve().parent.parent / "results" / "contract" / "gemma3-270m"
    res = tmp_path / "res" / "gemma3-270m"
    res.mkdir(parents=True)
    for suffix in (".json", ".items.jsonl"):
        shutil.copy(contract / (name + suffix), res)
    return contract


def test_integrate_takes_finished_cells_refuses_failed_gates_and_keeps_unfinished_logs(tmp_path, monkeypatch, capsys):
    contract = Path(__file__).resolve().parent.parent / "results" / "contract" / "gemma3-270m"
    name = "discovery_probe_native"
    (tmp_path / "results" / "contract" / "gemma3-270m").mkdir(parents=True)
    res = tmp_path / "pack" / "res" / "gemma3-270m"
    res.mkdir(parents=True)
    for suffix in (".json", ".items.jsonl"):
        shutil.copy(contract / (name + suffix), tmp_path / "results" / "contract" / "gemma3-270m")
        shutil.copy(contract / (name + suffix), res)
    # a cell whose gate failed (its claims edited), and an unfinished cell (a log, no results file)
    failed = json.loads((contract / "trigger_probe_native.json").read_text())
    failed["gates"]["A"]["passed"] -= 1
    (res / "trigger_probe_native.json").write_text(json.dumps(failed))
    shutil.copy(contract / "trigger_probe_native.items.jsonl", res)
    lines = (contract / "update_probe_native.items.jsonl").read_text().splitlines()[:7]
    (res / "update_probe_native.items.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "pack" / "res" / "times.txt").write_text("gemma3-270m discovery float32 n=32 rc=0 tries=1 9s\n")
    experiments = tmp_path / "results" / "experiments"
    experiments.mkdir()
    (experiments / "README.md").write_text("# intro\n\n### stale\n| old |\n")
    with tarfile.open(tmp_path / "res.tgz", "w:gz") as tar:
        tar.add(tmp_path / "pack" / "res", "res")
    monkeypatch.chdir(tmp_path)

    code = _integrate_module().main([str(tmp_path / "res.tgz"), "--submissions", str(tmp_path / "subs")])

    out = capsys.readouterr().out
    assert code == 1  # the refused cell
    assert "trigger_probe_native.json: 32 items" in out and "REFUSED: gate A failed" in out
    assert "32 items shared with the contract: classes 128/128, max shift diff 0.0e+00 (ok)" in out
    assert (experiments / "gemma3-270m" / f"{name}.json").read_bytes() == (contract / f"{name}.json").read_bytes()
    assert not (experiments / "gemma3-270m" / "trigger_probe_native.json").exists()
    stored = sorted(p.name for p in (tmp_path / "subs").glob("*/*"))
    assert stored == [f"{name}.items.jsonl", f"{name}.json"]
    partial = tmp_path / "results" / "partial" / "gemma3-270m" / "update_probe_native.items.jsonl"
    assert partial.read_text().splitlines() == lines
    readme = (experiments / "README.md").read_text()
    assert readme.startswith("# intro\n\n### discovery\n") and "| old |" not in readme
    assert readme.count("| gemma3-270m | probe | native | float32 | 32 |") == 1


def test_integrate_drop_heads_strips_unfinished_logs_too(tmp_path, monkeypatch, capsys):
    # an unfinished policy cell's log whose selections carry per-head bits: the next session resumes
    # from it, and reads records, never bits (stop 34's SmolLM2 logs: 53 MB with them)
    audit = Path(__file__).resolve().parent.parent / "results" / "audit" / "gemma3-270m"
    records = [json.loads(line) for line in
               (audit / "access_probe_native_adakv-0.25.items.jsonl").read_text().splitlines()[:3]]
    planted = 0
    for record in records:
        for arm in record["arms"].values():
            if arm.get("selection") is not None:
                arm["selection"]["heads"] = "eJwLAQAAVABU"
                planted += 1
    assert planted >= 3
    res = tmp_path / "res" / "gemma3-270m"
    res.mkdir(parents=True)
    (res / "access_probe_native_adakv-0.25.items.jsonl").write_text("\n".join(map(json.dumps, records)) + "\n")
    with tarfile.open(tmp_path / "res.tgz", "w:gz") as tar:
        tar.add(tmp_path / "res", "res")
    monkeypatch.chdir(tmp_path)

    code = _integrate_module().main(["res.tgz", "--drop-heads", "--submissions", str(tmp_path / "subs")])

    assert code == 0 and "unfinished, 3 items" in capsys.readouterr().out
    kept = (tmp_path / "results/partial/gemma3-270m/access_probe_native_adakv-0.25.items.jsonl").read_text()
    assert "heads" not in kept
    for record in records:  # everything else as it was
        for arm in record["arms"].values():
            (arm.get("selection") or {}).pop("heads", None)
    assert [json.loads(line) for line in kept.splitlines()] == records


def test_integrate_joins_the_pieces_call_sh_cuts_wherever_they_landed(tmp_path, monkeypatch, capsys):
    import lzma

    contract = _contract_cell_in_res(tmp_path)
    whole = io.BytesIO()
    with tarfile.open(fileobj=whole, mode="w") as tar:
        tar.add(tmp_path / "res", "res")
    data = lzma.compress(whole.getvalue())
    size = len(data) // 3 + 1  # three pieces, as `split -b` cuts them, handed back by two calls
    pieces = [data[i:i + size] for i in range(0, len(data), size)]
    assert len(pieces) == 3
    paths = []
    for i, piece in enumerate(pieces):
        folder = tmp_path / ("call1" if i < 2 else "call2")
        folder.mkdir(exist_ok=True)
        paths.append(folder / f"res.txz.{i:02d}")
        paths[-1].write_bytes(piece)
    monkeypatch.chdir(tmp_path)
    integrate = _integrate_module()

    with pytest.raises(SystemExit, match=r"pieces \[0, 2\] of the results: pass every one, 00 to the last"):
        integrate.main([str(paths[2]), str(paths[0]), "--submissions", str(tmp_path / "subs")])
    code = integrate.main([str(paths[2]), str(paths[0]), str(paths[1]), "--submissions", str(tmp_path / "subs")])

    assert code == 0 and "discovery_probe_native.json: 32 items" in capsys.readouterr().out
    copied = tmp_path / "results" / "experiments" / "gemma3-270m" / "discovery_probe_native.json"
    assert copied.read_bytes() == (contract / "discovery_probe_native.json").read_bytes()


def test_integrate_refuses_to_overwrite_a_committed_file_with_other_content(tmp_path, monkeypatch, capsys):
    _contract_cell_in_res(tmp_path)
    committed = tmp_path / "results" / "experiments" / "gemma3-270m" / "discovery_probe_native.json"
    committed.parent.mkdir(parents=True)
    committed.write_text("{}")
    with tarfile.open(tmp_path / "res.tgz", "w:gz") as tar:
        tar.add(tmp_path / "res", "res")
    monkeypatch.chdir(tmp_path)

    code = _integrate_module().main(["res.tgz", "--submissions", str(tmp_path / "subs")])

    assert code == 1 and committed.read_text() == "{}"
    assert "exists with other content (--replace overwrites it)" in capsys.readouterr().out
    assert not (tmp_path / "subs").exists()


def test_integrate_refuses_a_file_whose_log_fails_its_checks_and_copies_nothing(tmp_path, monkeypatch, capsys):
    contract = Path(__file__).resolve().parent.parent / "results" / "contract" / "gemma3-270m"
    res = tmp_path / "res" / "gemma3-270m"
    res.mkdir(parents=True)
    shutil.copy(contract / "discovery_probe_native.json", res)
    lines = (contract / "discovery_probe_native.items.jsonl").read_text().splitlines()
    (res / "discovery_probe_native.items.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # a record lost
    with tarfile.open(tmp_path / "res.tgz", "w:gz") as tar:
        tar.add(tmp_path / "res", "res")
    monkeypatch.chdir(tmp_path)

    code = _integrate_module().main(["res.tgz", "--submissions", str(tmp_path / "subs")])

    out = capsys.readouterr().out
    assert code == 1 and out.count("REFUSED: ") == 1 and "sha256" in out.split("REFUSED: ")[1]
    assert not (tmp_path / "results" / "experiments").exists() and not (tmp_path / "subs").exists()
