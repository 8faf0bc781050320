"""The update suite (kv_coherence2): an out-of-band patch of the dropped source, its questions,
controls and metrics."""

from __future__ import annotations

import math
import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.rows import pair_to_row, row_to_pair
from matbench.data_gen.update import KV_ARMS, QUERIES, TXT_ARMS, UpdateDraws, build_item, draw, make_item
from matbench.evaluators import EVALUATORS
from matbench.protocol.frames import FRAMES, HDR, SEM
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records

STATES = ("ONLINE", "OFFLINE")


def test_items_are_the_papers_design():
    pairs = SUITES.get("update").generate(0, 200)
    v2 = [p.arm("upd_bare__cur").expected for p in pairs]
    assert set(v2) == set(STATES) and 70 < v2.count("ONLINE") < 130  # independent of the donors
    for p in pairs:
        S, T, D, L = p.registers
        v = p.arm("upd_bare__cur").expected
        assert p.frame == "versioned" and 8 <= p.source < 16 and p.values == STATES
        assert p.source_bodies == tuple(f"register {S} set to state {x}   [{S} version 1]" for x in STATES)
        assert p.events[23] == f"register {T} mirrors register {S}"
        assert p.events[0].startswith(f"register {D} set to state ") and p.events[0].endswith(f"   [{D} version 1]")
        fillers = [e for i, e in enumerate(p.events) if i not in (0, p.source, 23)]
        assert all(e.endswith(" version 1]") and " refreshed to " in e for e in fillers)
        assert {a.name for a in p.arms} == {f"{a}__{q}" for a in KV_ARMS + TXT_ARMS for q in QUERIES} | {"control"}
        for q in QUERIES:
            assert p.arm(f"stale__{q}").appended == () and p.arm(f"txt_stale__{q}").appended == ()
            assert all(p.arm(f"{a}__{q}").served == (0, 23) for a in KV_ARMS + ("txt_stale",))
            # The patch updates the SOURCE S, never the asked register T.
            patched = [p.arm(f"{a}__{q}").appended[0] for a in ("upd_bare", "upd_ver", "patch_struct")]
            assert patched[0] == f"register {S} set to state {v}" and all(T not in t for t in patched)
            assert p.arm(f"upd_ver__{q}").appended[0] == f"register {S} set to state {v}   [{S} version 2]"
            assert f"affected={T} derived_state={v}" in p.arm(f"patch_der__{q}").appended[0]
            assert p.arm(f"ctl_wrong__{q}").appended[0] == f"register {L} set to state {v}   [{L} version 2]"
            dummy = p.arm(f"ctl_dummy__{q}").appended[0]
            assert not any(r in dummy for r in p.registers) and not any(s in dummy for s in STATES)
            assert p.arm(f"noopx__{q}").appended[0].startswith(f"register {S} was re-checked: state remains {v};")
            oracle = p.arm(f"txt_oracle__{q}")
            assert oracle.uses_source and oracle.encoding == "text" and oracle.served == tuple(range(24))
        assert p.arm("stale__cur").question == f"What state is register {T} in now, after every step recorded above?"
        assert p.arm("stale__hist").question == f"What state was register {T} in as of step 24?"
        assert p.arm("stale__unrel").question == f"What state is register {D} in?"
        # Gold where it is not the donor v1: cur of an update-delivering arm (v2), unrel (dm).
        dm = p.events[0].split()[5]
        assert [p.arm(f"{a}__cur").expected for a in KV_ARMS + TXT_ARMS] == [None, v, v, v, v, v, None, None, None, v]
        assert all(p.arm(f"{a}__hist").expected is None for a in KV_ARMS + TXT_ARMS)
        assert all(p.arm(f"{a}__unrel").expected == dm for a in KV_ARMS + TXT_ARMS)
        assert p.arm("control").served == tuple(range(p.source))


def test_make_item_is_draw_then_build():
    item = make_item(random.Random(5), "u", 0)
    assert item == build_item("u", draw(random.Random(5)))
    d = UpdateDraws(
        "DELTA", "OMEGA", "KAPPA", "BETA", "OFFLINE", "ONLINE", 9, tuple(("ALPHA", 100 + i) for i in range(21))
    )
    pair = build_item("x", d)
    assert pair.events[1] == "register ALPHA refreshed to 100   [ALPHA version 1]"
    assert pair.events[22] == "register ALPHA refreshed to 120   [ALPHA version 1]" and pair.source == 9


def test_rows_record_the_frame():
    pair = SUITES.get("update").generate(3, 1)[0]
    row = pair_to_row(pair, "update", "2", 3, 0)
    assert row["frame"] == "versioned" and row_to_pair(row) == pair


def test_header_has_sem_and_the_patch_renders_as_a_memory_patch_step(tiny_llama):
    pair = SUITES.get("update").generate(0, 1)[0]
    engine = engine_for(tiny_llama)
    assert FRAMES[pair.frame].header == HDR + SEM and SEM.startswith("Semantics of this log.")
    T = pair.registers[1]
    arm = pair.arm("upd_ver__cur")
    text = engine.renderer.tokenizer.decode(list(engine.query_ids(pair, arm, engine.probe_readout)))
    assert text.startswith(
        f"<step 25>\naction: memory_patch()\nobservation: {arm.appended[0]}\n"
        f"\n\nQuestion: What state is register {T} in now, after every step recorded above? "
        "Answer ONLINE or OFFLINE:"
    )
    # Other suites' appended events are unchanged (reg_op()).
    other = FRAMES["trajectory"].appended_text(24, "x")
    assert other == "<step 25>\naction: reg_op()\nobservation: x\n"


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("update").generate(0, 1)
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("update")(suite="update").summarize(records)
    head = metrics["headline"]
    assert set(head["patch_win_rate"]) == {"upd_bare", "upd_ver", "patch_struct", "patch_der", "txt_oracle", "pooled"}
    assert head["old_value_leaks"]["pooled"][1] == 4  # one changed member per pair and KV patch arm
    assert set(head["hist_accuracy"]) == set(KV_ARMS + TXT_ARMS)
    assert head["control_clean"] is True
    EVALUATORS.get("update").metric("patch_win_rate").check(head["patch_win_rate"])


# --- the metrics, on hand-made records --------------------------------------------------------


def _entry(answers, values, expected=None, logp=((0.0, 0.0), (0.0, 0.0)), paper=None) -> ArmRecord:
    return ArmRecord(
        answers=answers,
        outcome=outcome(answers, values),
        probe_answers=answers,
        probe_logp=logp,
        shift=0.0,
        expected=expected,
        paper_answers=paper,
    )


def _record(v2: str, dm: str, answers: dict[str, tuple], paper: bool = False) -> PairRecord:
    """A full update record: `answers` per arm name, default (v1 of each member) elsewhere."""
    arms = {}
    for a in KV_ARMS + TXT_ARMS:
        for q in QUERIES:
            name = f"{a}__{q}"
            expected = (
                dm
                if q == "unrel"
                else (v2 if q == "cur" and a not in ("stale", "ctl_wrong", "ctl_dummy", "txt_stale") else None)
            )
            got = answers.get(name, STATES)
            arms[name] = _entry(got, STATES, expected, paper=got if paper else None)
    arms["control"] = _entry(("ONLINE", "ONLINE"), STATES)
    return PairRecord(
        item_id="u", variant="", values=STATES, menu=STATES, budget=3, length=100, n_tokens=(100, 100), arms=arms
    )


def test_patch_wins_and_old_value_leaks_on_the_papers_scale():
    # Item 1 (v2 = ONLINE): member B (v1 OFFLINE) is the changed one. upd_bare: both ONLINE
    # (wins 2, no leak); upd_ver: B answers OFFLINE (leak). Item 2 (v2 = OFFLINE): member A is
    # changed; every patch arm answers OFFLINE in both (wins 2, no leak).
    r1 = _record(
        "ONLINE",
        "OFFLINE",
        {
            "upd_bare__cur": ("ONLINE", "ONLINE"),
            "upd_ver__cur": ("ONLINE", "OFFLINE"),
            "patch_struct__cur": ("ONLINE", "ONLINE"),
            "patch_der__cur": ("ONLINE", "ONLINE"),
        },
    )
    r2 = _record(
        "OFFLINE",
        "OFFLINE",
        {f"{a}__cur": ("OFFLINE", "OFFLINE") for a in ("upd_bare", "upd_ver", "patch_struct", "patch_der")},
    )
    m = EVALUATORS.get("update")(suite="update").summarize([r1, r2])
    head = m["headline"]
    assert head["patch_win_rate"]["upd_bare"] == 1.0 and head["patch_win_rate"]["upd_ver"] == 0.75
    assert head["old_value_leaks"]["upd_ver"] == [1, 2] and head["old_value_leaks"]["upd_bare"] == [0, 2]
    assert head["old_value_leaks"]["pooled"] == [1, 8] and head["patch_win_rate"]["pooled"] == 15 / 16
    # Default answers (each member its own v1) in every other arm: hist is right, cur of stale right.
    assert head["hist_accuracy"]["stale"] == 1.0 and m["paper_table"]["stale"]["cur"]["rate"] == 1.0
    # unrel gold is dm = OFFLINE in both items: member B answers it.
    assert head["unrel_accuracy"]["upd_ver"] == 0.5
    # noopx on the member with v1 == v2 (item 1: A, item 2: B): default answers are v1 = right.
    assert head["controls_hold"]["noopx"] == 1.0 and m["paper_table"]["noopx"]["cur_unchanged_member"]["n"] == 2
    # The decoy's value differs from v2 only in item 1.
    assert m["patch"]["wins_decoy_differs"]["upd_ver"]["n"] == 2
    assert "paper_parse" not in m  # the probe has no texts to read with the paper's parse


def test_win_intervals_are_item_level():
    from matbench import stats

    # Both members of each pair agree (both win or both lose): the item-level interval of 6/10 items.
    records = [
        _record("ONLINE", "OFFLINE", {"upd_bare__cur": ("ONLINE", "ONLINE") if k < 6 else ("OFFLINE", "OFFLINE")})
        for k in range(10)
    ]
    m = EVALUATORS.get("update")(suite="update").summarize(records)
    got = m["patch"]["wins"]["upd_bare"]
    assert got["rate"] == 0.6 and got["ci"] == pytest.approx(stats.wilson(6, 10).as_list())
    assert got["ci"] != pytest.approx(stats.wilson(12, 20).as_list())


def test_paper_parse_is_reported_beside_under_generating_readouts():
    r = _record("ONLINE", "OFFLINE", {"upd_bare__cur": ("ONLINE", "ONLINE")}, paper=True)
    m = EVALUATORS.get("update")(suite="update").summarize([r])
    assert m["paper_parse"]["patch"]["wins"]["upd_bare"]["rate"] == 1.0
    assert set(m["paper_parse"]["paper_table"]) == set(KV_ARMS + TXT_ARMS)


def test_despite_patch_separates_donor_following_leaks_from_one_word_habits():
    from matbench.evaluators.base import arm_metrics
    from matbench.evaluators.update import despite_patch

    # Item 1: patch ONLINE; member B's donor OFFLINE and it answers OFFLINE while A answers ONLINE:
    # the pair follows the donor, so B's leak is the donor beating the patch.
    # Item 2: patch OFFLINE; both answer OFFLINE (const): member A's donor ONLINE does not leak.
    # Item 3: patch ONLINE; both answer OFFLINE (const): member B's donor OFFLINE "leaks" by habit.
    def rec(patched: ArmRecord, stale_logp) -> PairRecord:
        stale = _entry(("ONLINE", "ONLINE"), STATES, logp=stale_logp)
        return PairRecord(
            item_id="u",
            variant="",
            values=STATES,
            menu=STATES,
            budget=2,
            length=100,
            n_tokens=(100, 100),
            arms={"upd_bare__cur": patched, "stale__cur": stale},
        )

    records = [
        rec(
            _entry(("ONLINE", "OFFLINE"), STATES, "ONLINE", ((-0.1, -2.0), (-1.0, -0.5))), ((-0.5, -1.0), (-0.5, -1.0))
        ),
        rec(
            _entry(("OFFLINE", "OFFLINE"), STATES, "OFFLINE", ((-2.0, -0.2), (-2.0, -0.2))),
            ((-1.0, -1.0), (-1.0, -1.0)),
        ),
        rec(
            _entry(("OFFLINE", "OFFLINE"), STATES, "ONLINE", ((-1.0, -0.5), (-1.0, -0.5))), ((-0.8, -0.6), (-0.8, -0.6))
        ),
    ]
    d = despite_patch(records, "upd_bare__cur", arm_metrics(records, "upd_bare__cur"))
    assert (d["follow"], d["anti"]) == (1, 0)
    assert (d["leaks_in_follow_pairs"], d["leaks_in_other_pairs"]) == (1, 1)
    # Margin of the patch value over the other word, patched minus stale, averaged over members:
    # item 1: ((1.9) + (-0.5))/2 - 0.5 = 0.2; item 2: 1.8 - 0 = 1.8; item 3: -0.5 - (-0.2) = -0.3.
    gains = [0.2, 1.8, -0.3]
    assert d["margin_gain"]["mean"] == pytest.approx(sum(gains) / 3)
    assert (d["margin_gain"]["positive"], d["margin_gain"]["negative"]) == (2, 1)


def test_expected_margin_is_the_donor_margin_on_a_larger_menu():
    from matbench.evaluators.update import _expected_margin

    # log p(expected) minus logsumexp of the others, as protocol.margins.donor_margin; not the best other.
    bare = ArmRecord(
        answers=("A", "A"),
        outcome="const",
        probe_answers=("A", "A"),
        probe_logp=((-1.0, -2.0, -2.0), (-0.5, -1.5, -3.0)),
        shift=0.0,
    )
    record = PairRecord(
        item_id="u",
        variant="",
        values=("A", "B"),
        menu=("A", "B", "C"),
        budget=2,
        length=100,
        n_tokens=(100, 100),
        arms={"bare": bare},
    )
    margins = [-2.0 - math.log(math.exp(-1.0) + math.exp(-2.0)), -1.5 - math.log(math.exp(-0.5) + math.exp(-3.0))]
    assert _expected_margin(record, "bare", "B") == pytest.approx(sum(margins) / 2)


def test_records_of_the_earlier_suite_are_refused_in_one_line():
    from matbench.errors import MatbenchError

    old = PairRecord(
        item_id="update-v1-s0-00000",
        variant="",
        values=STATES,
        menu=STATES,
        budget=2,
        length=100,
        n_tokens=(100, 100),
        arms={"bare": _entry(STATES, STATES, "ONLINE")},
    )
    with pytest.raises(MatbenchError, match="earlier suite version: run the suite again") as err:
        EVALUATORS.get("update")(suite="update").summarize([old])
    assert "\n" not in str(err.value)
