"""The recompute-matrix suite (kv_recomp): three write-time states x five deltas in kv_coherence2's
out-of-band world, as donor pairs; the rendering of the appended deltas, gates on a tiny model per
row, and the evaluator on known answer patterns."""

from __future__ import annotations

import random
import re

from matbench.data_gen import SUITES
from matbench.data_gen.recompute_matrix import (
    ARMS,
    DELTAS,
    ROWS,
    TRACE,
    VERDICTS,
    build,
    draw,
    make_item,
    partner_of,
)
from matbench.data_gen.rows import pair_to_row, row_to_pair
from matbench.evaluators import EVALUATORS
from matbench.evaluators.recompute_matrix import paper_score, pick2
from matbench.protocol.frames import FRAMES, HDR
from matbench.protocol.outcomes import outcome
from matbench.protocol.readouts import READOUTS
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records

STATES = ("ONLINE", "OFFLINE")
ARROW = "\u2192"


def _observation(body: str) -> str:
    """A delta body's observation: what follows "memory_patch() => "."""
    assert body.startswith("memory_patch() => ")
    return body.removeprefix("memory_patch() => ")


def test_items_are_kv_recomps_design():
    pairs = SUITES.get("recompute_matrix").generate(0, 96)
    assert SUITES.get("recompute_matrix").default_n == 96
    assert [p.variant for p in pairs] == list(ROWS) * 32
    for p in pairs:
        S, T, D = p.registers
        assert p.frame == "tool_steps" and FRAMES[p.frame].header == HDR and 8 <= p.source < 16
        assert [a.name for a in p.arms] == [*ARMS, "control"]
        assert all(a.served == (0, 23) and not a.uses_source and a.encoding == "joint" for a in p.arms[:5])
        assert p.arm("control").served == tuple(range(p.source))
        assert p.arm("stale").appended == () and p.arm("stale").expected is None
        new = p.arm("d_src").expected
        assert {p.arm(a).expected for a in DELTAS} == {new} and new in p.menu
        fillers = [e for i, e in enumerate(p.events) if i not in (0, p.source, 23)]
        assert len(fillers) == 21 and all(re.fullmatch(r"register (\w+) refreshed to (\d{3})", e) for e in fillers)
        assert not {e.split()[1] for e in fillers} & {S, T, D}
        delta = {a: p.arm(a).appended for a in DELTAS}
        if p.variant == "A_mat":
            assert p.values == p.menu == STATES and p.arm("stale").open_question and p.arm("stale").budget == 12
            assert p.source_bodies == tuple(f"register {S} set to state {v}" for v in STATES)
            assert re.fullmatch(rf"register {D} set to state (ONLINE|OFFLINE)", p.events[0])
            assert p.events[23] == f"register {T} mirrors register {S}"
            assert p.arm("stale").question == f"What state is register {T} in now? Answer ONLINE or OFFLINE."
            assert [_observation(delta[a][0]) for a in DELTAS] == [
                f"register {S} set to state {new}",
                f"[STATE UPDATE] register {S} {ARROW} {new}; overrides any earlier value and conclusion",
                f"register {S} set to state {new}; therefore register {T} is now {new}",
                f"register {S} set to state {new}",
            ]
            assert delta["oracle"][1] == f"register {T} mirrors register {S}"
        elif p.variant == "B_oper":
            above, below = (int(re.search(r"measured (\d+);", b).group(1)) for b in p.source_bodies)
            threshold = int(p.source_bodies[0].rsplit(" ", 1)[1])
            assert p.source_bodies[1].endswith(f"; the alert threshold is {threshold}")
            assert above >= threshold + 30 and below <= threshold - 30 and 100 <= below and above <= 998
            assert p.values == p.menu == VERDICTS and not p.arm("stale").open_question
            assert p.arm("stale").budget == 160 and p.trace == TRACE and p.arm("stale").trace == ""
            assert p.events[0] == f"sensor {D} logged a routine idle reading"
            assert p.events[23] == f"the operator reviewed sensor {S} against the alert threshold"
            assert p.arm("stale").question == f"Is sensor {S} above the alert threshold now?"
            gv2 = int(re.fullmatch(rf"sensor {S} measured (\d+)", _observation(delta["d_src"][0])).group(1))
            assert abs(gv2 - threshold) >= 30 and new == ("EXCEEDED" if gv2 > threshold else "NORMAL")
            assert [_observation(delta[a][0]) for a in DELTAS[1:]] == [
                f"[STATE UPDATE] sensor {S} measurement {ARROW} {gv2}; overrides any earlier value and conclusion",
                f"sensor {S} measured {gv2}; the verdict is now {new}",
                f"sensor {S} measured {gv2}; the alert threshold is {threshold}",
            ]
            assert len(delta["oracle"]) == 1 and not any(str(v) in " ".join(fillers).split() for v in (above, below))
        else:
            n1a, n1b = p.values
            assert p.menu == (n1a, n1b, new) and len({v[0] for v in p.menu}) == 3  # the probe's first tokens
            assert p.source_bodies == tuple(f"register {S} initialized to {v}" for v in p.values)
            dm = re.fullmatch(rf"register {D} initialized to (\d{{3}})", p.events[0]).group(1)
            assert dm != n1b and p.events[23] == f"register {T} copied from register {S}"
            assert p.arm("stale").question == f"What is the value of register {T} now? Answer with the number only."
            assert p.arm("stale").open_question and p.arm("stale").budget == 12
            assert [_observation(delta[a][0]) for a in DELTAS] == [
                f"register {S} set to {new}",
                f"[STATE UPDATE] register {S} {ARROW} {new}; overrides any earlier value and conclusion",
                f"register {S} set to {new}; therefore register {T} is now {new}",
                f"register {S} set to {new}",
            ]
            assert delta["oracle"][1] == f"register {T} copied from register {S}"
            assert not {n1a, n1b} & {e.split()[-1] for e in fillers}
    # v2 is drawn independently of both donors; both stale verdicts and every decoy state occur.
    a_rows = [p for p in pairs if p.variant == "A_mat"]
    assert {p.arm("d_src").expected for p in a_rows} == set(STATES)
    assert {p.events[0].split()[-1] for p in a_rows} == set(STATES)


def test_make_item_is_draw_partner_then_build():
    for index, row in enumerate(ROWS):
        rng = random.Random(11)
        d = draw(rng, row)
        partner = partner_of(rng, d)
        assert partner is not None  # seed 11 needs no redraw in any row
        assert make_item(random.Random(11), "x", index) == build("x", d, partner)
    assert partner_of(random.Random(0), draw(random.Random(11), "A_mat")) == ""


def test_rows_round_trip():
    for pair in SUITES.get("recompute_matrix").generate(3, 3):
        assert row_to_pair(pair_to_row(pair, "recompute_matrix", "1", 3, 0)) == pair


def test_deltas_render_as_kv_recomps_memory_patch_steps(tiny_llama):
    a, b, c = SUITES.get("recompute_matrix").generate(0, 3)
    engine = engine_for(tiny_llama)
    decode = engine.renderer.tokenizer.decode

    def query(pair, arm, readout="short"):
        return decode(list(engine.query_ids(pair, pair.arm(arm), READOUTS.get(readout))))

    S, T, _ = a.registers
    new = a.arm("d_src").expected
    assert query(a, "oracle") == (
        f"<step 25>\naction: memory_patch()\nobservation: register {S} set to state {new}\n"
        f"<step 26>\naction: reg_op()\nobservation: register {T} mirrors register {S}\n"
        f"\n\nQuestion: What state is register {T} in now? Answer ONLINE or OFFLINE." + engine.renderer.tail
    )
    assert query(a, "stale").startswith("\n\nQuestion: ")
    # B under the trace readout is kv_recomp's prompt; under short, matbench's direct menu suffix.
    S = b.registers[0]
    assert query(b, "stale", "trace") == (
        f"\n\nQuestion: Is sensor {S} above the alert threshold now? Answer "
        f"EXCEEDED or NORMAL.{TRACE}" + engine.renderer.tail
    )
    assert query(b, "stale", "short").endswith(" Answer EXCEEDED or NORMAL:" + engine.renderer.tail)
    assert query(c, "d_der").startswith("<step 25>\naction: memory_patch()\nobservation: register ")


def test_gates_and_evaluator_on_a_tiny_model_cover_every_row(tiny_llama):
    pairs = SUITES.get("recompute_matrix").generate(0, 3)
    records = gated_records(tiny_llama, pairs)  # asserts every gate, the control gate included
    assert [r.variant for r in records] == list(ROWS)
    assert [len(r.menu) for r in records] == [2, 2, 3]
    metrics = EVALUATORS.get("recompute_matrix")(suite="recompute_matrix").summarize(records)
    head = metrics["headline"]
    assert list(head["matrix"]) == [f"{row}/{arm}" for row in ROWS for arm in ARMS]
    assert head["matrix_paper_score"] is None  # the probe generates no text
    # At risk per pair: one member in A (v2 is one of the two states) and B (one stale verdict is
    # the new one), both in C (n2 is neither member's n1).
    assert {k: v[1] for k, v in head["old_value_leaks"].items()} == {
        f"{row}/{arm}": {"A_mat": 1, "B_oper": 1, "C_high": 2}[row] for row in ROWS for arm in DELTAS
    }
    assert len(head["donor_shift"]) == len(head["donor_classes"]) == 3 * (len(ARMS) + 1)
    assert head["control_clean"] is True
    evaluator = EVALUATORS.get("recompute_matrix")
    for metric in evaluator.contract:
        value = metric.value(metrics)
        if value is not None:
            metric.check(value)


# --- the metrics, on hand-made records --------------------------------------------------------


def _record(index: int, row: str, values, menu, new: str, answers: dict, texts: dict | None = None) -> PairRecord:
    """A record of item `index` in `row`: `answers` per arm (default: each member its own value)."""
    arms = {}
    for arm in (*ARMS, "control"):
        got = answers.get(arm, tuple(values))
        arms[arm] = ArmRecord(
            answers=got,
            outcome=outcome(got, tuple(values)),
            probe_answers=got,
            probe_logp=((0.0,) * len(menu), (0.0,) * len(menu)),
            shift=0.0,
            expected=new if arm in DELTAS else None,
            texts=None if texts is None else texts.get(arm, tuple(str(g) for g in got)),
        )
    return PairRecord(
        item_id=f"recompute_matrix-v1-s0-{index:05d}",
        variant=row,
        values=tuple(values),
        menu=tuple(menu),
        budget=1,
        length=100,
        n_tokens=(100, 100),
        arms=arms,
    )


def _three(texts: bool = False) -> list[PairRecord]:
    a = _record(
        0,
        "A_mat",
        STATES,
        STATES,
        "OFFLINE",
        {
            "d_src": ("ONLINE", "OFFLINE"),
            "d_mtn": ("OFFLINE", "OFFLINE"),
            "d_der": ("OFFLINE", "OFFLINE"),
            "oracle": ("OFFLINE", None),
            "control": ("ONLINE", "ONLINE"),
        },
        {"d_src": ("OFFLINE, no: ONLINE", "OFFLINE")} if texts else None,
    )
    b = _record(
        1,
        "B_oper",
        VERDICTS,
        VERDICTS,
        "NORMAL",
        {
            "stale": ("NORMAL", "NORMAL"),
            "d_src": ("EXCEEDED", "NORMAL"),
            "d_mtn": ("NORMAL", "NORMAL"),
            "d_der": ("NORMAL", "NORMAL"),
            "oracle": ("NORMAL", "EXCEEDED"),
            "control": ("NORMAL", "NORMAL"),
        },
        {"d_der": ("ABNORMAL", "NORMAL")} if texts else None,
    )
    c = _record(
        2,
        "C_high",
        ("463", "969"),
        ("463", "969", "888"),
        "888",
        {
            "d_src": ("463", "888"),
            "d_mtn": ("888", "888"),
            "d_der": ("888", "888"),
            "oracle": ("888", "888"),
            "control": ("463", "463"),
        },
        {"d_der": ("The value is 888.", "9888")} if texts else None,
    )
    return [a, b, c]


def test_the_matrix_on_the_papers_scale_with_donor_classes_beside_it():
    m = EVALUATORS.get("recompute_matrix")(suite="recompute_matrix").summarize(_three())
    head = m["headline"]
    assert head["matrix"] == {
        "A_mat/stale": 1.0,
        "A_mat/d_src": 0.5,
        "A_mat/d_mtn": 1.0,
        "A_mat/d_der": 1.0,
        "A_mat/oracle": 0.5,
        "B_oper/stale": 0.5,
        "B_oper/d_src": 0.5,
        "B_oper/d_mtn": 1.0,
        "B_oper/d_der": 1.0,
        "B_oper/oracle": 0.5,
        "C_high/stale": 1.0,
        "C_high/d_src": 0.5,
        "C_high/d_mtn": 1.0,
        "C_high/d_der": 1.0,
        "C_high/oracle": 1.0,
    }
    cell = m["paper_matrix"]["rows"]["A_mat"]["d_src"]
    assert (cell["hits"], cell["n"]) == (1, 2) and 0 < cell["ci"][0] < 0.5 < cell["ci"][1] < 1
    assert head["old_value_leaks"]["A_mat/d_src"] == [1, 1] and head["old_value_leaks"]["A_mat/oracle"] == [0, 1]
    assert head["old_value_leaks"]["B_oper/d_src"] == [1, 1] and head["old_value_leaks"]["C_high/d_src"] == [1, 2]
    assert head["donor_classes"]["A_mat/stale"] == [1, 0] and head["donor_classes"]["B_oper/oracle"] == [0, 1]
    assert head["donor_classes"]["A_mat/d_src"] == [1, 0] and head["donor_classes"]["C_high/d_mtn"] == [0, 0]
    assert head["delta_contrasts"] == {
        "A_mat/d_der-d_src": 0.5,
        "A_mat/oracle-d_src": 0.0,
        "B_oper/d_der-d_src": 0.5,
        "B_oper/oracle-d_src": 0.0,
        "C_high/d_der-d_src": 0.5,
        "C_high/oracle-d_src": 0.5,
    }
    assert head["control_clean"] is True and head["matrix_paper_score"] is None
    assert m["by_row"]["C_high"]["d_src"]["classes"]["other"] == 1


def test_generated_text_is_scored_as_kv_recomp_scores_it():
    m = EVALUATORS.get("recompute_matrix")(suite="recompute_matrix").summarize(_three(texts=True))
    paper = m["headline"]["matrix_paper_score"]
    # pick2 takes the LATER menu word ("OFFLINE, no: ONLINE" reads ONLINE), and finds NORMAL inside
    # ABNORMAL; C's gold must be one of the text's numbers (9888 is not 888).
    assert paper["A_mat/d_src"] == 0.5 and paper["B_oper/d_der"] == 1.0 and paper["C_high/d_der"] == 0.5
    assert paper["A_mat/stale"] == 1.0 and m["headline"]["matrix"]["A_mat/d_src"] == 0.5
    assert pick2("ONLINE then OFFLINE", "ONLINE", "OFFLINE") == "OFFLINE" and pick2("idle", "A", "B") is None
    c = _three()[2]
    assert paper_score(c, "stale", 1, "969, not 463") == 1 and paper_score(c, "stale", 1, "9690") == 0
