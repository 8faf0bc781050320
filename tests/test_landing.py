"""The landing suite: one experiment per trajectory (edge, depth-3, perturbation), determinism,
gates, and its evaluator (on a tiny model and on hand-made records whose metrics are known)."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.base import REGISTER_POOL
from matbench.data_gen.landing import (
    C1_AT,
    C2_AT,
    C3_AT,
    EDGE_AT,
    KINDS,
    MENTION,
    PERTURB_AT,
    ROOT_AT,
    build_depth3,
    build_edge,
    build_perturb,
    draw_depth3,
    draw_edge,
    draw_perturb,
)
from matbench.evaluators import EVALUATORS
from matbench.evaluators.landing import KINDS as EVALUATOR_KINDS
from matbench.evaluators.landing import root_effect, root_sensitive
from matbench.protocol.readouts import HOPS_TRACE, RELEVANT_TRACE
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records

FILLER = re.compile(r"register [A-Z]+ refreshed to \d{3}")
STATES = ("ONLINE", "OFFLINE")


def _own_slots(pair) -> set[int]:
    return {i for i, body in enumerate(pair.events) if not FILLER.fullmatch(body)}


def test_each_trajectory_holds_one_experiment_with_only_its_own_events():
    suite = SUITES.get("landing")
    pairs = suite.generate(0, 64)
    assert pairs == suite.generate(0, 64) and pairs != suite.generate(1, 64)
    assert [p.variant for p in pairs[:4]] == list(KINDS) and suite.default_n >= 4 * 48
    assert EVALUATOR_KINDS == KINDS  # the evaluator knows the suite's item kinds
    for p in pairs:
        source_reg = p.source_bodies[0].split()[1]
        assert 8 <= p.source < 12 and p.events[0].startswith("register ") and " set to state " in p.events[0]
        served = {a.name: set(a.served) for a in p.arms}
        assert all(p.source not in s for name, s in served.items() if name != "txt")
        assert served["control"] == set(range(p.source))
        if p.variant == "edge":  # kv_causal3
            mirror, target = p.registers[1], p.registers[2]
            assert _own_slots(p) == {0, p.source, ROOT_AT, EDGE_AT}
            assert p.events[ROOT_AT] == f"register {mirror} mirrors register {source_reg}"
            assert p.events[EDGE_AT] == f"register {target} mirrors register {mirror}"
            assert served["root_edge"] == served["root_edge_cross"] == {0, ROOT_AT, EDGE_AT}
            assert p.arm("root_edge_cross").swapped == (EDGE_AT,)
            assert served["root_only"] == {0, ROOT_AT} and served["edge_only"] == {0, EDGE_AT}
            assert p.arm("root_only").question.endswith(f"{mirror} in?") and p.trace == RELEVANT_TRACE
        elif p.variant == "depth3":  # kv_hops
            mirror, mirror2, target = p.registers[1:4]
            assert _own_slots(p) == {0, p.source, C1_AT, C2_AT, C3_AT}
            assert p.events[C2_AT] == f"register {mirror2} mirrors register {mirror}"
            assert p.events[C3_AT] == f"register {target} mirrors register {mirror2}"
            assert served["depth3_root"] == {0, C1_AT, C2_AT, C3_AT} == served["depth3_floor"]
            assert served["depth3_noroot"] == {0, C2_AT, C3_AT}
            assert served["depth3_c2"] == {0, C2_AT} and served["depth3_c3"] == {0, C3_AT}
            assert p.arm("depth3_floor").encoding == "text"
            assert p.arm("depth3_c2").question.endswith(f"{mirror2} in?")
            assert all(p.arm_trace(a) == HOPS_TRACE for a in p.arms)
        else:  # kv_poscontrol
            mirror, unrelated = p.registers[1], p.registers[3]
            assert _own_slots(p) == {0, p.source, ROOT_AT, PERTURB_AT}
            named = mirror if p.variant == "perturb/mention" else unrelated
            assert p.events[PERTURB_AT] == MENTION.format(m=named)
            assert p.slot_alternatives == ((PERTURB_AT, (MENTION.format(m=mirror), MENTION.format(m=unrelated))),)
            assert unrelated not in " ".join(p.events[:PERTURB_AT] + p.events[PERTURB_AT + 1 :])
            arm = p.variant.split("/")[1]
            assert served[arm] == served[f"{arm}_cross"] == {0, ROOT_AT, PERTURB_AT}
            assert ("absent" in served) == (arm == "mention")
            assert all(a.question.endswith(f"{mirror} in?") for a in p.arms)


def test_the_two_perturbation_items_of_a_group_differ_only_in_the_referent():
    pairs = SUITES.get("landing").generate(0, 4 * 40)
    same_length = 0
    for mention, swap in zip(pairs[2::4], pairs[3::4]):
        assert [i for i, (a, b) in enumerate(zip(mention.events, swap.events)) if a != b] == [PERTURB_AT]
        assert mention.source_bodies == swap.source_bodies and mention.registers == swap.registers
        mirror, unrelated = mention.registers[1], mention.registers[3]
        assert unrelated not in mention.registers[:3]
        # kv_poscontrol: U's sentence has the mention's length whenever some register allows it.
        same_length += len(unrelated) == len(mirror)
        if len(unrelated) != len(mirror):  # no other register has the mirror's name length
            others = set(REGISTER_POOL) - set(mention.registers[:3])
            assert not any(len(r) == len(mirror) for r in others)
    assert same_length >= 20  # 7 of the 10 names have five letters
    # Edge and depth-3 items draw from their own streams (not the perturbation's).
    assert pairs[0].events[1:] != pairs[2].events[1:] and pairs[1].events[1:] != pairs[2].events[1:]


def test_make_item_is_a_draw_then_a_build():
    suite = SUITES.get("landing")
    for index, kind in enumerate(KINDS):
        rng = random.Random(
            f"{'perturb' if kind.startswith('perturb') else kind}/{suite.item_rng(5, index).getrandbits(64)}"
        )
        item_id = f"x-{index}"
        if kind == "edge":
            built = build_edge(draw_edge(rng), item_id)
        elif kind == "depth3":
            built = build_depth3(draw_depth3(rng), item_id)
        else:
            built = build_perturb(draw_perturb(rng), item_id, kind.split("/")[1])
        assert built == suite.make_item(suite.item_rng(5, index), item_id, index)
    with pytest.raises(ValueError, match="referent"):
        build_perturb(draw_perturb(random.Random(0)), "x", "neutral")


def test_short_runs_leave_the_missing_experiments_empty_and_the_contract_readable(tiny_llama):
    pairs = SUITES.get("landing").generate(0, 4)
    records = gated_records(tiny_llama, pairs)
    evaluator = EVALUATORS.get("landing")(suite="landing")
    metrics = evaluator.summarize(records)
    assert set(metrics["by_variant"]) == set(KINDS)
    for pair in pairs:
        assert set(metrics["by_variant"][pair.variant]["arms"]) == {a.name for a in pair.arms}
    head = metrics["headline"]
    assert head["control_clean"] is True
    assert head["perturbation"]["n_groups"] == 1 and head["perturbation"]["complete_groups"] == 1
    assert set(head["depth3"]) >= {"depth3_root", "depth3_noroot", "depth3_c2", "depth3_c3", "depth3_floor"}
    for metric in evaluator.contract:
        metric.text(metric.value(metrics))
    short = evaluator.summarize(records[:1])  # an edge item alone
    assert short["headline"]["depth3_root_accuracy"] is None and short["headline"]["perturbation"] is None
    assert all(m.text(m.value(short)) for m in evaluator.contract)


def test_swapping_every_donor_carrying_row_turns_one_member_into_the_other(tiny_llama):
    from matbench.errors import MatbenchError
    from matbench.protocol.pairs import Arm
    from tests.helpers import engine_for

    pair = SUITES.get("landing").generate(0, 1)[0]
    question = pair.arm("root_edge").question
    full_swap = Arm("full_swap", (0, ROOT_AT, EDGE_AT), question, swapped=(ROOT_AT, EDGE_AT))
    pair = dataclasses.replace(pair, arms=pair.arms + (full_swap,))
    pair.validate()
    engine = engine_for(tiny_llama)
    record = engine.score(pair, *engine.prepare(pair))
    same, swapped, cross = (record.arms[a].probe_logp for a in ("root_edge", "full_swap", "root_edge_cross"))
    # The decoy precedes the source (identical rows); with root and edge swapped, member A is served
    # exactly member B's rows and vice versa.
    assert swapped[0] == same[1] and swapped[1] == same[0]
    assert record.arms["full_swap"].shift == -record.arms["root_edge"].shift
    # Crossing only the edge gives neither member's rows.
    assert cross[0] not in (same[0], same[1])
    bad = dataclasses.replace(pair, arms=(Arm("x", (0, ROOT_AT), question, swapped=(EDGE_AT,)),))
    with pytest.raises(MatbenchError, match="swapped events must be served"):
        bad.validate()


# --- the evaluator on hand-made records ------------------------------------------------------


def _arm(answers, shift=0.0, paper=None) -> ArmRecord:
    from matbench.protocol.outcomes import outcome

    return ArmRecord(
        answers=tuple(answers),
        outcome=outcome(tuple(answers), STATES),
        probe_answers=tuple(a or "ONLINE" for a in answers),
        probe_logp=((0.0, 0.0), (0.0, 0.0)),
        shift=shift,
        paper_answers=None if paper is None else tuple(paper),
    )


def _record(index: int, variant: str, arms: dict, n_tokens=(500, 501)) -> PairRecord:
    arms = {**arms, "txt": _arm(STATES), "control": _arm(("ONLINE", "ONLINE"))}
    return PairRecord(
        item_id=f"landing-v3-s0-{index:05d}",
        variant=variant,
        values=STATES,
        menu=STATES,
        budget=9,
        length=700,
        n_tokens=n_tokens,
        arms=arms,
    )


F, A, C_ON = STATES, STATES[::-1], ("ONLINE", "ONLINE")  # follow, anti, const answers


def test_root_effect_and_sensitivity_follow_kv_poscontrol():
    # mention: j = i cells follow the root; crossing the slot-18 rows turns member A to OFFLINE.
    rec = _record(
        2, "perturb/mention", {"absent": _arm(F), "mention": _arm(F), "mention_cross": _arm(("OFFLINE", "OFFLINE"))}
    )
    # cells: root A (j=A: ON, j=B: OFF) -> 1/2; root B (j=A: OFF, j=B: OFF) -> 0
    assert root_effect(rec, "mention") == 0.5 and root_effect(rec, "absent") == 1.0
    assert root_sensitive(rec, "mention") and root_sensitive(rec, "absent")
    const = _record(2, "perturb/mention", {"absent": _arm(C_ON), "mention": _arm(C_ON), "mention_cross": _arm(C_ON)})
    assert root_effect(const, "mention") == 0.0 and not root_sensitive(const, "mention")
    off_menu = _record(
        2, "perturb/mention", {"absent": _arm((None, "OFFLINE")), "mention": _arm(F), "mention_cross": _arm(F)}
    )
    assert root_effect(off_menu, "absent") is None and root_effect(off_menu, "mention") == 1.0


def test_the_headline_on_hand_made_records():
    records = []
    for g in range(4):
        base = 4 * g
        # edge: root_edge follows in every item, the crossed edge too (the edge is inert); edge-only const.
        records.append(
            _record(
                base,
                "edge",
                {
                    "root_edge": _arm(F, 1.0),
                    "root_edge_cross": _arm(F, 0.5),
                    "root_only": _arm(F),
                    "edge_only": _arm(C_ON, 0.0),
                },
            )
        )
        # depth-3: with the root 3 of 4 items right (both members), without it 1 of 4; the floor at chance.
        d3 = {
            "depth3_c1": _arm(F),
            "depth3_c2": _arm(C_ON),
            "depth3_c3": _arm(C_ON),
            "depth3_root": _arm(F if g < 3 else A, 0.2),
            "depth3_noroot": _arm(F if g < 1 else A, -0.1),
            "depth3_floor": _arm(C_ON),
        }
        records.append(_record(base + 1, "depth3", d3))
        # perturbation: the mention kills the root effect, the referent swap and absence do not;
        # groups 0-1 are length-matched, 2-3 are not.
        records.append(
            _record(
                base + 2,
                "perturb/mention",
                {"absent": _arm(F, 2.0), "mention": _arm(C_ON, 0.5), "mention_cross": _arm(C_ON, 0.5)},
            )
        )
        records.append(
            _record(
                base + 3,
                "perturb/refswap",
                {"refswap": _arm(F, 1.5), "refswap_cross": _arm(F, 1.5)},
                n_tokens=(500, 501) if g < 2 else (499, 500),
            )
        )
    metrics = EVALUATORS.get("landing")(suite="landing").summarize(records)
    head = metrics["headline"]
    assert head["root_edge_follow_anti"] == [4, 0] and head["edge_only_follow_anti"] == [0, 0]
    assert head["downstream_effect"]["difference"] == 0.0 and head["downstream_effect"]["equivalent"]
    assert head["depth3_root_accuracy"]["accuracy"] == 0.75 and head["depth3_noroot_accuracy"]["accuracy"] == 0.25
    assert head["depth3_root_accuracy"]["follow_rate"] == 0.75 and head["depth3_root_accuracy"]["chance"] == 0.5
    assert head["depth3_root_accuracy"]["shift"]["mean"] == pytest.approx(0.2)
    # Members of a pair agree, so the item-level interval is the Wilson interval over 4 items, not 8 answers.
    from matbench import stats

    assert head["depth3_root_accuracy"]["ci"] == stats.wilson(3, 4).as_list()
    assert head["depth3"]["root_minus_noroot"]["mean"] == 0.5 and head["depth3"]["root_minus_noroot"]["n"] == 4
    assert head["depth3"]["depth3_c2"]["accuracy"] == 0.5
    p = head["perturbation"]
    assert p["n_groups"] == 4 and p["complete_groups"] == 4 and p["length_matched"] == 2
    assert {c: e["mean"] for c, e in p["root_effect"].items()} == {"absent": 1.0, "mention": 0.0, "refswap": 1.0}
    assert head["mention_effect"]["mean"] == -1.0 and head["mention_effect"]["n"] == 4
    assert p["mention_effect_length_matched"]["n"] == 2
    assert p["position_effect"]["mean"] == 0.0 and p["confounded_effect"]["mean"] == -1.0
    assert p["root_sensitivity"]["absent"]["rate"] == 1.0 and p["root_sensitivity"]["mention"]["rate"] == 0.0
    assert p["shift_mention_minus_refswap"]["mean"] == -1.0 and p["shift_mention_minus_absent"]["mean"] == -1.5
    assert "paper_parse" not in p  # the probe readout: no generated texts
    assert set(head["downstream_effect_perturbation"]) == {"mention", "refswap"}
    assert head["comprehension"] == dict.fromkeys(KINDS, 1.0) and head["control_clean"] is True
    from matbench.errors import MatbenchError

    old = dataclasses.replace(records[0], variant="")  # a landing v2 record: every experiment in one item
    with pytest.raises(MatbenchError, match="earlier suite version: run the suite again"):
        EVALUATORS.get("landing")(suite="landing").summarize([old] + records)


def test_the_papers_parse_is_reported_beside_under_a_generating_readout():
    def arm(answers, paper):
        return _arm(answers, paper=paper)

    records = [
        _record(2, "perturb/mention", {"absent": arm(F, F), "mention": arm(F, C_ON), "mention_cross": arm(F, C_ON)}),
        _record(3, "perturb/refswap", {"refswap": arm(F, F), "refswap_cross": arm(F, F)}),
    ]
    records = [dataclasses.replace(r, arms={**r.arms, "txt": arm(F, F), "control": arm(C_ON, C_ON)}) for r in records]
    p = EVALUATORS.get("landing")(suite="landing").summarize(records)["headline"]["perturbation"]
    assert p["mention_effect"]["mean"] == 0.0  # matbench's parse: the mention follows the root
    assert p["paper_parse"]["mention_effect"]["mean"] == -1.0  # the paper's parse read const ONLINE
    assert p["paper_parse"]["root_effect"]["absent"]["mean"] == 1.0
