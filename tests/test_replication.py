"""`matbench replicate`: a suite under fresh seeds, each metric's verdict per seed, and agreement."""

from __future__ import annotations

import json

import pytest

from matbench.cli import main
from matbench.evaluators import EVALUATORS
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.results.replication import replication, replication_markdown, verdict

SHIFT = Metric("s", "s", "shift", "d", Scale.SHIFT, Format.SIGNED_CI)
ACC = Metric("a", "a", "acc", "d", Scale.ACCURACY, Format.RATE_CI, chance=0.5, fields=("accuracy", "ci"))
CLASSES = Metric("c", "c", "f:a", "d", Scale.FOLLOW, Format.CLASSES)
CHECK = Metric("k", "k", "clean", "d", Scale.CHECK, Format.BOOL)
PLAIN = Metric("n", "n", "n", "d", Scale.ACCURACY)


@pytest.mark.parametrize(
    "metric,value,expected",
    [
        (SHIFT, {"mean": 0.02, "ci": [0.01, 0.03]}, 1),
        (SHIFT, {"mean": -0.02, "ci": [-0.03, -0.01]}, -1),
        (SHIFT, {"mean": 0.02, "ci": [-0.01, 0.05]}, 0),
        (ACC, {"accuracy": 0.6, "ci": [0.51, 0.7]}, 1),  # above chance .5, not above 0
        (ACC, {"accuracy": 0.45, "ci": [0.3, 0.6]}, 0),
        (CLASSES, {"follow": 6, "anti": 0}, 1),  # sign test p = 2 * .5^6 = .031
        (CLASSES, [5, 0], 0),  # p = .0625
        (CLASSES, [0, 7], -1),
        (CHECK, True, True),
        (PLAIN, 0.7, None),
        (SHIFT, None, None),
    ],
)
def test_each_format_has_its_verdict(metric, value, expected):
    assert verdict(metric, value) == expected


def test_seeds_agree_when_every_verdict_is_the_same():
    seeds = {
        1: {"s": {"mean": 0.02, "ci": [0.01, 0.03]}, "c": [6, 0], "k": True, "n": 0.5},
        2: {"s": {"mean": 0.01, "ci": [-0.01, 0.03]}, "c": [9, 0], "k": True, "n": 0.7},
    }
    report = replication(seeds, (SHIFT, CLASSES, CHECK, PLAIN), "probe")
    m = report["metrics"]
    assert m["s"]["agree"] is False and m["s"]["verdicts"] == {1: 1, 2: 0}
    assert m["c"]["agree"] is True and m["k"]["agree"] is True
    assert m["n"]["agree"] is None and m["n"]["per_seed"] == {1: "0.500", 2: "0.700"}
    assert report["agreement"] == {"judged": 3, "agree": 2}
    table = replication_markdown(report)
    assert "| shift | +0.020 [+0.010, +0.030] | +0.010 [-0.010, +0.030] | **no** |" in table
    assert table.endswith("2 of 3 judged metrics agree across seeds 1, 2.")


def test_a_metric_invalid_for_the_readout_is_left_out():
    paper_only = tuple(m for m in EVALUATORS.get("discovery").contract if m.key == "root_classes_paper")
    assert replication({1: {}, 2: {}}, paper_only, "probe")["metrics"] == {}  # generating readouts only
    paper = {"arms": {"root": {"paper_parse": {"classes": {"follow": 7, "anti": 0}}}}}
    trace = replication({1: paper, 2: paper}, paper_only, "trace")
    assert trace["metrics"]["root_classes_paper"]["verdicts"] == {1: 1, 2: 1}


def test_replicate_runs_each_seed_and_writes_the_report(tmp_path, tiny_dir, capsys):
    out = tmp_path / "rep"
    assert (
        main(
            [
                "replicate",
                "--model",
                str(tiny_dir),
                "--suite",
                "discovery",
                "--limit",
                "2",
                "--seeds",
                "3,4",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    for seed in (3, 4):
        results = json.loads((out / f"seed-{seed}" / "discovery_probe_compact.json").read_text())
        assert results["config"]["seed"] == seed and results["config"]["n_items"] == 2
    report = json.loads((out / "replication.json").read_text())
    rep = report["by_readout"]["probe_compact"]
    assert report["suite"] == "discovery" and rep["seeds"] == [3, 4]
    assert rep["metrics"]["control_clean"]["agree"] is True
    assert rep["agreement"]["judged"] == 5  # root and chain f:a, root and chain donor shift, control clean
    printed = capsys.readouterr().out
    assert "## discovery, probe_compact" in printed and "judged metrics agree across seeds 3, 4." in printed
    first = (out / "seed-3" / "discovery_probe_compact.items.jsonl").read_text()
    assert (
        main(
            [
                "replicate",
                "--model",
                str(tiny_dir),
                "--suite",
                "discovery",
                "--limit",
                "2",
                "--seeds",
                "3,4",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )  # resumes: nothing recomputed
    assert (out / "seed-3" / "discovery_probe_compact.items.jsonl").read_text() == first


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--seeds", "1"], "--seeds needs at least two different seeds"),
        (["--seeds", "1,x"], "--seeds takes a comma list of integers"),
        (["--seeds", "1,2", "--suite", "all"], "replicate runs one suite at a time"),
    ],
)
def test_bad_replications_are_one_line(argv, message, tmp_path, capsys):
    code = main(["replicate", "--model", "smollm2-135m", "--output", str(tmp_path), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]
