"""A run's verdict (`matbench.protocol.verdicts`) and its warnings (`matbench.results.verdicts`)."""

from __future__ import annotations

import copy

import pytest

from matbench import stats
from matbench.evaluators import EVALUATORS
from matbench.protocol.metrics import Direction, Format, Metric, Scale
from matbench.protocol.verdicts import Finding, min_decided_pairs, verdict
from matbench.results.schema import read_results, validate_results
from matbench.results.verdicts import run_verdict, run_warnings
from tests.store_fixtures import stored

DISCOVERY = EVALUATORS.get("discovery")
RUN = stored("contract", "smollm2-135m", "discovery_probe_compact")


def _metrics(follow: int, anti: int, shift_ci: tuple[float, float], chain_ci=(-0.1, 0.1)) -> dict:
    def arm(follow: int, anti: int, ci: tuple[float, float]) -> dict:
        shift = {"mean": sum(ci) / 2, "ci": list(ci), "positive": 3, "negative": 1, "wilcoxon_p": 0.01}
        return {"classes": {"follow": follow, "anti": anti, "const": 0, "other": 0}, "donor_shift": shift}

    return {"arms": {"root": arm(follow, anti, shift_ci), "chain": arm(0, 0, chain_ci)}}


@pytest.mark.parametrize(
    ("follow", "anti", "shift_ci", "finding"),
    [
        (8, 0, (-0.1, 0.1), Finding.YES),  # the sign test decides alone
        (0, 0, (0.01, 0.2), Finding.YES),  # no answer flips, but the margin leans to the donor
        (3, 0, (-0.1, 0.1), Finding.NOT_SHOWN),  # 3:0 has p = .25
        (0, 8, (-0.1, 0.1), Finding.OPPOSITE),
        (0, 8, (-0.3, -0.1), Finding.OPPOSITE),
        (8, 0, (-0.3, -0.1), Finding.YES),  # one decided toward the question is a yes
    ],
)
def test_discovery_verdict_reads_the_root_classes_and_shift(follow, anti, shift_ci, finding):
    found = verdict(
        "discovery", "q?", DISCOVERY.contract, _metrics(follow, anti, shift_ci), "probe", 40, DISCOVERY.decide
    )
    assert found.finding is finding
    assert [e.metric.key for e in found.evidence] == ["root_classes", "chain_classes", "root_shift", "chain_shift"]
    p = stats.sign_test(follow, anti)
    assert found.evidence[0].text() == f"root f:a {follow}:{anti}, sign test p = {p:.2g}"
    assert found.line().startswith(
        f"verdict: {finding.value}{' at 40 pairs' if finding is Finding.NOT_SHOWN else ''}: "
    )


def test_discovery_verdict_reads_the_chain_shift_too():
    """The chain arm's margin (every carrier served, the register two hops from the source asked)
    answers the question where the root arm's does not."""
    metrics = _metrics(0, 0, (-0.1, 0.1), chain_ci=(0.014, 0.032))
    found = verdict("discovery", "q?", DISCOVERY.contract, metrics, "probe", 32, DISCOVERY.decide)
    assert found.finding is Finding.YES
    assert [e.toward for e in found.evidence] == [0, 0, 0, 1]
    assert found.evidence[3].text().startswith("chain donor shift +0.023 [+0.014, +0.032]")
    metrics["arms"]["chain"]["donor_shift"]["wilcoxon_p"] = 0.2  # the interval alone does not decide
    assert verdict("discovery", "q?", DISCOVERY.contract, metrics, "probe", 32, DISCOVERY.decide).finding is (
        Finding.NOT_SHOWN
    )


def test_a_lower_is_more_metric_counts_against_when_it_rises():
    lower = Metric("m", "m", "m", "", Scale.SHIFT, Format.SIGNED_CI, Direction.LOWER, overview=True)
    above = {"m": {"mean": 0.2, "ci": [0.1, 0.3]}}
    assert verdict("s", "", (lower,), above, "probe", 9).finding is Finding.OPPOSITE
    below = {"m": {"mean": -0.2, "ci": [-0.3, -0.1]}}
    assert verdict("s", "", (lower,), below, "probe", 9).finding is Finding.YES


def test_a_headline_without_decisions_gives_no_verdict():
    count = Metric("m", "m", "m", "", Scale.COUNT, overview=True)
    found = verdict("s", "", (count,), {"m": 3}, "probe", 9)
    assert found.finding is Finding.NONE and found.line() == "verdict: no verdict: m 3"


def test_trigger_counts_decide_through_its_evaluator():
    trigger = EVALUATORS.get("trigger")
    classes, shifted = trigger.metric("classes"), trigger.metric("kv_shift_toward_donor")
    assert trigger.decide(classes, {"W": 2, "U": 0, "N": 14}) == 1
    assert trigger.decide(classes, {"W": 0, "U": 3, "N": 13}) == 0
    assert trigger.decide(shifted, 0) == 0 and trigger.decide(shifted, 1) == 1


def test_min_decided_pairs_is_where_the_sign_test_first_reaches_05():
    n = min_decided_pairs()
    assert stats.sign_test(n, 0) < 0.05 <= stats.sign_test(n - 1, 0)
    assert n == 6  # 2 * 0.5**6 = 0.031, 2 * 0.5**5 = 0.0625


def _run(**changes):
    results = read_results(RUN)
    payload = copy.deepcopy(results.model_dump(mode="json", exclude_none=False))
    for path, value in changes.items():
        block = payload
        *parents, last = path.split("/")
        for part in parents:
            block = block[part]
        block[last] = value
    return validate_results(payload)


def test_a_run_is_warned_of_low_comprehension_too_few_decided_pairs_and_missing_gates():
    results = read_results(RUN)
    comprehension = results.metrics["arms"]["txt"]["menu_accuracy"]
    root, chain = (results.metrics["arms"][arm]["classes"] for arm in ("root", "chain"))
    decided = [c["follow"] + c["anti"] for c in (root, chain)]
    assert comprehension <= 0.5 and max(decided) < 6  # what the fixture holds
    warned = run_warnings(results)
    assert len(warned) == 2
    assert warned[0].startswith(f"comprehension {comprehension:.3f} is at or below chance (0.5)")
    assert warned[1].startswith(f"root f:a: {decided[0]}, chain f:a: {decided[1]} donor-sensitive pairs;")
    assert warned[1].endswith("cannot decide: a model that reads the question")
    assert run_verdict(results).finding is Finding.NOT_SHOWN

    ungated = run_warnings(_run(gates={}))
    assert len(ungated) == 3 and ungated[2].startswith("faithfulness gates not run")
    unclean = run_warnings(_run(**{"metrics/headline/control_clean": False}))
    assert len(unclean) == 3 and unclean[0].startswith("control not clean")
    reads = run_warnings(_run(**{"metrics/arms/txt/menu_accuracy": 0.9}))
    assert len(reads) == 1 and reads[0].startswith("root f:a:") and reads[0].endswith("run more pairs (--limit)")


def test_a_shift_interval_needs_its_signed_rank_test_for_a_verdict():
    shift = DISCOVERY.metric("root_shift")
    few = {"mean": 0.015, "ci": [0.004, 0.032], "positive": 4, "negative": 0, "wilcoxon_p": 0.125}
    assert DISCOVERY.decide(shift, few) == 0 and DISCOVERY.decide(shift, {**few, "wilcoxon_p": 0.01}) == 1
    from matbench.results.replication import verdict as replicated

    assert replicated(shift, few) == 1  # seeds are compared by the interval alone, as before
