"""`matbench merge`: two shards run into two folders merge into the log (byte for byte) and the
results (all but what describes the attempts) of one process over the same items; shards that are
not one whole run are refused in one line, and the shard files are left as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.results.arms import run_summary, wrapped
from matbench.results.schema import read_results
from matbench.results.verdicts import LEGEND
from tests.test_cli import one_line_error

STEM = "discovery_probe_compact"
# What describes the attempts, not the records (docs/running.md, "Several machines").
ATTEMPT_FIELDS = ("wall_seconds", "resources", "invocation", "merged", "environment")


@pytest.fixture(scope="module")
def runs(tiny_dir, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merge")
    args = ["eval", "--model", str(tiny_dir), "--limit", "5", "--check", "--no-progress"]
    assert main([*args, "--output", str(root / "one")]) == 0
    for index, folder in ((0, "a"), (1, "b")):
        assert main([*args, "--shard", f"{index}/2", "--output", str(root / folder)]) == 0
    assert main([*args, "--shard", "1/2", "--chunk-size", "7", "--output", str(root / "other")]) == 0
    assert main([*args[:-2], "--no-progress", "--shard", "1/2", "--output", str(root / "unchecked")]) == 0
    return root


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_shards_merge_into_what_one_process_writes(runs, capsys):
    before = {f: _snapshot(runs / f) for f in ("a", "b")}
    assert main(["merge", str(runs / "a"), str(runs / "b"), "--output", str(runs / "merged")]) == 0
    printed = capsys.readouterr().out
    merged_results = read_results(runs / "merged" / f"{STEM}.json")
    assert printed.strip().splitlines() == [
        f"merged 2 shards into {runs / 'merged'}",
        "",
        *run_summary(merged_results, runs / "merged"),
        "",
        *wrapped(LEGEND),
    ]
    assert {f: _snapshot(runs / f) for f in ("a", "b")} == before  # the shards are left as they were

    log = (runs / "merged" / f"{STEM}.items.jsonl").read_bytes()
    assert log == (runs / "one" / f"{STEM}.items.jsonl").read_bytes()
    one = json.loads((runs / "one" / f"{STEM}.json").read_text())
    merged = json.loads((runs / "merged" / f"{STEM}.json").read_text())
    assert merged["metrics"] == one["metrics"] and merged["gates"] == one["gates"]
    assert merged["gates"]["A"]["checked"] == 5
    assert {k: v for k, v in merged.items() if k not in ATTEMPT_FIELDS} == {
        k: v for k, v in one.items() if k not in ATTEMPT_FIELDS
    }  # config, hash, items (sha256 too), version
    assert {k: v for k, v in merged["invocation"].items() if k != "output"} == {
        k: v for k, v in one["invocation"].items() if k != "output"
    }
    assert merged["invocation"]["output"] == str(runs / "merged")

    # The attempt fields: every shard's, read from its attempts file.
    shards = []
    for folder, index in (("a", 0), ("b", 1)):
        lines = (runs / folder / f"{STEM}.attempts.rank{index}.jsonl").read_text().splitlines()
        shards.append({json.loads(line)["attempt"]: json.loads(line) for line in lines})
    wall = [round(sum(a["wall_seconds"] for a in s.values()), 2) for s in shards]
    peak = [max(a["peak_memory_gib"] for a in s.values()) for s in shards]
    assert merged["wall_seconds"] == round(sum(wall), 2)
    assert merged["resources"]["peak_memory_gib"] == max(peak)
    assert (merged["resources"]["attempts"], merged["resources"]["processes"]) == (2, 2)
    parts = merged["merged"]["shards"]
    assert [(p["shard"], p["n_items"], p["wall_seconds"], p["attempts"]) for p in parts] == [
        (0, 2, wall[0], 1),
        (1, 3, wall[1], 1),
    ]
    assert merged["environment"] == parts[0]["environment"]

    # Merging again writes the same; rescore reads the merged file like any other.
    assert main(["merge", str(runs / "a"), str(runs / "b"), "--output", str(runs / "merged"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "readout": "probe",
        "serving": "compact",
        "shards": 2,
        **one["metrics"]["headline"],
    }
    assert (runs / "merged" / f"{STEM}.items.jsonl").read_bytes() == log
    assert main(["rescore", str(runs / "merged" / f"{STEM}.json")]) == 0
    capsys.readouterr()


def _refused(argv, capsys) -> str:
    code = main(["merge", *argv])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2
    return line


def test_shards_that_are_not_one_whole_run_are_refused(runs, tmp_path, capsys):
    line = _refused([str(runs / "a"), "--output", str(tmp_path / "m")], capsys)
    assert f"{STEM}: shard 1/2 (items 3-5 of 5 in the order shards take them) is missing" in line
    line = _refused([str(runs / "a"), str(runs / "other"), "--output", str(tmp_path / "m")], capsys)
    assert "ran different configurations (chunk_size: None vs 7); run the shards with the same options" in line
    line = _refused([str(runs / "a"), str(runs / "unchecked"), "--output", str(tmp_path / "m")], capsys)
    assert "ran different configurations (--limit, --check or --check-pairs differ)" in line  # same hash
    line = _refused([str(runs / "a"), str(runs / "b"), str(runs / "b"), "--output", str(tmp_path / "m")], capsys)
    assert "shard 1/2 is in both" in line

    def copy(folder: str, edit=None) -> Path:
        target = tmp_path / f"copy-{folder}"
        target.mkdir(exist_ok=True)
        for name, data in _snapshot(runs / folder).items():
            (target / name).write_bytes(data)
        if edit:
            path = target / f"{STEM}.items.rank1.jsonl"
            path.write_text(edit(path.read_text()))
        return target

    cut = copy("b", lambda text: "".join(text.splitlines(keepends=True)[:-1]))  # killed before its last item
    line = _refused([str(runs / "a"), str(cut), "--output", str(tmp_path / "m")], capsys)
    assert "shard 1/2 in" in line and "lacks 1 of its 3 items" in line and "it has not finished" in line

    first = json.loads((runs / "a" / f"{STEM}.items.rank0.jsonl").read_text().splitlines()[0])
    first["arms"]["root"]["shift"] += 1.0  # the same item, logged again with other numbers
    twice = copy("b", lambda text: text + json.dumps(first, sort_keys=True) + "\n")
    line = _refused([str(runs / "a"), str(twice), "--output", str(tmp_path / "m")], capsys)
    assert f"item {first['item_id']} was logged with different content" in line
    assert not (tmp_path / "m").exists()  # refused before anything was written

    line = _refused([str(tmp_path / "nothing-here"), "--output", str(tmp_path / "m")], capsys)
    assert "is not a folder" in line


def _copy(source: Path, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name, data in _snapshot(source).items():
        (target / name).write_bytes(data)
    return target


def _relabel_device(folder: Path, index: int, device: str) -> None:
    """Make a shard read as run on `device`: its description's config and machine, as a GPU
    shard's are (results/cpu-gpu-merge holds the real CPU + H200 merge)."""
    path = folder / f"{STEM}.shard.rank{index}.jsonl"
    described = json.loads(path.read_text())
    described["config"]["model"]["device"] = device
    described["config"]["model"]["location"] = "/elsewhere/tiny"  # another machine's path
    described["environment"]["gpu"] = "NVIDIA H200"
    path.write_text(json.dumps(described, sort_keys=True) + "\n")


def test_shards_run_on_a_cpu_and_a_gpu_merge_naming_both_devices(runs, tmp_path, capsys):
    gpu = _copy(runs / "b", tmp_path / "gpu")
    _relabel_device(gpu, 1, "cuda")
    assert main(["merge", str(runs / "a"), str(gpu), "--output", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert (tmp_path / "m" / f"{STEM}.items.jsonl").read_bytes() == (runs / "one" / f"{STEM}.items.jsonl").read_bytes()
    one = json.loads((runs / "one" / f"{STEM}.json").read_text())
    merged = json.loads((tmp_path / "m" / f"{STEM}.json").read_text())
    assert merged["config"]["model"]["device"] == "cpu+cuda" and one["config"]["model"]["device"] == "cpu"
    merged["config"]["model"]["device"] = "cpu"
    assert {k: v for k, v in merged.items() if k not in ATTEMPT_FIELDS} == {
        k: v for k, v in one.items() if k not in ATTEMPT_FIELDS
    }  # the same key, metrics, gates, items
    assert [(p["environment"]["gpu"], p["device"], p["location"]) for p in merged["merged"]["shards"]] == [
        (None, "cpu", one["config"]["model"]["location"]),
        ("NVIDIA H200", "cuda", "/elsewhere/tiny"),
    ]

    # Another dtype or attention kernel is another configuration, named.
    _relabel_device(gpu, 1, "cuda")
    path = gpu / f"{STEM}.shard.rank1.jsonl"
    described = json.loads(path.read_text())
    described["config"]["model"]["attn_implementation"] = "eager"
    path.write_text(json.dumps(described, sort_keys=True) + "\n")
    line = _refused([str(runs / "a"), str(gpu), "--output", str(tmp_path / "n")], capsys)
    assert "is not its config's; the description was edited or damaged" in line  # its hash is the old config's
    from matbench.results.files import run_key

    described["config_hash"] = run_key(described["config"])
    path.write_text(json.dumps(described, sort_keys=True) + "\n")
    line = _refused([str(runs / "a"), str(gpu), "--output", str(tmp_path / "n")], capsys)
    assert (
        "ran different configurations (model.attn_implementation: sdpa_grouped vs eager); run the shards "
        "with the same options (--dtype, --attn-implementation, --decode-graphs, --fused-kernels: their "
        "defaults differ on CPU and GPU)" in line
    )


def test_a_log_keyed_with_its_device_resumes_under_the_new_key(runs, tiny_dir, tmp_path, capsys):
    """Logs and attempts of matbench before schema 1.15 (the device in the key) are re-keyed in
    place when the run resumes: nothing is scored again and nothing is lost."""
    from matbench.results.files import legacy_run_key, run_key

    old = _copy(runs / "one", tmp_path / "old")
    config = json.loads((old / f"{STEM}.json").read_text())["config"]
    new_key, old_key = run_key(config), legacy_run_key(config)
    assert new_key != old_key
    for name in (f"{STEM}.items.jsonl", f"{STEM}.attempts.jsonl"):
        text = (old / name).read_text()
        assert text.count(f'"{new_key}"') == len(text.splitlines()) > 0
        (old / name).write_text(text.replace(f'"{new_key}"', f'"{old_key}"'))
    (old / f"{STEM}.items.jsonl").open("a").write('{"item_id": "cut sh')  # a killed writer's last line
    (old / f"{STEM}.json").unlink()
    args = ["eval", "--model", str(tiny_dir), "--limit", "5", "--check", "--no-progress", "--output", str(old)]
    assert main(args) == 0
    capsys.readouterr()
    assert (old / f"{STEM}.items.jsonl").read_bytes() == (runs / "one" / f"{STEM}.items.jsonl").read_bytes()
    resumed = json.loads((old / f"{STEM}.json").read_text())
    one = json.loads((runs / "one" / f"{STEM}.json").read_text())
    assert resumed["config_hash"] == new_key and resumed["metrics"] == one["metrics"]
    assert resumed["items"]["n_from_log"] == 5
    # The first attempt's totals, read from its re-keyed line (this one logged nothing: it adds none).
    assert (resumed["wall_seconds"], resumed["resources"]["attempts"]) == (one["wall_seconds"], 1)


def test_rekey_lines_changes_only_the_old_key(tmp_path):
    from matbench.results.files import rekey_lines

    path = tmp_path / "log.jsonl"
    text = '{"config_hash": "aaaa", "x": "aaaa"}\n{"config_hash": "bbbb"}\n\n{"config_hash": "aa'
    path.write_text(text)
    assert rekey_lines(path, "aaaa", "cccc") == 1
    assert path.read_text() == text.replace('"config_hash": "aaaa"', '"config_hash": "cccc"')  # x is kept
    assert rekey_lines(path, "aaaa", "cccc") == 0 and rekey_lines(tmp_path / "none", "a", "b") == 0


CPU_GPU = Path(__file__).resolve().parent / "data" / "cpu-gpu-merge"


def test_a_cpu_shard_and_an_h200_shard_merge_into_the_file_one_process_writes(tmp_path, capsys):
    """SmolLM2-135M, discovery, 32 pairs, every readout (results/cpu-gpu-merge/README.md): shard
    0/2 ran on a 2-core CPU, shard 1/2 on an H200 (float32, sdpa_grouped), and `one-process` is
    what a single CPU process wrote from the merged records (the log copied into an empty folder,
    the same `matbench eval` resumed there: nothing left to score)."""
    assert main(["merge", str(CPU_GPU / "cpu-shard0"), str(CPU_GPU / "gpu-shard1"), "--output", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"merged 2 shards of 5 results files into {tmp_path}"
    assert sum(line.startswith("merged ") for line in printed) == 1 and printed.count("") >= 5
    expected = sorted((CPU_GPU / "one-process").glob("*.json"))
    assert [p.name for p in expected] == [
        f"discovery_{r}_compact.json" for r in ("logit", "menu", "probe", "short", "trace")
    ]
    for path in expected:
        stem = path.name.removesuffix(".json")
        assert (tmp_path / f"{stem}.items.jsonl").read_bytes() == (
            CPU_GPU / "one-process" / f"{stem}.items.jsonl"
        ).read_bytes()
        one, merged = json.loads(path.read_text()), json.loads((tmp_path / path.name).read_text())
        assert (one["config"]["model"]["device"], merged["config"]["model"]["device"]) == ("cpu", "cpu+cuda")
        assert [(p["device"], p["environment"]["gpu"]) for p in merged["merged"]["shards"]] == [
            ("cpu", None),
            ("cuda", "NVIDIA H200"),
        ]
        merged["config"]["model"]["device"] = "cpu"
        # n_from_log too describes the attempt: the process found all 32 in its log, the shards none
        assert (one["items"].pop("n_from_log"), merged["items"].pop("n_from_log")) == (32, 0)
        assert {k: v for k, v in merged.items() if k not in ATTEMPT_FIELDS} == {
            k: v for k, v in one.items() if k not in ATTEMPT_FIELDS
        }
        assert merged["gates"]["A"] == {**merged["gates"]["A"], "checked": 32, "passed": 32}
