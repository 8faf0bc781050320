"""The trigger suite: the paper's bank and upstream, groups of 16 on one geometry (newline-padded
carriers, one query position in both serving modes), gates, and the accuracy-scale evaluator."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from matbench.data_gen import SUITES
from matbench.data_gen.base import REGISTER_POOL
from matbench.data_gen.trigger import BANK_FLAG, BANK_MIRROR, CARRIER_AT, CONSTRUCTIONS, draw
from matbench.engine.cache import EventCache
from matbench.engine.layout import layout_pair
from matbench.engine.pair_engine import PairEngine
from matbench.engine.render import Renderer
from matbench.engine.serving import query_start
from matbench.errors import MatbenchError
from matbench.evaluators import EVALUATORS
from matbench.protocol.pairs import SERVING_MODES
from matbench.protocol.readouts import READOUTS, RELEVANT_TRACE
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_the_bank_is_the_papers():
    # kv_parabank.py BANK_MIRROR / BANK_FLAG: keys and wording, verbatim.
    assert [k for k, _ in BANK_MIRROR] == [
        "mirrors",
        "tracks",
        "copies",
        "matches",
        "follows",
        "shadows",
        "kept_eq",
        "synced",
    ]
    assert dict(BANK_FLAG) == {
        "accord": "the alert status flag for sensor {r} was set according to the check result",
        "inline": "the alarm flag for {r} was updated in line with the check outcome",
        "reflect": "the alert flag for sensor {r} was set to reflect the check result",
        "record": "the alert flag for sensor {r} now records the outcome of the check",
        "assign": "sensor {r}'s alert flag was assigned based on the threshold comparison",
        "write": "the alert flag for sensor {r} was written from the check verdict",
        "consist": "the alert flag for sensor {r} was made consistent with the check result",
        "update": "following the check, the alert flag for sensor {r} was updated accordingly",
    }


def test_groups_share_draws_and_cover_the_bank():
    pairs = SUITES.get("trigger").generate(0, 32)
    for group in (pairs[:16], pairs[16:]):
        assert [p.variant for p in group] == [f"{f}/{k}" for f, k in CONSTRUCTIONS]
        assert len({p.slot_alternatives for p in group}) == 1  # one geometry for the 16
        carriers = [p.events[CARRIER_AT] for p in group]
        assert len(set(carriers)) == 16 and set(dict(group[0].slot_alternatives)[CARRIER_AT]) == set(carriers)
        for p in group:  # padded to the longest of its own family (kv_parabank2)
            assert p.padded == ((CARRIER_AT, tuple(carriers[:8] if p.variant.startswith("mirror/") else carriers[8:])),)
            assert p.trace == RELEVANT_TRACE
        mirror, flag = group[0], group[8]
        shared = [i for i in range(1, CARRIER_AT) if i not in (mirror.source, flag.source, flag.source + 1)]
        assert [mirror.events[i] for i in shared] == [flag.events[i] for i in shared]  # one filler background
    assert pairs[0].events != pairs[16].events


def test_the_upstream_and_draws_are_the_papers():
    pairs = SUITES.get("trigger").generate(3, 16 * 40)
    for k in range(0, len(pairs), 16):
        mirror, flag = pairs[k], pairs[k + 8]
        d, s, t = mirror.registers
        assert 8 <= mirror.source < 16 and 8 <= flag.source < 14
        assert mirror.events[0] == f"register {d} completed a routine self-test"
        assert mirror.source_bodies == (f"register {s} set to state ONLINE", f"register {s} set to state OFFLINE")
        assert mirror.events[CARRIER_AT] == f"register {t} mirrors register {s}"
        assert mirror.arm("kv").question == f"What state is register {t} in?"
        d2, sensor = flag.registers
        assert {d, s, t} <= set(REGISTER_POOL) and {d2, sensor} <= set(REGISTER_POOL) and d2 != sensor
        assert flag.events[0] == f"register {d2} completed a routine self-test"
        (hi, thr), (lo, thr2) = (
            tuple(
                map(
                    int,
                    re.fullmatch(
                        rf"sensor {sensor} measured (\d+); the alert threshold "
                        r"is (\d+)",
                        body,
                    ).groups(),
                )
            )
            for body in flag.source_bodies
        )
        assert thr == thr2 and 100 <= lo <= thr - 30 and thr + 30 <= hi <= 998
        assert flag.donor_events == (
            (
                flag.source + 1,
                f"alert check result for sensor {sensor}: threshold EXCEEDED",
                f"alert check result for sensor {sensor}: threshold NORMAL",
            ),
        )
        assert flag.values == ("EXCEEDED", "NORMAL")
        assert flag.arm("kv").question == f"Was sensor {sensor} above the alert threshold?"
        for p in (mirror, flag):
            assert {a.name: (a.served, a.query_at_end) for a in p.arms} == {
                "kv": ((0, CARRIER_AT), True),
                "txt": (tuple(range(24)), True),
                "control": (tuple(range(p.source)), False),
            }


def test_the_trace_query_is_the_papers(tokenizer):
    # kv_parabank.main: qm, qf = "\n\nQuestion: ... Answer ONLINE or OFFLINE." + TRACE (then the chat tail).
    renderer = Renderer(tokenizer)
    group = SUITES.get("trigger").generate(0, 16)
    trace = READOUTS.get("trace")
    t, sensor = group[0].registers[2], group[8].registers[1]
    assert renderer.arm_query(group[0], group[0].arm("kv"), trace) == (
        f"\n\nQuestion: What state is register {t} in? Answer ONLINE or OFFLINE. Locate the relevant statement, "
        "then end your answer with the final state word." + renderer.tail
    )
    assert renderer.arm_query(group[8], group[8].arm("kv"), trace) == (
        f"\n\nQuestion: Was sensor {sensor} above the alert threshold? Answer EXCEEDED or NORMAL. Locate the relevant "
        "statement, then end your answer with the final state word." + renderer.tail
    )


def _query_positions(engine: PairEngine, pair, arm: str) -> dict[str, set[int]]:
    """Where the engine asks `arm` of `pair` under each serving mode (both members): its own serve
    requests, over row-less caches with the global prefill's geometry."""
    layout = layout_pair(pair, engine.renderer)
    caches = tuple(
        EventCache((), (), torch.tensor(m.positions, dtype=torch.long), m.header_span, m.event_spans, layout.length)
        for m in layout.members
    )
    k = next(j for j, a in enumerate(pair.arms) if a.name == arm)
    requests = engine.requests(pair, caches, READOUTS.get("probe"))[2 * k : 2 * k + 2]
    return {mode: {query_start(r, mode)[0] for r in requests} for mode in SERVING_MODES}


@pytest.mark.parametrize("seed", [0, 1])
def test_one_query_position_per_group_of_16_in_both_serving_modes(tiny_llama, seed):
    engine = PairEngine(tiny_llama)
    group = SUITES.get("trigger").generate(seed, 16)
    newline = engine.renderer.ids("\n")[-1]
    for arm in ("kv", "txt"):
        positions = [_query_positions(engine, p, arm) for p in group]
        for mode in SERVING_MODES:
            assert len(set().union(*(q[mode] for q in positions))) == 1, (arm, mode)
        assert positions[0]["compact"] == positions[0]["native"]
    layouts = [layout_pair(p, engine.renderer) for p in group]
    assert len({lay.length for lay in layouts}) == 1
    # The carrier starts at one position; within a family it serves rows of one length, its tail
    # real newline tokens (the pad), the longest construction unpadded.
    starts, lengths = set(), {"mirror": set(), "flag": set()}
    pads = {"mirror": [], "flag": []}
    for p, lay in zip(group, layouts):
        lo, hi = lay.members[0].event_spans[CARRIER_AT]
        starts.add(lay.members[0].positions[lo])
        family = p.variant.split("/")[0]
        lengths[family].add(hi - lo)
        text_ids = engine.renderer.ids(f"<step 24>\naction: reg_op()\nobservation: {p.events[CARRIER_AT]}\n")
        ids = lay.members[0].input_ids[lo:hi]
        assert list(ids[: len(text_ids)]) == text_ids and set(ids[len(text_ids) :]) <= {newline}
        pads[family].append(len(ids) - len(text_ids))
    assert len(starts) == 1 and all(len(v) == 1 for v in lengths.values())
    assert min(pads["mirror"]) == 0 and min(pads["flag"]) == 0 and max(pads["mirror"] + pads["flag"]) > 0


def test_a_carrier_longer_than_its_padding_target_is_refused(tokenizer):
    pair = SUITES.get("trigger").generate(0, 1)[0]
    short = dataclasses.replace(pair, padded=((CARRIER_AT, ("x",)),))
    with pytest.raises(MatbenchError, match="longer than the padding target"):
        layout_pair(short, Renderer(tokenizer))


def test_paired_readings_straddle_the_threshold():
    import random

    for k in range(200):
        d = draw(random.Random(k)).flag
        assert 100 <= d.low <= d.threshold - 30 < d.threshold + 30 <= d.high < 999


def test_gates_and_evaluator_on_a_tiny_model(tiny_llama):
    pairs = SUITES.get("trigger").generate(0, 16)
    pairs = [pairs[0], pairs[5], pairs[8], pairs[14]]  # two mirror, two flag constructions
    records = gated_records(tiny_llama, pairs)
    metrics = EVALUATORS.get("trigger")(suite="trigger").summarize(records)
    assert set(metrics["by_construction"]) == {p.variant for p in pairs}
    assert all(m["n_pairs"] == 1 for m in metrics["by_construction"].values())
    assert metrics["headline"]["control_clean"] is True


VALUES = ("ONLINE", "OFFLINE")


def _arm(answers, paper=None, shift: float = 0.0) -> ArmRecord:
    outcome = (
        "follow"
        if tuple(answers) == VALUES
        else "anti"
        if tuple(answers) == VALUES[::-1]
        else "const"
        if answers[0] == answers[1] and answers[0] is not None
        else "other"
    )
    return ArmRecord(
        answers=tuple(answers),
        outcome=outcome,
        probe_answers=VALUES,
        probe_logp=((0.0, 0.0), (0.0, 0.0)),
        shift=shift,
        paper_answers=tuple(paper) if paper else None,
    )


def test_write_through_is_kv_accuracy_against_the_gold():
    right, const, wrong = VALUES, ("ONLINE", "ONLINE"), VALUES[::-1]
    records = []
    for i in range(20):
        # writes: 16 both-right pairs, 4 const (accuracy .9); silent: every pair const (accuracy .5, the
        # donor-blind floor), lost: writes but the txt arm is at chance.
        kv_writes = right if i < 16 else const
        records += [
            PairRecord(
                f"t-{i}-0",
                "flag/consist",
                VALUES,
                VALUES,
                1,
                10,
                (10, 10),
                {"kv": _arm(kv_writes, kv_writes, 0.3), "txt": _arm(right, right), "control": _arm(const)},
            ),
            PairRecord(
                f"t-{i}-1",
                "flag/write",
                VALUES,
                VALUES,
                1,
                10,
                (10, 10),
                {"kv": _arm(const, right, 0.0), "txt": _arm(right, right), "control": _arm(const)},
            ),
            PairRecord(
                f"t-{i}-2",
                "mirror/tracks",
                VALUES,
                VALUES,
                1,
                10,
                (10, 10),
                {"kv": _arm(right if i % 2 else wrong, right), "txt": _arm(const, const), "control": _arm(const)},
            ),
        ]
    m = EVALUATORS.get("trigger")(suite="trigger").summarize(records)
    rows = m["by_construction"]
    assert rows["flag/consist"]["write_through_accuracy"] == pytest.approx(0.9)
    assert rows["flag/consist"]["follow_rate"] == pytest.approx(0.8)  # matbench's, beside the paper's
    assert rows["flag/write"]["write_through_accuracy"] == 0.5 and rows["flag/write"]["write_pairs"]["both_right"] == 0
    assert rows["flag/consist"]["write_p"] == pytest.approx(0.5**16)
    assert rows["flag/consist"]["write_through_ci"][0] > 0.5 > rows["flag/write"]["write_through_ci"][0]
    assert [rows[v]["class"] for v in ("flag/consist", "flag/write", "mirror/tracks")] == ["W", "U", "N"]
    # The paper's parse of the same texts: here it reads flag/write's generations as both right.
    assert rows["flag/write"]["paper_parse"]["write_through_accuracy"] == 1.0
    h = m["headline"]
    assert h["classes"] == {"W": 1, "U": 1, "N": 1} and h["any_written"] is True
    assert h["classes_by_family"] == {"flag": {"W": 1, "U": 1, "N": 0}, "mirror": {"W": 0, "U": 0, "N": 1}}
    assert h["write_through_accuracy"] == {"flag/consist": 0.9, "flag/write": 0.5, "mirror/tracks": 0.5}
    assert h["comprehension_summary"] == {"mean": pytest.approx(2 / 3 + 0.5 / 3), "min": 0.5}
    card = EVALUATORS.get("trigger").metric("write_through")
    assert card.scale.value == "accuracy" and card.chance == 0.5
