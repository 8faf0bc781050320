"""The note-knob suite (kv_noteknob2): note and filler on one draw, the three settings, the
counterbalanced bin2 decoy, gates on a tiny model, and the evaluator on answer patterns whose
paper-scale and donor-pair numbers are known."""

from __future__ import annotations

import pytest

from matbench import stats
from matbench.data_gen import SUITES
from matbench.data_gen.base import STATES
from matbench.data_gen.note_knob import DOWNSTREAM_AT, FILL_T, NOTE_T, VERDICTS, bin2_decoy
from matbench.evaluators import EVALUATORS
from matbench.evaluators.note_knob import match, paper_members
from matbench.protocol.outcomes import outcome
from matbench.protocol.readouts import READOUTS
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records

SUITE = SUITES.get("note_knob")
VARIANTS = ["note/bin2", "filler/bin2", "note/num", "filler/num", "note/verdict", "filler/verdict"]


def test_a_group_is_one_draw_with_the_note_or_the_filler_at_m_plus_1():
    pairs = SUITE.generate(0, 12)
    assert [p.variant for p in pairs] == VARIANTS * 2
    for note, filler in zip(pairs[::2], pairs[1::2]):
        m = note.source
        assert 8 <= m < 16 and filler.source == m and note.source_bodies == filler.source_bodies
        assert [i for i in range(24) if note.events[i] != filler.events[i]] == [m + 1]
        setting = note.variant.split("/")[1]
        S, T, D = note.registers
        assert note.events[m + 1] == NOTE_T[setting].format(S=S) and filler.events[m + 1] == FILL_T
        for pair in (note, filler):
            assert [(a.name, a.served, a.encoding, a.uses_source, a.budget) for a in pair.arms] == [
                ("harv_drop", (0, m + 1, DOWNSTREAM_AT), "joint", False, 12),
                ("harv_complete", (0, m, m + 1, DOWNSTREAM_AT), "joint", True, 12),
                ("sel_txt", (0, m + 1, DOWNSTREAM_AT), "text", False, 12),
                ("full_txt", tuple(range(24)), "text", True, 12),
                ("control", tuple(range(m)), "joint", False, 12),
            ]
            assert {a.open_question for a in pair.arms} == {setting != "verdict"}
    bin2, num, verdict = pairs[0], pairs[2], pairs[4]
    S, T, D = bin2.registers
    assert bin2.arm("harv_drop").question == f"What state is register {T} in? Answer with the single state word only:"
    assert bin2.source_bodies == tuple(f"register {S} set to state {v}" for v in STATES)
    assert bin2.events[DOWNSTREAM_AT] == f"register {T} copied from register {S}"
    S, T, D = num.registers
    assert num.arm("harv_drop").question == f"What is the value of register {T}? Answer with the number only:"
    assert num.source_bodies == tuple(f"register {S} initialized to {v}" for v in num.values)
    assert num.menu == num.values and num.values[0][0] != num.values[1][0]
    assert num.events[0].startswith(f"register {D} initialized to ") and num.events[0].split()[-1] not in num.values
    S, T, D = verdict.registers
    assert verdict.arm("harv_drop").question == f"Was sensor {S} above the alert threshold?"
    assert verdict.values == VERDICTS and verdict.events[0] == f"sensor {D} logged a routine idle reading"
    assert verdict.events[DOWNSTREAM_AT] == f"the operator reviewed sensor {S} against the alert threshold"
    (high, thr), (low, thr_b) = ((int(w.rstrip(";")) for w in b.split()[3::5]) for b in verdict.source_bodies)
    assert thr == thr_b and high - thr >= 30 and thr - low >= 30


def test_the_bin2_decoy_alternates_and_the_default_size_is_the_papers():
    assert SUITE.default_n == 144 and SUITE.group_size == 2 and not SUITE.contract
    pairs = SUITE.generate(0)
    assert [p.variant for p in pairs] == VARIANTS * 24  # 24 items per setting, as kv_noteknob2 runs
    decoys = [p.events[0].split()[-1] for p in pairs if p.variant.endswith("bin2")]
    assert decoys == [s for s in STATES * 12 for _ in range(2)]  # one state per group, alternating
    assert [bin2_decoy(i) for i in (0, 1, 6, 7, 12)] == ["ONLINE", "ONLINE", "OFFLINE", "OFFLINE", "ONLINE"]


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITE.generate(0, 6))  # asserts every gate, the control's included
    assert [r.variant for r in records] == VARIANTS
    assert all(set(r.arms) == {"harv_drop", "harv_complete", "sel_txt", "full_txt", "control"} for r in records)


def test_the_papers_match_is_a_substring_or_one_of_the_numbers():
    assert match("ABNORMAL", "NORMAL") == 1 and match("it was offline", "OFFLINE") == 1
    assert match("the value is 4063", "406") == 0 and match("406.", "406") == 1 and match("", "ONLINE") == 0


def _records(answer, texts: bool = True) -> list[PairRecord]:
    """Records of the suite's first 12 items; `answer(pair, arm, member)` is each member's text."""
    short = READOUTS.get("short")
    out = []
    for i, pair in enumerate(SUITE.generate(0, 12)):
        arms = {}
        for arm in pair.arms:
            said = tuple(answer(pair, arm.name, k) for k in (0, 1))
            parsed = tuple(short.parse(t, pair.menu, pair.registers) for t in said)
            shift = 0.0 if arm.name == "control" else 1.0
            arms[arm.name] = ArmRecord(
                parsed,
                outcome(parsed, pair.values),
                pair.values,
                ((0.0, 0.0), (0.0, 0.0)),
                shift,
                texts=said if texts else None,
            )
        out.append(
            PairRecord(f"note_knob-v1-s0-{i:05d}", pair.variant, pair.values, pair.menu, 1, 100, (100, 100), arms)
        )
    return out


def materializing(pair, arm, k):
    """harv_drop right only under the note; sel_txt and control read member A's value in both
    members; full_txt and harv_complete right."""
    kind = pair.variant.split("/")[0]
    if arm == "harv_drop":
        return pair.values[k] if kind == "note" else "no idea"
    if arm in ("sel_txt", "control"):
        return pair.values[0]
    return pair.values[k]


def test_the_papers_table_and_the_paired_contrast():
    m = EVALUATORS.get("note_knob")(suite="note_knob").summarize(_records(materializing))
    paper, head = m["paper"], m["headline"]
    # bin2's paper item: member B in group 0 (decoy ONLINE), member A in group 3 (decoy OFFLINE).
    assert [paper_members(r) for r in _records(materializing)[0:7:6]] == [(1,), (0,)]
    assert {s: (t["n_groups"], t["n_items"]) for s, t in paper.items()} == {
        "bin2": (2, 2),
        "num": (2, 4),
        "verdict": (2, 4),
    }
    for setting, items in (("bin2", 2), ("num", 4), ("verdict", 4)):
        table = paper[setting]
        assert table["arms"]["harv_drop"] == {"note": 1.0, "filler": 0.0}
        assert table["arms"]["sel_txt"] == {"note": 0.5, "filler": 0.5}  # member A's value: one paper item of two
        assert table["arms"]["full_txt"] == table["arms"]["harv_complete"] == {"note": 1.0, "filler": 1.0}
        assert table["harv_drop_discordant"] == [items, 0]
        assert table["mcnemar_p"] == pytest.approx(2 * 0.5**items) == stats.mcnemar_exact(items, 0)
        assert table["chance"] == {"bin2": 0.5, "num": 1 / 900, "verdict": 0.5}[setting]
        assert head["note_minus_filler"][setting] == {"n_groups": 2, "mean": 1.0, "ci": [1.0, 1.0]}
        assert head["harv_drop_classes"][f"{setting}/note"] == "2:0"
        assert m["by_variant"][f"{setting}/filler"]["harv_drop"]["classes"]["other"] == 2
        assert m["by_variant"][f"{setting}/note"]["sel_txt"]["classes"]["const"] == 2
    assert head["harv_drop"] == {
        f"{s}/{k}": float(k == "note") for s in ("bin2", "num", "verdict") for k in ("note", "filler")
    }
    assert head["mcnemar_p"] == {"bin2": 0.5, "num": 0.125, "verdict": 0.125}
    assert head["sel_txt_floor"]["verdict/note"] == 0.5 and head["control_clean"] is True
    metric = EVALUATORS.get("note_knob").metric("note_minus_filler_num")
    assert metric.text(metric.value(m)) == "+1.000 [+1.000, +1.000]"
    text = EVALUATORS.get("note_knob").metric("harv_drop_discordant")
    assert text.text(text.value(m)) == "bin2: 2:0, num: 4:0, verdict: 4:0"


def test_bin2_reads_the_paper_off_the_member_whose_gold_the_decoy_negates():
    """A model that eliminates the served decoy scores 1.0 on the paper's bin2 items (whose decoy is
    always the negation) but follows no donor; echoing the decoy scores 0.0."""

    def decoy_based(flip):
        def answer(pair, arm, k):
            decoy = pair.events[0].split()[-1]
            if decoy not in STATES:  # num and verdict items, left out below
                return ""
            return STATES[1 - STATES.index(decoy)] if flip else decoy

        return answer

    evaluator = EVALUATORS.get("note_knob")(suite="note_knob")
    for flip, expected in ((True, 1.0), (False, 0.0)):
        records = [r for r in _records(decoy_based(flip)) if r.variant.endswith("bin2")]
        m = evaluator.summarize(records)
        assert m["paper"]["bin2"]["arms"]["harv_drop"] == {"note": expected, "filler": expected}
        assert m["by_variant"]["bin2/note"]["harv_drop"]["menu_accuracy"] == 0.5
        assert m["by_variant"]["bin2/note"]["harv_drop"]["classes"]["const"] == 2
        assert m["headline"]["harv_drop_discordant"] == {"bin2": [0, 0]} and m["headline"]["mcnemar_p"]["bin2"] == 1.0


def test_without_generated_text_num_is_left_out_and_a_partial_run_reads_dashes():
    m = EVALUATORS.get("note_knob")(suite="note_knob").summarize(_records(materializing, texts=False))
    assert m["paper"]["num"] is None and set(m["paper"]) == {"bin2", "num", "verdict"}
    assert set(m["headline"]["mcnemar_p"]) == {"bin2", "verdict"}
    assert m["paper"]["verdict"]["arms"]["harv_drop"] == {"note": 1.0, "filler": 0.0}  # the probe's answers
    assert m["headline"]["note_minus_filler"]["num"]["mean"] == 1.0  # matbench's answers: both numbers parsed
    first = EVALUATORS.get("note_knob")(suite="note_knob").summarize(_records(materializing)[:1])  # --limit 1
    texts = {metric.key: metric.text(metric.value(first)) for metric in EVALUATORS.get("note_knob").contract}
    assert first["paper"] == {"bin2": None}
    assert texts["harv_drop"] == texts["mcnemar_p"] == texts["note_minus_filler_bin2"] == "—"
    assert texts["note_minus_filler_num"] == "—" and texts["harv_drop_classes"] == "bin2/note: 1:0"
