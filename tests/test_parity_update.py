"""Paper parity, update: matbench renders the paper's own draws (kv_coherence2.py `--tpl orig`,
recorded in tests/parity/fixtures/update.json by tests/parity/make_update.py) byte for byte: the
header (HDR + SEM), each member's whole prefill with its positions (the source's position budget
included), the rows the KV arms serve and where, and for every arm and question the appended
`memory_patch()` step, the question, the readout suffix and the chat tail; the text arms' whole
prompts at contiguous positions.

Where the designs differ, by design:
- noopx: the paper's confirmation restates the member's own v1; matbench's restates v2, because
  an appended text must be the same in both donor members. The paper scores noopx only on the
  member where v1 == v2 ("interpret on the changed==0 stratum"), and there the texts are equal;
  on the other member they differ in that one word, which is asserted.
- The paper's readout (" Answer ONLINE or OFFLINE:") is matbench's `short` readout; the paper
  decodes 8 tokens, `short` 12 (both read the first menu word).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from matbench.data_gen.update import CARRIER_AT, DECOY_AT, KV_ARMS, QUERIES, TXT_ARMS, UpdateDraws, build_item
from matbench.engine.cache import EventCache, text_layout
from matbench.engine.layout import layout_pair
from matbench.protocol.frames import FRAMES
from matbench.protocol.readouts import READOUTS
from tests.parity.compare import EVENT, RENDERER, fixture, served, trajectory

FIXTURE = fixture("update")
STATES = ("ONLINE", "OFFLINE")


def draws_of(base: dict) -> UpdateDraws:
    """The paper's draws, read back from its ONLINE member's prefill and its patch texts."""
    text = "".join(t for t, _ in base["prefill"]["ONLINE"])
    bodies = [body for _, body in EVENT.findall(text)]
    assert len(bodies) == 24
    decoy, dm = re.fullmatch(r"register (\w+) set to state (\w+)   \[\1 version 1\]", bodies[DECOY_AT]).groups()
    target, source = re.fullmatch(r"register (\w+) mirrors register (\w+)", bodies[CARRIER_AT]).groups()
    source_at = next(i for i in range(1, CARRIER_AT) if bodies[i].startswith(f"register {source} set to state "))
    fillers = tuple(
        (m.group(1), int(m.group(2)))
        for i, b in enumerate(bodies)
        if i not in (DECOY_AT, source_at, CARRIER_AT)
        for m in [re.fullmatch(r"register (\w+) refreshed to (\d+)   \[\1 version 1\]", b)]
    )
    wrong = re.search(
        r"observation: register (\w+) set to state", base["serves"]["ctl_wrong__cur/ONLINE"]["query"]
    ).group(1)
    v2 = base["members"]["ONLINE"]["v2"]
    assert base["members"]["ONLINE"]["dm"] == dm
    return UpdateDraws(decoy, source, target, wrong, dm, v2, source_at, fillers)


def text_prompt(pair, arm_name: str, member: int, readout: str = "short") -> tuple[str, list[int]]:
    """A text arm as matbench serves it: the header and served events re-prefilled at contiguous
    positions (`text_layout`, what `text_cache` prefills), then the query; text and positions."""
    arm = pair.arm(arm_name)
    m = layout_pair(pair, RENDERER).members[member]
    cache = EventCache((), (), torch.tensor(m.positions), m.header_span, m.event_spans, 0)
    ids, placed = text_layout(cache, m, arm.served)
    header = list(m.input_ids[slice(*m.header_span)])
    query = RENDERER.ids(RENDERER.arm_query(pair, arm, READOUTS.get(readout)))
    text = RENDERER.decode(header + ids + query)
    positions = placed.positions.tolist() + list(range(placed.length, placed.length + len(query)))
    return text, positions


def served_texts_ok(pair, base: dict, member: int) -> None:
    v1 = STATES[member]
    paper = base["members"][v1]
    assert pair.values[member] == v1
    assert trajectory(pair, member) == base["prefill"][v1]  # header, every event, the position budget
    for q in QUERIES:
        for arm in KV_ARMS:
            ours = served(pair, f"{arm}__{q}", member, "short")
            recorded = base["serves"][f"{arm}__{q}/{v1}"]
            assert ours["rows"] == base["kv_rows"][v1]  # decoy + carrier, with their positions
            assert recorded["max_tokens"] == 8
            if arm == "noopx" and paper["changed"]:
                # The paper restates v1; matbench v2 (same in both members): only that word differs.
                assert ours["query"] == recorded["query"].replace(f"remains {v1};", f"remains {paper['v2']};")
                assert ours["query"] != recorded["query"]
            else:
                assert ours["query"] == recorded["query"]
        for arm in TXT_ARMS:
            text, positions = text_prompt(pair, f"{arm}__{q}", member)
            assert text == base["serves"][f"{arm}__{q}/{v1}"]["query"]  # the whole prompt
            assert positions == list(range(len(text)))  # a plain prefill from position 0


@pytest.mark.parametrize("k", range(len(FIXTURE["bases"])))
def test_matbench_renders_the_papers_draws_identically(k):
    base = FIXTURE["bases"][k]
    pair = build_item(f"parity-{k}", draws_of(base))
    header = RENDERER.head + FRAMES[pair.frame].header  # head + HDR + SEM, the paper's head_full
    assert FIXTURE["header"] == [[header, [0, len(header) - 1]]]
    for member in (0, 1):
        served_texts_ok(pair, base, member)
    # One member is changed (v1 != v2), the other a no-op, as the paper's one v2 draw per base.
    assert sorted(base["members"][v]["changed"] for v in STATES) == [0, 1]


def test_the_check_can_fail():
    base = FIXTURE["bases"][0]
    d = draws_of(base)
    pair = build_item("parity-0", d)
    # The same draws without the SEM header and with patches rendered as ordinary reg_op() steps
    # (matbench's update suite before v2): header, prefill and patched queries all differ.
    plain = dataclasses.replace(pair, frame="trajectory")
    assert trajectory(plain, 0) != base["prefill"]["ONLINE"]
    assert served(plain, "upd_ver__cur", 0, "short")["query"] != base["serves"]["upd_ver__cur/ONLINE"]["query"]
    # A patch of the asked register T (matbench v1's design) is not the paper's patch of the source S.
    wrong = build_item("parity-x", dataclasses.replace(d, source=d.target, target=d.source))
    assert served(wrong, "upd_bare__cur", 0, "short")["query"] != base["serves"]["upd_bare__cur/ONLINE"]["query"]
    with pytest.raises(AssertionError):
        served_texts_ok(plain, base, 0)
