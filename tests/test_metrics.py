"""Declared metrics: one declaration per contract metric, read by the scorecard, the report, the
leaderboard and the paper's figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import suites_in_order
from matbench.leaderboard.reported import load_reported
from matbench.protocol.metrics import Format, Metric, Scale
from matbench.results.scorecard import build_scorecard
from tests.store_fixtures import STORE


def test_every_suite_declares_unique_metrics_with_a_description():
    assert suites_in_order()[:2] == ["discovery", "trigger"]
    for suite in suites_in_order():
        contract = EVALUATORS.get(suite).contract
        keys = [m.key for m in contract]
        assert contract and len(keys) == len(set(keys)), suite
        assert all(m.description and m.label for m in contract), suite
    ranked = [(s, m.key) for s in suites_in_order() for m in EVALUATORS.get(s).contract if m.rank]
    assert ranked == [("discovery", "root_classes")]


def test_a_metric_path_that_is_missing_is_one_line_naming_it():
    metric = Metric("x", "headline.gone.deeper", "x", "x", Scale.COUNT)
    with pytest.raises(MatbenchError, match=r"lack metric 'x' \(no 'gone' on the way to headline.gone.deeper\)"):
        metric.value({"headline": {}})
    assert Metric("x", "a.b", "x", "x", Scale.COUNT, optional=True).value({"a": {}}) is None


@pytest.mark.parametrize(
    "format_, value, text",
    [
        (Format.CLASSES, {"follow": 5, "anti": 1, "const": 3, "other": 0}, "5:1"),
        (Format.CLASSES, [41, 0], "41:0"),
        (Format.RATE_CI, {"accuracy": 0.934, "ci": [0.896, 0.958]}, "0.934 [0.896, 0.958]"),
        (Format.SIGNED_CI, {"mean": -0.011, "ci": [-0.026, 0.004]}, "-0.011 [-0.026, +0.004]"),
        (
            Format.SIGNED_CI,
            {"mean": 0.02, "ci": [0.01, 0.03], "positive": 40, "negative": 2},
            "+0.020 [+0.010, +0.030] (40+:2−)",
        ),
        (Format.COUNTS, {"W": 3, "U": 5, "N": 8}, "W 3 / U 5 / N 8"),
        (Format.BOOL, True, "yes"),
        (Format.P_VALUE, 3.2e-30, "3.2e-30"),
    ],
)
def test_formats_read_their_values(format_, value, text):
    fields = ("accuracy", "ci") if format_ is Format.RATE_CI else ("mean", "ci")
    assert Metric("m", "m", "m", "m", Scale.COUNT, format_, fields=fields).text(value) == text


def test_a_value_of_another_shape_is_refused():
    with pytest.raises(TypeError, match="is not a mapping value"):
        Metric("m", "m", "m", "m", Scale.ACCURACY, Format.MAPPING).text("everything")
    with pytest.raises(TypeError, match="is not a number value"):
        Metric("m", "m", "m", "m", Scale.COUNT).text(True)


def test_the_scorecard_holds_exactly_the_declared_metrics_valid_for_its_readout(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(STORE / "contract" / "smollm2-135m", runs)
    card = build_scorecard(runs)
    for suite, entry in card["contract"].items():
        declared = {m.key for m in EVALUATORS.get(suite).contract if m.in_scorecard and m.valid_for("probe")}
        assert set(entry) - {"evidence"} == declared == set(entry["evidence"]["keys"]), suite
    # The paper's parse exists only where text was generated: absent from the probe's card, present
    # in the trace card of the same model (both runs committed).
    assert "root_classes_paper" not in card["contract"]["discovery"]
    trace = build_scorecard(runs, readout="trace")
    for suite, entry in trace["contract"].items():
        declared = {m.key for m in EVALUATORS.get(suite).contract if m.in_scorecard and m.valid_for("trace")}
        assert set(entry) - {"evidence"} == declared, suite
    assert trace["contract"]["discovery"]["root_classes_paper"] is not None


def _figures_file(tmp_path: Path, figure: dict) -> Path:
    path = tmp_path / "reported.json"
    path.write_text(json.dumps({"source": "test", "figures": [figure]}))
    return path


@pytest.mark.parametrize(
    "figure, message",
    [
        (
            {"model": "M", "suite": "discovery", "metric": "root_classes", "scale": "accuracy", "value": 0.9},
            "a figure on scale 'accuracy' is not comparable to discovery metric 'root_classes' (pair follow)",
        ),
        (
            {"model": "M", "suite": "discovery", "metric": "root_clases", "scale": "pair follow", "value": [1, 0]},
            "declares no metric 'root_clases'",
        ),
        ({"model": "M", "suite": "discovry", "name": "x", "value": 1}, "names an unknown suite 'discovry'"),
        ({"model": "M", "suite": "discovery", "value": 1}, "needs the declared metric it is comparable to, or a name"),
        (
            {"model": "M", "suite": "discovery", "metric": "root_classes", "scale": "pair follow", "value": [1, 0]},
            "a figure in metric 'root_classes''s column must name the readout the paper read it with",
        ),
        (
            {
                "model": "M",
                "suite": "discovery",
                "metric": "root_classes_paper",
                "scale": "pair follow",
                "value": [1, 0],
                "readout": "probe",
            },
            "discovery metric 'root_classes_paper' means nothing under the probe readout",
        ),
        ({"model": "M", "suite": "discovery", "name": "x", "value": 1, "readout": "gen8"}, "unknown readout 'gen8'"),
    ],
)
def test_a_reported_figure_must_name_a_declared_metric_on_its_scale(tmp_path, figure, message):
    with pytest.raises(MatbenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_reported(_figures_file(tmp_path, figure))


def test_the_committed_figures_load_and_every_metric_figure_matches_its_scale():
    from importlib import resources

    reported = load_reported()
    raw = json.loads(resources.files("matbench.leaderboard").joinpath("reported.json").read_text())["figures"]
    assert len(raw) == len(reported.figures)
    for figure, entry in zip(reported.figures, raw):  # each metric figure sits on its metric's own scale
        if figure.metric is not None:
            assert (
                entry["scale"]
                == figure.metric.scale.value
                == EVALUATORS.get(entry["suite"]).metric(entry["metric"]).scale.value
            ), entry
    assert sum(f.metric is not None for f in reported.figures) == sum("metric" in e for e in raw)
    assert reported.models == ["Qwen3-8B", "Ministral-3-8B-Instruct-2512", "Gemma-4-12B-it"]
    # Depth-3 is accuracy (kv_hops), and the paper's text attributes it to no model (audit #5).
    depth3 = [f for f in reported.figures if f.metric is not None and f.metric.key.startswith("depth3_")]
    assert [(f.model, f.metric.scale.value) for f in depth3] == [(None, "accuracy")] * 2
    # The readout each figure was read with: trace (with the menu) for Qwen3 and Ministral, the
    # paper's menu generation for Gemma-4 (audit #13).
    discovery = {f.model: f.readout for f in reported.figures if f.suite == "discovery" and f.metric is not None}
    assert discovery == {"Qwen3-8B": "trace", "Ministral-3-8B-Instruct-2512": "trace", "Gemma-4-12B-it": "menu"}
    assert all(f.readout is not None and f.metric.valid_for(f.readout) for f in reported.figures if f.metric)


def test_every_suite_puts_a_donor_shift_on_its_scorecard():
    """SPEC 2.7: the donor margin shift stands beside the argmax classes in every suite's contract
    (on small models it is the only signal there is)."""
    from matbench.data_gen import SUITES
    from tests.helpers import dialog_sources

    for suite in suites_in_order():
        evaluator = EVALUATORS.get(suite)
        shifts = [m.key for m in evaluator.contract if m.scale is Scale.SHIFT and m.in_scorecard]
        if evaluator.paired:
            assert shifts, suite
        else:  # a suite of unpaired items has no shift to report, and must indeed pair nothing
            assert not shifts and not SUITES.get(suite).contract, suite
            assert not any(p.paired for p in SUITES.get(suite).generate(0, 9, dialog_sources())), suite
