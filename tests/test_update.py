"""The update suite: patches appended at query time, expected answers, controls."""

from __future__ import annotations

import pytest

from matbench.data_gen import SUITES
from matbench.evaluators import EVALUATORS
from matbench.evaluators.base import _expected_metrics
from matbench.protocol.frames import event_text
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records


def test_structure_and_independent_patch_values():
    pairs = SUITES.get("update").generate(0, 200)
    values = [p.arm("bare").expected for p in pairs]
    assert set(values) == {"ONLINE", "OFFLINE"} and 70 < values.count("ONLINE") < 130
    for p in pairs:
        target = p.registers[1]
        assert all(a.served == (0, 23) for a in p.arms if a.name not in ("txt", "control"))
        assert p.arm("bare").appended == (f"register {target} set to state {p.arm('bare').expected}",)
        assert p.arm("wrong_register").expected is None and target not in p.arm("wrong_register").appended[0]
        assert p.arm("base").appended == ()


def test_patch_is_rendered_before_the_question(tiny_llama):
    pair = SUITES.get("update").generate(0, 1)[0]
    engine = engine_for(tiny_llama)
    ids = engine.query_ids(pair, pair.arm("structured"), engine.probe_readout)
    text = engine.renderer.tokenizer.decode(list(ids))
    assert text.startswith(event_text(24, pair.arm("structured").appended[0]) + "Question: What state is register")


def test_expected_answer_metrics_count_wins_and_old_value_leaks():
    values = ("ONLINE", "OFFLINE")
    records = [_record(values, _arm("ONLINE", ("ONLINE", "OFFLINE"), values, ((0.0, 0.0), (0.0, 0.0)))),
               _record(values, _arm("OFFLINE", ("OFFLINE", "OFFLINE"), values, ((0.0, 0.0), (0.0, 0.0))))]
    m = _expected_metrics(records, "bare")
    # Wins: ONLINE, OFFLINE, OFFLINE = 3 of 4. At risk: member B of item 1 (donor OFFLINE != ONLINE),
    # member A of item 2 (donor ONLINE != OFFLINE); the first leaks, the second does not.
    assert m["expected_win_rate"] == 0.75 and (m["old_value_leaks"], m["old_value_at_risk"]) == (1, 2)


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("update").generate(0, 3)
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("update")(suite="update").summarize(records)
    assert set(metrics["headline"]["patch_win_rate"]) == {"bare", "versioned", "structured"}
    assert 0 <= metrics["controls_unchanged"]["dummy"]["rate"] <= 1
    assert metrics["headline"]["control_clean"] is True


def _arm(expected, answers, values, logp) -> ArmRecord:
    return ArmRecord(answers=answers, outcome=outcome(answers, values), probe_answers=answers, probe_logp=logp,
                     shift=0.0, expected=expected)


def _record(values, bare: ArmRecord, base: ArmRecord | None = None, menu=("ONLINE", "OFFLINE")) -> PairRecord:
    arms = {"bare": bare, **({"base": base} if base is not None else {})}
    return PairRecord(item_id="u", variant="", values=values, menu=menu, budget=2, length=100, n_tokens=(100, 100),
                      arms=arms)


def _base(logp) -> ArmRecord:
    return ArmRecord(answers=("ONLINE", "ONLINE"), outcome="const", probe_answers=("ONLINE", "ONLINE"),
                     probe_logp=logp, shift=0.0)


def test_despite_patch_separates_donor_following_leaks_from_one_word_habits():
    from matbench.evaluators.base import arm_metrics
    from matbench.evaluators.update import despite_patch

    # Item 1: patch ONLINE; member B's donor OFFLINE and it answers OFFLINE while A answers ONLINE:
    # the pair follows the donor, so B's leak is the donor beating the patch.
    # Item 2: patch OFFLINE; both answer OFFLINE (const): member A's donor ONLINE does not leak.
    # Item 3: patch ONLINE; both answer OFFLINE (const): member B's donor OFFLINE "leaks" by habit.
    values = ("ONLINE", "OFFLINE")
    records = [
        _record(values, _arm("ONLINE", ("ONLINE", "OFFLINE"), values, ((-0.1, -2.0), (-1.0, -0.5))),
                _base(((-0.5, -1.0), (-0.5, -1.0)))),
        _record(values, _arm("OFFLINE", ("OFFLINE", "OFFLINE"), values, ((-2.0, -0.2), (-2.0, -0.2))),
                _base(((-1.0, -1.0), (-1.0, -1.0)))),
        _record(values, _arm("ONLINE", ("OFFLINE", "OFFLINE"), values, ((-1.0, -0.5), (-1.0, -0.5))),
                _base(((-0.8, -0.6), (-0.8, -0.6)))),
    ]
    d = despite_patch(records, "bare", arm_metrics(records, "bare"))
    assert (d["follow"], d["anti"]) == (1, 0)
    assert (d["leaks_in_follow_pairs"], d["leaks_in_other_pairs"]) == (1, 1)
    # Margin of the patch value over the other word, patched minus base, averaged over members:
    # item 1: ((1.9) + (-0.5))/2 - 0.5 = 0.2; item 2: 1.8 - 0 = 1.8; item 3: -0.5 - (-0.2) = -0.3.
    gains = [0.2, 1.8, -0.3]
    assert d["margin_gain"]["mean"] == pytest.approx(sum(gains) / 3)
    assert (d["margin_gain"]["positive"], d["margin_gain"]["negative"]) == (2, 1)


def test_expected_margin_is_the_donor_margin_on_a_larger_menu():
    import math

    from matbench.evaluators.update import _expected_margin

    # log p(expected) minus logsumexp of the others, as protocol.margins.donor_margin; not the best other.
    bare = ArmRecord(answers=("A", "A"), outcome="const", probe_answers=("A", "A"),
                     probe_logp=((-1.0, -2.0, -2.0), (-0.5, -1.5, -3.0)), shift=0.0)
    record = _record(("A", "B"), bare, menu=("A", "B", "C"))
    margins = [-2.0 - math.log(math.exp(-1.0) + math.exp(-2.0)), -1.5 - math.log(math.exp(-0.5) + math.exp(-3.0))]
    assert _expected_margin(record, "bare", "B") == pytest.approx(sum(margins) / 2)
