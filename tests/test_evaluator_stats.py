"""Evaluator statistics on records built by hand, where the right answer is known."""

from __future__ import annotations

import pytest

from matbench.evaluators import EVALUATORS
from matbench.protocol.records import ArmRecord, PairRecord

VALUES = ("ONLINE", "OFFLINE")


def arm(kind: str, shift: float = 0.0) -> ArmRecord:
    answers = {"follow": VALUES, "anti": VALUES[::-1], "const": ("ONLINE", "ONLINE")}[kind]
    return ArmRecord(answers=answers, outcome=kind, probe_answers=answers, probe_logp=((0.0, 0.0), (0.0, 0.0)),
                     shift=shift)


def record(item: int, variant: str, **arms: ArmRecord) -> PairRecord:
    return PairRecord(item_id=f"x-v1-s0-{item:05d}", variant=variant, values=VALUES, menu=VALUES, budget=2,
                      length=100, n_tokens=(100, 100), arms=arms)


def test_trigger_classes_follow_comprehension_and_bh():
    records = []
    for i in range(20):
        # writes: comprehended and 20:0 follow; silent: comprehended, const; lost: not comprehended.
        records.append(record(3 * i, "mirror/writes", kv=arm("follow", 0.2), txt=arm("follow"), control=arm("const")))
        records.append(record(3 * i + 1, "mirror/silent", kv=arm("const", 0.1), txt=arm("follow"), control=arm("const")))
        records.append(record(3 * i + 2, "flag/lost", kv=arm("follow"), txt=arm("const"), control=arm("const")))
    m = EVALUATORS.get("trigger")(suite="trigger").summarize(records)
    rows = m["by_construction"]
    assert [rows[v]["class"] for v in ("mirror/writes", "mirror/silent", "flag/lost")] == ["W", "U", "N"]
    assert rows["mirror/writes"]["write_p"] == pytest.approx(0.5 ** 20)
    # BH over 3 constructions: the smallest p times 3 / 1 (here the two follow constructions tie).
    assert rows["mirror/writes"]["write_q"] == pytest.approx(0.5 ** 20 * 3 / 2)
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
                records.append(record(10 * g + 2 * k + t - 1, f"{kind}/{t}", carrier=a, both=a, **{"both@L": a},
                                      review=arm("const"), txt=arm("follow"), control=arm("const")))
    m = EVALUATORS.get("programming")(suite="programming").summarize(records)
    c = m["nld_minus_pas"]["both"]
    assert c["n_paired"] == 16 and c["follow_difference"] == pytest.approx(12 / 16)
    assert c["mcnemar_p"] == pytest.approx(2 * 0.5 ** 12)
    assert c["shift_difference"] == pytest.approx(0.2)
    low, high = c["follow_difference_ci"]
    assert 0.25 <= low < 12 / 16 < high <= 1.0  # 8 groups: the interval is that of 8 draws, not 16
