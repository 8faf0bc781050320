"""The phantom-erase suite (kv_phantom E2): kv_phantom's steps and values, the conflict update,
gates on a tiny model, and the evaluator on known answer patterns."""

from __future__ import annotations

from matbench.data_gen import SUITES
from matbench.data_gen.phantom_erase import OLDS, SOURCE, build, first_digit
from matbench.evaluators import EVALUATORS
from matbench.protocol.frames import FRAMES
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import gated_records


def test_items_alternate_the_conflict_update_and_keep_the_probe_apart():
    pairs = SUITES.get("phantom_erase").generate(0, 48)
    assert [p.variant for p in pairs] == ["noconflict", "conflict"] * 24
    for p in pairs:
        olds = [int(v) for v in p.values]
        assert set(olds) <= set(OLDS) and first_digit(olds[0]) != first_digit(olds[1])
        kept = tuple(range(1, len(p.events)))
        assert [a.served for a in p.arms] == [kept, kept, tuple(range(len(p.events)))]
        if p.variant == "conflict":
            new = str(2 * max(olds))
            assert p.menu == (*p.values, new) and len({v[0] for v in p.menu}) == 3
            assert p.events[4] == f"set_config('timeout', {new}) => timeout reconfigured to {new} seconds"
            assert {a.expected for a in p.arms} == {new}
        else:
            assert len(p.events) == 4 and p.menu == p.values and {a.expected for a in p.arms} == {None}
    a, b = pairs[1].member(0).events, pairs[1].member(1).events
    assert [i for i in range(5) if a[i] != b[i]] == [SOURCE]
    render = FRAMES[pairs[0].frame].render_event
    assert render(SOURCE, build("x", 30, 15, False).member(0).events[SOURCE]) == (
        "<step 1>\naction: set_config('timeout', 30)\nobservation: timeout configured to 30 seconds\n"
    )


def test_gates_on_a_tiny_model(tiny_llama):
    records = gated_records(tiny_llama, SUITES.get("phantom_erase").generate(0, 2))  # asserts every gate
    assert [r.variant for r in records] == ["noconflict", "conflict"]
    assert records[1].arms["erased"].expected == records[1].arms["txt"].expected == records[1].menu[2]


def _record(index: int, conflict: bool, erased, oracle) -> PairRecord:
    pair = build(f"phantom_erase-v1-s0-{index:05d}", 30, 15, conflict)
    menu, values, new = pair.menu, pair.values, (pair.menu[2] if conflict else None)

    def arm(ans):
        return ArmRecord(ans, outcome(ans, values), values, ((0.0, 0.0), (0.0, 0.0)), 0.0, expected=new)

    return PairRecord(
        pair.item_id,
        pair.variant,
        values,
        menu,
        1,
        100,
        (100, 100),
        {
            "erased": arm(erased(values, new)),
            "oracle": arm(oracle(values, new)),
            "txt": arm((new, new) if conflict else values),
        },
    )


def test_leak_and_survivor_rates_on_the_papers_scale():
    records = [
        _record(0, False, lambda v, n: v, lambda v, n: (None, None)),
        _record(2, False, lambda v, n: (v[0], None), lambda v, n: (v[1], None)),
        _record(1, True, lambda v, n: (v[0], n), lambda v, n: (n, n)),
        _record(3, True, lambda v, n: (n, n), lambda v, n: (n, n)),
    ]
    m = EVALUATORS.get("phantom_erase")(suite="phantom_erase").summarize(records)
    head = m["headline"]
    assert head["leak"]["accuracy"] == 3 / 4 and head["oracle_leak"] == 0.0
    assert head["conflict_leak_old"] == 1 / 4 and head["conflict_has_new"] == 3 / 4
    assert head["comprehension"] == {"noconflict": 1.0, "conflict": 1.0}
    assert m["by_variant"]["noconflict"]["erased"]["classes"]["follow"] == 1
