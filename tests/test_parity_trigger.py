"""Paper parity, trigger: matbench renders the paper's own draws (kv_parabank2.py, the
length-controlled bank, recorded in tests/parity/fixtures/trigger.json by
tests/parity/make_trigger.py) byte for byte: every construction's kv arm ({decoy, carrier}, the
carrier padded with newline tokens to its family's longest) and txt arm (every event), and the
trace readout's query. The fixture's other donor member (matbench's pair partner) is made up here.

Where the designs differ, on purpose, the tests say so and check the exact difference:
- positions: the paper lays each family out contiguously on its own; matbench puts both families
  of a group on one geometry, so an event starts later by the position budget of the slots before
  it (the longest body over both families and both members, skipped positions, no tokens), and kv
  and txt ask at L, after the carrier slot's budget (the longest of all 16 constructions). The paper's
  two families ask at different positions, matbench's 16 constructions at one;
- readouts: the paper's bank used the trace readout only; kv_bankprobe's direct and probe
  readouts end the menu with "." where matbench's short and probe readouts end it with ":"
  (kv_sweepmenu, kv_fail2), and its direct readout reads 10 tokens where short reads 12.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from matbench.data_gen.trigger import (
    CARRIER_AT,
    QUESTIONS,
    FlagDraw,
    MirrorDraw,
    TriggerDraw,
    build,
    carriers,
    partner_readings,
)
from matbench.protocol.frames import event_text
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, fixture, served

FIXTURE = fixture("trigger")
PIECE = re.compile(r"<step \d+>\n.*?(?=<step \d+>\n|\Z)", re.DOTALL)
FAMILIES = ("mirror", "flag")


def text(serve: dict) -> str:
    return "".join(t for t, _ in serve["rows"])


def bodies(serve: dict) -> list[str]:
    found = EVENT.findall(text(serve))
    assert [int(i) for i, _ in found] == list(range(1, 25))
    return [b for _, b in found]


def draw_of(item: dict) -> tuple[TriggerDraw, dict[str, str]]:
    """The paper's draws of one item, read back from each family's first txt serve, and each
    family's gold. The other member's reading (matbench's pair partner) is made up: thr -/+ 30."""
    mb = bodies(item["mirror"]["mirrors"]["txt"])
    decoy = re.fullmatch(r"register (\w+) completed a routine self-test", mb[0]).group(1)
    m = next(i for i, b in enumerate(mb) if " set to state " in b)
    source_reg, gold = re.fullmatch(r"register (\w+) set to state (\w+)", mb[m]).groups()
    target = re.fullmatch(rf"register (\w+) mirrors register {source_reg}", mb[CARRIER_AT]).group(1)
    fb = bodies(item["flag"]["accord"]["txt"])
    decoy2 = re.fullmatch(r"register (\w+) completed a routine self-test", fb[0]).group(1)
    m2 = next(i for i, b in enumerate(fb) if b.startswith("sensor "))
    sensor, gv, thr = re.fullmatch(r"sensor (\w+) measured (\d+); the alert threshold is (\d+)", fb[m2]).groups()
    gv, thr = int(gv), int(thr)
    verdict = "EXCEEDED" if gv > thr else "NORMAL"
    assert fb[m2 + 1] == f"alert check result for sensor {sensor}: threshold {verdict}"
    high, low = partner_readings(gv, thr)
    draw = TriggerDraw(
        MirrorDraw(decoy, source_reg, target, m, tuple(mb)), FlagDraw(decoy2, sensor, thr, high, low, m2, tuple(fb))
    )
    return draw, {"mirror": gold, "flag": verdict}


def pairs_of(k: int):
    item = FIXTURE["items"][k]
    draw, gold = draw_of(item)
    for family in FAMILIES:
        for key, paper in item[family].items():
            pair = build(draw, f"parity-{k}-{family}-{key}", family, key)
            yield family, key, pair, pair.values.index(gold[family]), paper


def expand(rows: list) -> list[int]:
    out = []
    for t, (first, last) in rows:
        assert len(t) == last - first + 1
        out += range(first, last + 1)
    return out


def event_lengths(pair, member: int) -> list[int]:
    return [len(t) for t in pair.member(member).texts()]


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_matbench_serves_the_papers_draws_identically(k):
    trace = READOUTS.get("trace")
    for family, key, pair, member, paper in pairs_of(k):
        assert pair.variant == f"{family}/{key}"
        for arm in ("kv", "txt"):
            ours = served(pair, arm, member, "trace")
            assert text(ours) == text(paper[arm]), (family, key, arm)  # header + served events, padding included
            assert ours["query"] == paper[arm]["query"]  # "\n\nQuestion: ..." + menu + trace + chat tail
            assert paper[arm]["max_tokens"] == trace.max_new_tokens == 160
        # The header and decoy rows sit where the paper puts them; the carrier (padded) is one run.
        ours = served(pair, "kv", member, "trace")
        assert ours["rows"][0] == paper["kv"]["rows"][0]
        assert len(ours["rows"]) == len(paper["kv"]["rows"]) == 2


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])))
def test_positions_are_the_papers_plus_the_group_alignment(k):
    groups = list(pairs_of(k))
    pairs = {(f, key): (p, m) for f, key, p, m, _ in groups}
    # Both members of both families (the paper's member and matbench's partner), carrier excepted.
    mirror, flag = pairs[("mirror", "mirrors")], pairs[("flag", "accord")]
    lengths = [event_lengths(p, m) for p, _ in (mirror, flag) for m in (0, 1)]
    budget = [max(lens[j] for lens in lengths) for j in range(CARRIER_AT)]
    bank = [
        len(event_text(CARRIER_AT, b)) for f in FAMILIES for b in carriers(draw_of(FIXTURE["items"][k])[0], f).values()
    ]
    ours_query, paper_query = set(), {f: set() for f in FAMILIES}
    for family, key, pair, member, paper in groups:
        own = [len(t) for t in PIECE.findall(text(paper["txt"]))]
        header = len(text(paper["txt"])) - sum(own)
        assert expand(paper["txt"]["rows"]) == list(range(header + sum(own)))  # the paper: contiguous
        # matbench: event i starts after the budgets of the events before it (skipped positions).
        starts = [header + sum(budget[:i]) for i in range(len(own))]
        expected = list(range(header)) + [p for s, n in zip(starts, own) for p in range(s, s + n)]
        assert expand(served(pair, "txt", member, "trace")["rows"]) == expected, (family, key)
        kv = served(pair, "kv", member, "trace")
        assert expand(kv["rows"]) == expected[: header + own[0]] + expected[-own[-1] :]
        # The paper asks right after the padded carrier; matbench at L, after the bank's longest carrier.
        paper_query[family].add(paper["kv"]["rows"][-1][1][1] + 1)
        assert kv["query_position"] == starts[CARRIER_AT] + max(bank)
        ours_query.add(kv["query_position"])
        ours_query.add(served(pair, "txt", member, "trace")["query_position"])
    assert len(ours_query) == 1  # one query position for the 16 constructions
    assert all(len(q) == 1 for q in paper_query.values())  # the paper: one per family ...
    assert paper_query["mirror"] != paper_query["flag"]  # ... and the two families differ


def test_the_bankprobe_readouts_differ_from_matbenchs_only_in_the_menus_stop():
    probe, short, trace = (READOUTS.get(n) for n in ("probe", "short", "trace"))
    for variant, calls in FIXTURE["bankprobe"]["queries"].items():
        family = variant.split("/")[0]
        name = re.search(r"(?:register|sensor) (\w+)", calls["kv_trace"]["query"]).group(1)
        question = QUESTIONS[family].format(T=name, S=name)
        menu = ("ONLINE", "OFFLINE") if family == "mirror" else ("EXCEEDED", "NORMAL")
        assert RENDERER.query_text(question, trace.suffix(menu)) == calls["kv_trace"]["query"]
        assert calls["kv_trace"]["max_tokens"] == trace.max_new_tokens
        # Not the same: bankprobe's direct and probe calls end the menu with "." (its trace
        # sentence without the instruction); matbench's short and probe end it with ":".
        ours_short = RENDERER.query_text(question, short.suffix(menu))
        ours_probe = RENDERER.query_text(question, probe.suffix(menu), probe.assistant_prefix)
        assert ours_short != calls["kv_direct"]["query"]
        assert ours_short.replace(f"{menu[1]}:", f"{menu[1]}.") == calls["kv_direct"]["query"]
        assert ours_probe.replace(f"{menu[1]}:", f"{menu[1]}.") == calls["kv_probe"]["query"]
        assert calls["kv_probe"]["candidates"] == list(menu)
        assert (calls["kv_direct"]["max_tokens"], short.max_new_tokens) == (10, 12)


def test_the_check_can_fail():
    family, key, pair, member, paper = next(g for g in pairs_of(0) if g[:2] == ("flag", "consist"))
    # matbench's former wording of this construction ("alert status flag") is not the paper's.
    reworded = pair.events[CARRIER_AT].replace("the alert flag", "the alert status flag")
    changed = dataclasses.replace(
        pair, events=pair.events[:CARRIER_AT] + (reworded,), padded=((CARRIER_AT, (reworded, *pair.padded[0][1])),)
    )
    assert text(served(changed, "kv", member, "trace")) != text(paper["kv"])
    # The operand and verdict one slot later: the txt arm serves another trajectory.
    draw, _ = draw_of(FIXTURE["items"][0])
    moved = build(
        dataclasses.replace(draw, flag=dataclasses.replace(draw.flag, source=draw.flag.source + 1)),
        "parity-x",
        family,
        key,
    )
    assert text(served(moved, "txt", member, "trace")) != text(paper["txt"])
    assert served(pair, "kv", member, "short")["query"] != paper["kv"]["query"]


def test_the_papers_own_draws_for_its_seed_are_the_recorded_items():
    """`matbench show --suite trigger --paper-seed`: kv_parabank2's random stream reproduced (one
    filler background per family, as its code draws them), every construction served as the
    fixture pins it, built from the stream alone."""
    from matbench.data_gen import SUITES

    paper = SUITES.get("trigger").paper
    assert (paper.script, paper.seed) == (FIXTURE["script"], FIXTURE["seed"])
    pairs = paper.items(paper.seed, 16 * len(FIXTURE["items"]))
    checked = 0
    for k, item in enumerate(FIXTURE["items"]):
        _, gold = draw_of(item)
        for pair in pairs[16 * k : 16 * (k + 1)]:
            family, key = pair.variant.split("/")
            member = pair.values.index(gold[family])
            for arm in ("kv", "txt"):
                ours = served(pair, arm, member, "trace")
                assert text(ours) == text(item[family][key][arm]) and ours["query"] == item[family][key][arm]["query"]
            checked += 1
    assert checked == 16 * len(FIXTURE["items"])
    assert text(served(paper.items(paper.seed + 1, 1)[0], "txt", 0, "trace")) != text(item["mirror"]["mirrors"]["txt"])
