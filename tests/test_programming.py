"""The programming suite (kv_mater2 X9 / kv_mater3 X10): draws, serve sets, arms, evaluator."""

from __future__ import annotations

import collections
import re

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.base import REGISTER_POOL
from matbench.data_gen.programming import KINDS, REVIEW_AT, T_KINDS, TEMPLATES, build, draw
from matbench.evaluators import EVALUATORS
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records

VALUES = ("EXCEEDED", "NORMAL")


def test_draws_are_the_papers():
    pairs = SUITES.get("programming").generate(0, 200)
    assert collections.Counter(p.variant for p in pairs) == {f"{k}/{t}": 20 for k in KINDS for t in (1, 2)}
    for p in pairs:
        (hi, thr), (lo, thr_b) = (map(int, re.findall(r"\d+", body)) for body in p.source_bodies)
        assert thr == thr_b and 200 <= thr < 800 and thr + 30 <= hi < 999 and 100 <= lo < thr - 29
        assert 8 <= p.source < 16 and p.values == VALUES
        decoy, sensor, _target, unrelated = p.registers
        assert len(set(p.registers)) == 4 and set(p.registers) <= set(REGISTER_POOL)
        assert p.events[0] == f"sensor {decoy} logged a routine idle reading"
        state = re.fullmatch(rf"register {unrelated} set to state (ONLINE|OFFLINE)", p.events[2]).group(1)
        assert p.events[REVIEW_AT] == f"the operator reviewed sensor {sensor} against the alert threshold"
        assert p.source_bodies[0] == f"sensor {sensor} measured {hi}; the alert threshold is {thr}"
        fillers = [p.events[i] for i in range(24) if i not in (0, 2, p.source, p.source + 1, REVIEW_AT)]
        for body in fillers:
            name, number = re.fullmatch(r"register (\w+) refreshed to (\d+)", body).groups()
            assert name not in p.registers and 100 <= int(number) <= 998 and int(number) not in (hi, lo)
        assert p.decoys == (0, 2) and p.arm("unrel").expected == state


def test_carriers_are_the_papers_templates():
    pairs = SUITES.get("programming").generate(0, 10)
    for p in pairs:
        kind, template = p.variant.split("/")
        _, sensor, target, _ = p.registers
        text = TEMPLATES[kind][int(template) - 1]
        carrier = p.source + 1
        if kind == "exp":
            assert p.donor_events == ((carrier, *(text.format(S=sensor, T=target, V=v) for v in VALUES)),)
        else:
            assert p.events[carrier] == text.format(S=sensor, T=target) and not p.donor_events
            assert "EXCEEDED" not in p.events[carrier].upper() and "NORMAL" not in p.events[carrier].upper()
    # Ten templates, verbatim from kv_mater2.py (spot checks of the five that matbench v1 reworded).
    assert TEMPLATES["pas"][1] == (
        "log entry: the outcome of the {S} threshold comparison was filed in the maintenance record"
    )
    assert TEMPLATES["bind"][0] == "status register {T} is now set according to the threshold verdict for sensor {S}"
    assert TEMPLATES["nld"][1] == (
        "reminder: work out whether sensor {S} went above its alert threshold and note the verdict here"
    )
    assert TEMPLATES["exp"] == (
        "status register {T} recorded the threshold verdict for sensor {S}: {V}",
        "verdict for sensor {S} filed in register {T}: {V}",
    )


def test_serve_sets_and_questions():
    pairs = SUITES.get("programming").generate(0, 10)
    for p in pairs:
        kind = p.variant.split("/")[0]
        carrier = p.source + 1
        _decoy, sensor, target, unrelated = p.registers
        assert p.arm("car").served == (0, 2, carrier) and p.arm("rev").served == (0, 2, REVIEW_AT)
        assert p.arm("both").served == (0, 2, carrier, REVIEW_AT) == p.arm("unrel").served == p.arm("sel").served
        assert p.arm("car@L").query_at_end and not p.arm("both").query_at_end
        assert p.arm("both").question == f"Was sensor {sensor} above the alert threshold?"
        assert (
            p.arm("unrel").question == f"What state is register {unrelated} in? Answer with the single state word only:"
        )
        assert p.arm("unrel").open_question and p.arm("unrel").menu == ("ONLINE", "OFFLINE")
        assert p.arm("sel").encoding == "text" and p.arm("control").served == tuple(range(p.source))
        tgt = [a for a in p.arms if a.name.startswith("tgt_")]
        if kind in T_KINDS:
            assert [a.name for a in tgt] == ["tgt_car", "tgt_rev", "tgt_both"]
            assert all(a.question == f"What verdict is recorded for status register {target}?" for a in tgt)
        else:
            assert not tgt
        # Only the exp carrier differs across the members; rev never serves it.
        assert p.arm("both").uses_source == p.arm("car").uses_source == (kind == "exp")
        assert not p.arm("rev").uses_source


def test_groups_of_ten_share_every_draw():
    pairs = SUITES.get("programming").generate(0, 20)
    for group in (pairs[:10], pairs[10:]):
        assert {(p.source_bodies, p.events[0], p.events[2]) for p in group} == {
            (group[0].source_bodies, group[0].events[0], group[0].events[2])
        }
        assert sorted(p.variant for p in group) == sorted(f"{k}/{t}" for k in KINDS for t in (1, 2))
    assert pairs[0].source_bodies != pairs[10].source_bodies


def test_build_takes_explicit_draws():
    import random

    d = draw(random.Random(5))
    assert build(d, "x-00000", "nld", 1) == build(d, "x-00000", "nld", 1)
    assert build(d, "x-00000", "nld", 1).events[d.source + 1] == (
        f"reminder: work out whether sensor {d.sensor} went above its alert threshold and note the verdict here"
    )


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("programming").generate(0, 10)  # two of each kind
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("programming")(suite="programming").summarize(records)
    assert list(metrics["by_carrier"]) == list(KINDS)
    assert all(m["both"]["n_pairs"] == 2 for m in metrics["by_carrier"].values())
    assert set(metrics["by_carrier"]["bind"]) - set(metrics["by_carrier"]["pas"]) == {"tgt_car", "tgt_rev", "tgt_both"}
    head = metrics["headline"]
    assert head["control_clean"] is True and set(head["target_follow"]) == set(T_KINDS)
    assert head["nld_minus_pas_both"] == head["follow_both"]["nld"] - head["follow_both"]["pas"]
    assert set(head["fixed_query"]) == {"review", "review + nld carrier", "review + exp carrier"}


# Evaluator statistics on hand-built records, where the right answer is known.


def _arm(answers, paper=None, shift=0.0, expected=None, values=None) -> ArmRecord:
    from matbench.protocol.outcomes import outcome

    return ArmRecord(
        answers=answers,
        outcome=outcome(answers, values or VALUES),
        probe_answers=answers,
        probe_logp=((0.0, 0.0), (0.0, 0.0)),
        shift=shift,
        paper_answers=paper,
        expected=expected,
        menu=("ONLINE", "OFFLINE") if values else None,
        values=values,
    )


FOLLOW, CONST = VALUES, ("NORMAL", "NORMAL")


def _record(index: int, variant: str, both, rev=CONST, unrel=("ONLINE", "ONLINE")) -> PairRecord:
    arms = {
        "car": _arm(CONST, CONST),
        "rev": _arm(rev, rev),
        "both": _arm(*both),
        "unrel": _arm(unrel, unrel, expected="ONLINE", values=("ONLINE", "OFFLINE")),
        "sel": _arm(CONST, CONST),
        "txt": _arm(FOLLOW, FOLLOW),
        "control": _arm(CONST, CONST),
    }
    if variant.split("/")[0] in T_KINDS:
        arms["tgt_both"] = _arm(FOLLOW, FOLLOW)
    return PairRecord(
        item_id=f"programming-v2-s0-{index:05d}",
        variant=variant,
        values=VALUES,
        menu=VALUES,
        budget=2,
        length=100,
        n_tokens=(100, 100),
        arms=arms,
    )


def test_headline_counts_follow_with_the_papers_parse():
    records = []
    for g in range(6):
        for k, kind in enumerate(KINDS):
            for t in (1, 2):
                index = 10 * g + 5 * (t - 1) + k
                # nld follows in 4 of 6 groups by the paper's parse, though matbench's strict parse
                # read nothing (say "NORMAL." after "EXCEEDED-ish" prose); exp always follows.
                follows = kind == "exp" or (kind == "nld" and g < 4)
                both = ((None, None), FOLLOW) if follows else (CONST, CONST)
                unrel = ("ONLINE", "OFFLINE") if (kind, g, t) == ("pas", 0, 1) else ("ONLINE", "ONLINE")
                records.append(_record(index, f"{kind}/{t}", both, unrel=unrel))
    m = EVALUATORS.get("programming")(suite="programming").summarize(records)
    head = m["headline"]
    assert head["follow_both_counts"] == {
        "pas": [0, 12],
        "bind": [0, 12],
        "dir": [0, 12],
        "nld": [8, 12],
        "exp": [12, 12],
    }
    assert head["follow_both"]["nld"] == pytest.approx(8 / 12)
    assert m["by_carrier"]["nld"]["both"]["classes"]["follow"] == 0  # the strict parse, beside
    assert head["fixed_query"] == {
        "review": 0.0,
        "review + nld carrier": pytest.approx(8 / 12),
        "review + exp carrier": 1.0,
    }
    assert head["target_follow"] == {"bind": 1.0, "dir": 1.0, "exp": 1.0}
    assert head["unrelated_flip_rate"] == pytest.approx(1 / 60) and m["unrelated"]["accuracy"] == pytest.approx(
        119 / 120
    )
    c = m["nld_minus_pas"]["both"]
    assert c["n_paired"] == 12 and c["follow_difference"] == pytest.approx(8 / 12)
    assert c["mcnemar_p"] == pytest.approx(2 * 0.5**8)
    assert m["text_floor"]["pas"]["member_a_exceeded"] == 0 and head["control_clean"] is True
    metric = EVALUATORS.get("programming").metric("follow_both")
    assert metric.value(m) == head["follow_both"]


@pytest.mark.parametrize(
    "dir_follows,bind_follows,excludes_zero,equivalent",
    [
        (12, 12, True, True),  # dir and bind both always follow: dir - pas = 1, dir - bind = 0
        (12, 0, True, False),  # dir follows, bind never: dir - bind = 1, far outside +-.075
        (0, 0, False, True),  # nothing follows: dir - pas = 0 (no claim), dir = bind at the floor
    ],
)
def test_the_papers_preregistered_contrasts_and_their_verdicts(dir_follows, bind_follows, excludes_zero, equivalent):
    records = []
    for g in range(6):
        for k, kind in enumerate(KINDS):
            for t in (1, 2):
                n = 2 * g + t - 1  # the n-th of 12 (group, template) cells
                follows = {"dir": n < dir_follows, "bind": n < bind_follows}.get(kind, False)
                unrel = ("ONLINE", "OFFLINE") if g < 2 and kind == "pas" else ("ONLINE", "ONLINE")
                records.append(
                    _record(
                        10 * g + 5 * (t - 1) + k,
                        f"{kind}/{t}",
                        (FOLLOW, FOLLOW) if follows else (CONST, CONST),
                        unrel=unrel,
                    )
                )
    m = EVALUATORS.get("programming")(suite="programming").summarize(records)
    pre = m["preregistered"]
    assert pre["dir_minus_pas"]["n_paired"] == 12
    assert pre["dir_minus_pas"]["follow_difference"] == pytest.approx(dir_follows / 12)
    assert pre["dir_minus_pas"]["excludes_zero"] is excludes_zero
    assert pre["dir_vs_bind"]["follow_difference"] == pytest.approx((dir_follows - bind_follows) / 12)
    assert pre["dir_vs_bind"]["tost_bound"] == 0.075 and pre["dir_vs_bind"]["equivalent"] is equivalent
    lo90, hi90 = pre["dir_vs_bind"]["follow_difference_ci90"]
    lo95, hi95 = pre["dir_vs_bind"]["follow_difference_ci"]
    assert lo95 <= lo90 <= hi90 <= hi95
    # 4 of 60 unrelated-register pairs flip (pas, groups 0-1): const dominates
    assert pre["unrelated_const_dominant"] is True and m["headline"]["unrelated_flip_rate"] == pytest.approx(4 / 60)
    verdict = EVALUATORS.get("programming").metric("dir_bind_equivalent")
    assert verdict.value(m) is equivalent


def test_without_dir_and_bind_the_preregistered_contrasts_are_absent_not_invented():
    records = [
        _record(10 * g + k, f"{kind}/1", (CONST, CONST))
        for g in range(2)
        for k, kind in enumerate(KINDS)
        if kind in ("pas", "nld")
    ]
    m = EVALUATORS.get("programming")(suite="programming").summarize(records)
    assert m["preregistered"]["dir_minus_pas"] is None and m["preregistered"]["dir_vs_bind"] is None
    assert EVALUATORS.get("programming").metric("dir_bind_equivalent").value(m) is None
