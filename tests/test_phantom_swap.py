"""The phantom-swap suite (kv_phantom E1): kv_phantom's objects and notes, one event served after
an unseen prefix, gates on a tiny model, and the evaluator on known answer patterns."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.phantom_swap import EVENT, FILLERS, PAIRS, SOURCE
from matbench.evaluators import EVALUATORS
from matbench.protocol.frames import FRAMES
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_items_walk_the_papers_objects_then_its_notes():
    pairs = SUITES.get("phantom_swap").generate(0, 2 * len(PAIRS))
    assert [p.variant for p in pairs] == [obj for obj, *_ in PAIRS] * 2
    assert len(PAIRS) == 26 and len(FILLERS) == 6
    first, again = pairs[0], pairs[len(PAIRS)]
    assert first.events[EVENT] == again.events[EVENT] and first.events[1] != again.events[1]
    a, b = first.member(0).events, first.member(1).events
    assert [i for i in range(3) if a[i] != b[i]] == [SOURCE] and first.values == ("ONLINE", "OFFLINE")
    render = FRAMES[first.frame].render_event
    assert render(SOURCE, a[SOURCE]) == "<step 1>\naction: check_server()\nobservation: server status = ONLINE\n"
    assert (
        FRAMES[first.frame].header.startswith("You are reviewing") and "deployment tools" in FRAMES[first.frame].header
    )
    assert [arm.name for arm in first.arms] == ["swap", "iso", "txt"] and first.arm("swap").budget == 16


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("phantom_swap").generate(0, 3))  # asserts every gate
    assert [r.variant for r in records] == ["server", "database", "firewall"]


def _record(index: int, swap, iso) -> PairRecord:
    obj, _, a, b = PAIRS[index]

    def arm(ans):
        return ArmRecord(ans, outcome(ans, (a, b)), (a, a), ((0.0, 0.0), (0.0, 0.0)), 0.0)

    return PairRecord(
        f"phantom_swap-v1-s0-{index:05d}",
        obj,
        (a, b),
        (a, b),
        1,
        100,
        (100, 100),
        {"swap": arm(swap(a, b)), "iso": arm(iso(a, b)), "txt": arm((a, b))},
    )


def test_a_row_that_carries_the_unseen_prefix_follows_it():
    records = [_record(i, lambda a, b: (a, b), lambda a, b: (None, None)) for i in range(4)]
    records += [_record(i, lambda a, b: (a, a), lambda a, b: (a, None)) for i in range(4, 6)]
    m = EVALUATORS.get("phantom_swap")(suite="phantom_swap").summarize(records)
    head = m["headline"]
    assert head["follow_donor"]["accuracy"] == 10 / 12 and head["swap_follow_anti"] == [4, 0]
    assert head["iso_names_any"] == 2 / 12 and head["comprehension"] == 1.0
