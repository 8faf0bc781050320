"""Generation-time checks: each planted violation is refused."""

from __future__ import annotations

import dataclasses

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.checks import check_pair, donor_words
from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair
from tests.helpers import dialog_sources


def _discovery():
    return SUITES.get("discovery").generate(0, 1)[0]


def test_generated_suites_pass():
    for name in SUITES.names():
        for pair in SUITES.get(name).generate(0, 50, dialog_sources()):
            check_pair(pair)


def test_a_served_event_naming_a_donor_value_is_refused():
    pair = _discovery()
    events = list(pair.events)
    events[13] = events[13] + " and is ONLINE"
    with pytest.raises(MatbenchError, match="names the donor-specific word 'ONLINE'"):
        check_pair(dataclasses.replace(pair, events=tuple(events)))
    # Case-insensitive, whole word: "online" is refused, "ONLINEX" is not a mention.
    events[13] = pair.events[13] + " (online)"
    with pytest.raises(MatbenchError, match="donor-specific word"):
        check_pair(dataclasses.replace(pair, events=tuple(events)))
    events[13] = pair.events[13] + " ONLINEX"
    check_pair(dataclasses.replace(pair, events=tuple(events)))


def test_the_decoy_may_name_a_menu_value_but_only_the_decoy():
    pair = _discovery()
    assert pair.decoys == (0,) and pair.events[0].split()[-1] in pair.menu
    check_pair(pair)
    with pytest.raises(MatbenchError, match="served event 0"):
        check_pair(dataclasses.replace(pair, decoys=()))


def test_a_served_event_naming_a_differing_operand_is_refused():
    menu = ("EXCEEDED", "NORMAL")
    pair = DonorPair(
        item_id="flag",
        source=1,
        events=(
            "register KAPPA refreshed to 120",
            "<donor>",
            "the alarm flag for sensor S7 was updated after reading 140",
        ),
        source_bodies=(
            "sensor S7 measured 140; the alert threshold is 100",
            "sensor S7 measured 60; the alert threshold is 100",
        ),
        values=menu,
        menu=menu,
        arms=(Arm("kv", (0, 2), "Was sensor S7 above the alert threshold?"),),
    )
    assert donor_words(pair) == {"140", "60", "EXCEEDED", "NORMAL"}
    with pytest.raises(MatbenchError, match="'140'"):
        check_pair(pair)


def test_register_names_that_are_menu_words_must_be_written_as_registers():
    menu = ("ALPHA", "BRAVO")
    base = DonorPair(
        item_id="name8",
        source=1,
        events=("register KILO refreshed to 120", "<donor>", "register DELTA copied from register ALPHA"),
        source_bodies=("register ALPHA set to state ALPHA", "register ALPHA set to state BRAVO"),
        values=menu,
        menu=menu,
        registers=("ALPHA", "DELTA"),
        arms=(Arm("kv", (0, 2), "What state is register DELTA in?"),),
    )
    with pytest.raises(MatbenchError, match="names the donor-specific word 'ALPHA'"):
        check_pair(base)  # ALPHA is a donor value and the source register: ambiguous on purpose
    clash = dataclasses.replace(
        base,
        values=("BRAVO", "ECHO"),
        menu=("ALPHA", "BRAVO", "ECHO"),
        source_bodies=("register ALPHA set to state BRAVO", "register ALPHA set to state ECHO"),
    )
    check_pair(clash)  # every ALPHA is preceded by "register"
    bad = dataclasses.replace(clash, arms=(Arm("kv", (0, 2), "What state is ALPHA in?"),))
    with pytest.raises(MatbenchError, match="register ALPHA is also a menu word"):
        check_pair(bad)


def test_decoys_are_independent_of_the_gold_on_a_large_sample():
    from matbench.data_gen.checks import check_decoy_independence, decoy_gold_table

    for name in ("discovery", "update", "access", "decoy_audit", "orthogonal_bits", "binding_capacity", "note_knob"):
        pairs = SUITES.get(name).generate(7, 600 if name in ("decoy_audit", "note_knob") else 2000)
        p = check_decoy_independence(pairs, name)
        assert p is not None and p > 1e-3, (name, p)
    bin2 = [q for q in SUITES.get("access").generate(7, 2000) if q.variant == "bin2"]
    table = decoy_gold_table(bin2)
    # Every (gold, decoy) cell is populated: the decoy equals member A's gold about half the time.
    same = table[("ONLINE", "ONLINE")] + table[("OFFLINE", "OFFLINE")]
    assert sum(table.values()) == len(bin2) == 400 and len(table) == 4 and 0.42 < same / 400 < 0.58


def test_complement_decoys_are_refused():
    import dataclasses

    from matbench.data_gen.checks import check_decoy_independence

    pairs = SUITES.get("access").generate(0, 200)
    pairs = [p for p in pairs if p.variant == "bin2"]
    planted = []
    for p in pairs:
        complement = "OFFLINE" if p.values[0] == "ONLINE" else "ONLINE"
        events = list(p.events)
        events[0] = events[0].rsplit(" ", 1)[0] + " " + complement
        planted.append(dataclasses.replace(p, events=tuple(events)))
    with pytest.raises(MatbenchError, match="decoy values depend on the gold"):
        check_decoy_independence(planted, "discovery")
    constant = [
        dataclasses.replace(p, events=(p.events[0].rsplit(" ", 1)[0] + " ONLINE",) + p.events[1:]) for p in pairs
    ]
    with pytest.raises(MatbenchError, match="not drawn uniformly"):
        check_decoy_independence(constant, "discovery")
