"""Evaluator statistics on records built by hand, where the right answer is known."""

from __future__ import annotations

import pytest

from matbench import stats
from matbench.evaluators import EVALUATORS
from matbench.protocol.records import ArmRecord, PairRecord

VALUES = ("ONLINE", "OFFLINE")


def arm(kind: str, shift: float = 0.0) -> ArmRecord:
    answers = {"follow": VALUES, "anti": VALUES[::-1], "const": ("ONLINE", "ONLINE")}[kind]
    return ArmRecord(
        answers=answers, outcome=kind, probe_answers=answers, probe_logp=((0.0, 0.0), (0.0, 0.0)), shift=shift
    )


def record(item: int, variant: str, **arms: ArmRecord) -> PairRecord:
    return PairRecord(
        item_id=f"x-v1-s0-{item:05d}",
        variant=variant,
        values=VALUES,
        menu=VALUES,
        budget=2,
        length=100,
        n_tokens=(100, 100),
        arms=arms,
    )


def test_trigger_classes_follow_comprehension_and_bh():
    records = []
    for i in range(20):
        # writes: comprehended and 20:0 follow; silent: comprehended, const; lost: not comprehended.
        records.append(record(3 * i, "mirror/writes", kv=arm("follow", 0.2), txt=arm("follow"), control=arm("const")))
        records.append(
            record(3 * i + 1, "mirror/silent", kv=arm("const", 0.1), txt=arm("follow"), control=arm("const"))
        )
        records.append(record(3 * i + 2, "flag/lost", kv=arm("follow"), txt=arm("const"), control=arm("const")))
    m = EVALUATORS.get("trigger")(suite="trigger").summarize(records)
    rows = m["by_construction"]
    assert [rows[v]["class"] for v in ("mirror/writes", "mirror/silent", "flag/lost")] == ["W", "U", "N"]
    assert rows["mirror/writes"]["write_p"] == pytest.approx(0.5**20)
    # BH over 3 constructions: the smallest p times 3 / 1 (here the two follow constructions tie).
    assert rows["mirror/writes"]["write_q"] == pytest.approx(0.5**20 * 3 / 2)
    # Shift-based: silent shifts positive in 20 of 20 pairs, so it writes by the shift.
    assert rows["mirror/silent"]["class_shift"] == "W"
    assert m["headline"]["classes"] == {"W": 1, "U": 1, "N": 1}
    # The shift evidence before comprehension gates it: writes and silent shift in 20 of 20 pairs,
    # lost in none (its shifts are 0), whatever its comprehension.
    assert m["headline"]["kv_shift_toward_donor"] == 2
    assert m["headline"]["kv_shift_mean"] == pytest.approx((0.2 + 0.1 + 0.0) / 3)


def test_programming_nld_minus_pas_is_paired_by_group():
    records = []
    for g in range(8):
        for k, kind in enumerate(("pas", "nld")):
            for t in (1, 2):
                cls = "follow" if kind == "nld" and g < 6 else "const"
                a = arm(cls, 0.3 if kind == "nld" else 0.1)
                records.append(
                    record(
                        10 * g + 2 * k + t - 1,
                        f"{kind}/{t}",
                        carrier=a,
                        both=a,
                        **{"both@L": a},
                        review=arm("const"),
                        txt=arm("follow"),
                        control=arm("const"),
                    )
                )
    m = EVALUATORS.get("programming")(suite="programming").summarize(records)
    c = m["nld_minus_pas"]["both"]
    assert c["n_paired"] == 16 and c["follow_difference"] == pytest.approx(12 / 16)
    assert c["mcnemar_p"] == pytest.approx(2 * 0.5**12)
    assert c["shift_difference"] == pytest.approx(0.2)
    low, high = c["follow_difference_ci"]
    assert 0.25 <= low < 12 / 16 < high <= 1.0  # 8 groups: the interval is that of 8 draws, not 16


def test_generating_runs_report_the_papers_parse_beside_matbenchs():
    """ABNORMAL is no NORMAL for matbench's parse, but the paper's substring search reads it as
    NORMAL: both are reported, the paper's under paper_parse, with item-level accuracy CIs."""
    from matbench.evaluators.discovery import DiscoveryEvaluator

    def generated(texts, ours, paper):
        outcome_ours = {"ONLINE/OFFLINE": "follow", "OFFLINE/ONLINE": "anti"}.get("/".join(map(str, ours)), "other")
        return ArmRecord(
            answers=ours,
            outcome=outcome_ours,
            probe_answers=("ONLINE", "ONLINE"),
            probe_logp=((0.0, 0.0), (0.0, 0.0)),
            shift=0.0,
            texts=texts,
            paper_answers=paper,
        )

    follow = generated(("It is ONLINE", "OFFLINE"), ("ONLINE", "OFFLINE"), ("ONLINE", "OFFLINE"))
    loose = generated(("so: online-ish", "not ONLINE; OFFLINEd"), (None, None), ("ONLINE", "OFFLINE"))
    records = [
        PairRecord(
            f"i{k}",
            "",
            ("ONLINE", "OFFLINE"),
            ("ONLINE", "OFFLINE"),
            3,
            100,
            (100, 100),
            {"root": follow if k < 3 else loose, "chain": follow, "txt": follow, "control": loose},
        )
        for k in range(5)
    ]
    metrics = DiscoveryEvaluator("discovery").summarize(records)
    root = metrics["arms"]["root"]
    assert (root["classes"]["follow"], root["classes"]["other"]) == (3, 2)
    assert root["paper_parse"]["classes"]["follow"] == 5
    assert root["paper_parse"]["menu_accuracy"] == 1.0 and root["menu_accuracy"] == 0.6
    # Members concordant in every pair: the interval is the item-level Wilson over 5 pairs.
    assert root["menu_accuracy_ci"] == stats.wilson(3, 5).as_list()
    assert DiscoveryEvaluator.metric("root_classes_paper").value(metrics) == root["paper_parse"]["classes"]
    assert not DiscoveryEvaluator.metric("root_classes_paper").valid_for("probe")
