"""Paper parity, recompute matrix: matbench renders kv_recomp.py's own draws (recorded in
tests/parity/fixtures/recompute_matrix.json by tests/parity/make_recompute_matrix.py) byte for byte.

The paper's random stream is replayed: `draw` is kv_recomp `gen_item`'s draws call for call, rows in
the script's order (every item of A_mat, then B_oper, then C_high). Per recorded item, on the
member whose source the paper drew: the header, the whole global prefill (positions after the source
move by its position budget where the two members' sources differ in length: A_mat's ONLINE and
OFFLINE), the rows every arm serves (header, decoy, carrier) and for every arm the appended delta,
the question with its answer instruction, the chat tail and the token budget. A_mat and C_high ask
in kv_recomp's own words under any readout (read here with `short`); B_oper's instruction is the
trace readout's suffix with kv_recomp's TRACE (read with `trace`). The other member's value is one
matbench could pair with the paper's (B: an operand 30 below / above the threshold; C: a number
with a third first digit); it is served the same rows and the same queries.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.recompute_matrix import (
    ARMS,
    DELTAS,
    ROWS,
    RecompDraw,
    build,
    draw,
    gold,
    paper_member,
    paper_partner,
)
from matbench.protocol.frames import FRAMES, HDR
from tests.parity.compare import RENDERER, budget_shifts, fixture, served, trajectory

FIXTURE = fixture("recompute_matrix")
ITEMS, SEED = int(FIXTURE["argv"][1]), int(FIXTURE["argv"][3])
READOUT = {"A_mat": "short", "B_oper": "trace", "C_high": "short"}


def replay(seed: int = SEED) -> list[RecompDraw]:
    rng = random.Random(seed)
    return [draw(rng, row) for row in ROWS for _ in range(ITEMS)]


DRAWS = replay()


def pair_of(k: int, d: RecompDraw | None = None):
    d = d or DRAWS[k]
    return build(f"parity-{k}", d, paper_partner(d)), paper_member(d)


def rendered_ok(pair, member: int, item: dict, readout: str) -> None:
    assert trajectory(pair, member) == budget_shifts(pair, member, item["prefill"])
    for arm in ARMS:
        ours, paper = served(pair, arm, member, readout), item["serves"][arm]
        assert ours["rows"] == budget_shifts(pair, member, item["rows"])
        assert ours["query"] == paper["query"]
        assert pair.arm(arm).budget == paper["max_tokens"]


@pytest.mark.parametrize("k", range(len(FIXTURE["items"])), ids=[f"{r}-{i}" for r in ROWS for i in range(ITEMS)])
def test_matbench_renders_the_papers_draws_identically(k):
    item, d = FIXTURE["items"][k], DRAWS[k]
    rec = item["record"]
    assert rec["row"] == d.row == ROWS[k // ITEMS]
    pair, member = pair_of(k)
    pair.validate()
    # The replayed draws are the script's: its gold, its write-time (stale) gold, its update.
    assert rec["gold"] == gold(d) and rec["stale_gold"] == pair.values[member]
    assert {"A_mat": ("v1", "v2"), "B_oper": ("gv2",), "C_high": ("n1", "n2")}[d.row] == tuple(
        key for key in rec if key in ("v1", "v2", "gv2", "n1", "n2")
    )
    if d.row == "A_mat":
        assert (rec["v1"], rec["v2"]) == (d.value, d.update)
    elif d.row == "B_oper":
        assert (rec["thr"], rec["gv2"]) == (d.threshold, int(d.update))
    else:
        assert (rec["n1"], rec["n2"]) == (int(d.value), int(d.update))
    assert pair.arm("stale").expected is None and {pair.arm(a).expected for a in DELTAS} == {rec["gold"]}
    header = RENDERER.head + FRAMES[pair.frame].header  # the paper's head + HDR, no SEM
    assert FIXTURE["header"] == [[header, [0, len(header) - 1]]] and FRAMES[pair.frame].header == HDR
    rendered_ok(pair, member, item, READOUT[d.row])
    # The other member is served the same rows at the same positions and the same queries: the
    # delta is one text for both.
    for arm in ARMS:
        assert served(pair, arm, 1 - member, READOUT[d.row]) == served(pair, arm, member, READOUT[d.row])


def test_the_fixture_holds_both_write_time_answers_of_the_binary_rows():
    by_row = {row: [it["record"] for it in FIXTURE["items"] if it["record"]["row"] == row] for row in ROWS}
    assert [len(v) for v in by_row.values()] == [ITEMS] * 3 and SEED == 3700
    assert {r["stale_gold"] for r in by_row["A_mat"]} == {"ONLINE", "OFFLINE"}
    assert {r["stale_gold"] for r in by_row["B_oper"]} == {"EXCEEDED", "NORMAL"}
    # A two-step oracle in A and C (the restated carrier as step 26), one step in B.
    steps = [it["serves"]["oracle"]["query"].count("<step ") for it in FIXTURE["items"]]
    assert steps == [2] * ITEMS + [1] * ITEMS + [2] * ITEMS


def test_the_check_can_fail():
    a, b, c = (FIXTURE["items"][k * ITEMS] for k in range(3))
    pair, member = pair_of(0)
    # kv_coherence2's versioned frame (HDR + SEM) is not kv_recomp's header; the plain trajectory
    # frame renders the delta as a reg_op() step whose observation names the call.
    with pytest.raises(AssertionError):
        rendered_ok(dataclasses.replace(pair, frame="versioned"), member, a, "short")
    plain = dataclasses.replace(pair, frame="trajectory")
    assert trajectory(plain, member) == budget_shifts(plain, member, a["prefill"])  # the events render alike
    assert served(plain, "d_src", member, "short")["query"] != a["serves"]["d_src"]["query"]
    # The other member (another source value, no position shift to undo).
    with pytest.raises(AssertionError):
        rendered_ok(pair, 1 - member, a, "short")
    # The oracle without its restated carrier step.
    arm = pair.arm("oracle")
    short = dataclasses.replace(pair, arms=(dataclasses.replace(arm, appended=arm.appended[:1]),))
    assert served(short, "oracle", member, "short")["query"] != a["serves"]["oracle"]["query"]
    # Row B read by the direct readout (no TRACE), or with its instruction dropped as an open question.
    bpair, bmember = pair_of(ITEMS)
    assert served(bpair, "stale", bmember, "short")["query"] != b["serves"]["stale"]["query"]
    bare = dataclasses.replace(bpair, arms=tuple(dataclasses.replace(x, open_question=True) for x in bpair.arms))
    assert served(bare, "stale", bmember, "trace")["query"] != b["serves"]["stale"]["query"]
    # A 160-token budget for C (B's) is not the paper's 12.
    cpair, cmember = pair_of(2 * ITEMS)
    long = dataclasses.replace(cpair, arms=tuple(dataclasses.replace(x, budget=160) for x in cpair.arms))
    with pytest.raises(AssertionError):
        rendered_ok(long, cmember, c, "short")
    # A source one slot later, and the stream of another seed.
    moved = build("m", dataclasses.replace(DRAWS[0], source_at=DRAWS[0].source_at + 1))
    assert trajectory(moved, member) != budget_shifts(moved, member, a["prefill"])
    other = replay(SEED + 1)[0]
    wrong = build("w", other)
    assert trajectory(wrong, paper_member(other)) != budget_shifts(wrong, paper_member(other), a["prefill"])


def test_the_declared_stream_gives_the_replayed_items():
    """`Suite.paper` (what `matbench show --paper-seed` renders) at the fixture's --items: item k is
    row k mod 3's item k // 3 of the replay, the same pair."""
    paper = SUITES.get("recompute_matrix").paper
    assert paper.script == "kv_recomp" and paper.seed == SEED
    pairs = paper.items(SEED, len(DRAWS), items=ITEMS)
    assert len(pairs) == len(DRAWS) == len(ROWS) * ITEMS
    for k, ours in enumerate(pairs):
        row, j = k % len(ROWS), k // len(ROWS)
        replayed = pair_of(row * ITEMS + j)[0]
        assert ours.item_id == f"paper-kv_recomp-s{SEED}-{ROWS[row]}-{j:05d}"
        assert dataclasses.replace(ours, item_id=replayed.item_id) == replayed
    # The default run (--items 32) draws the rows after A_mat from later in the stream.
    default = paper.items(SEED, len(DRAWS))
    assert default[0] == dataclasses.replace(pairs[0], item_id=default[0].item_id)
    assert default[1] != dataclasses.replace(pairs[1], item_id=default[1].item_id)
