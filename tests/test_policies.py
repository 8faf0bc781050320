"""Serving policies: the seam, the engine's donor discipline, and `--policy` end to end."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from matbench.cli import main
from matbench.engine.gates import run_gates
from matbench.engine.pair_engine import PairEngine
from matbench.engine.policies import parse_policy
from matbench.engine.policies.base import KeptRows, ServingPolicy
from matbench.engine.policies.oracle import OracleEvents
from matbench.engine.policies.recent import RecentTokens
from matbench.engine.selection import governed, select
from matbench.errors import GateFailure, MatbenchError
from matbench.results.schema import SCHEMA_VERSION


def _shape(engine: PairEngine) -> tuple[int, int]:
    config = engine.loaded.text_config
    return config.num_hidden_layers, config.num_key_value_heads


@pytest.mark.parametrize(
    "spec, message",
    [
        ("recnt:64", "unknown serving policy 'recnt'. Did you mean 'recent'?"),
        ("recent", "policy recent needs a positive token count, as recent:64 (got None)"),
        ("recent:x", "policy recent needs a positive token count, as recent:64 (got 'x')"),
        ("oracle:3", "policy 'oracle' takes no arguments (got '3')"),
    ],
)
def test_a_bad_policy_is_one_line(spec, message):
    with pytest.raises(MatbenchError) as err:
        parse_policy(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_specs_round_trip():
    assert parse_policy("recent:64") == RecentTokens(64) and parse_policy("recent:64").spec == "recent:64"
    assert parse_policy("oracle") == OracleEvents() and parse_policy("oracle").is_oracle


def test_the_oracle_keeps_exactly_the_declared_events(tiny_llama, pairs):
    engine = PairEngine(tiny_llama)
    layout, caches = engine.prepare(pairs[0])
    for arm in pairs[0].arms:
        for m in (0, 1):
            assert OracleEvents().keep(arm, layout.members[m], caches[m]) == tuple(
                caches[m].kept_slots(arm.served).tolist()
            )


def test_recent_keeps_the_header_and_the_last_positions_in_both_members(tiny_llama, pairs):
    engine = PairEngine(tiny_llama, policy=RecentTokens(30))
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    assert [a.name for a in pair.arms if governed(pair, a)] == ["root", "chain"]  # not txt, not control
    (slots_a, slots_b), heads, selection = select(engine.policy, pair, layout, caches, pair.arm("root"), _shape(engine))
    assert heads == (None, None) and selection.head_kept_share is None
    a, b = layout.members
    header = a.header_span[1]
    end = max(a.positions) + 1
    assert slots_a[:header] == tuple(range(header))
    assert [a.positions[s] for s in slots_a[header:]] == [p for p in a.positions[header:] if p >= end - 30]
    assert [a.positions[s] for s in slots_a] == [b.positions[s] for s in slots_b]
    assert (selection.kept_tokens, selection.members_differ, selection.donor_visible) == (header + 30, False, False)


def test_recent_records_carry_the_selection_and_every_gate_passes(tiny_llama, pairs):
    engine = PairEngine(tiny_llama, policy=RecentTokens(30))
    for pair in pairs:
        layout, caches = engine.prepare(pair)
        record = engine.score(pair, layout, caches)
        assert all(g.passed for g in run_gates(engine, pair, layout, caches, record))
        assert {n for n, arm in record.arms.items() if arm.selection is not None} == {"root", "chain"}
        assert record.arms["control"].shift == 0.0
        assert "selection" in record.to_json()["arms"]["root"] and "selection" not in record.to_json()["arms"]["txt"]
    oracle = PairEngine(tiny_llama).score(pairs[0], *PairEngine(tiny_llama).prepare(pairs[0]))
    assert all(arm.selection is None for arm in oracle.arms.values())  # oracle records are as before


@dataclass(frozen=True)
class FirstSlots(ServingPolicy):
    """Keeps the first `n` slots: slots, not positions, so the window reaches further in the
    member whose source value has fewer tokens (a policy whose picks differ across members)."""

    n: int = 200
    name = "first-slots"

    def keep(self, arm, member, cache, context=None):
        return tuple(range(min(self.n, len(member.input_ids))))


@pytest.mark.parametrize("kept_from", ["a", "b"])
def test_picks_that_differ_across_members_are_recorded_and_one_members_picks_served_to_both(
    tiny_llama, pairs, kept_from
):
    pair = pairs[0]
    layout, caches = PairEngine(tiny_llama).prepare(pair)
    assert layout.members[0].positions != layout.members[1].positions  # the source's tokens differ in number
    # Up to the end of the longer member's source: the shorter member's window reaches past its own.
    engine = PairEngine(tiny_llama, policy=FirstSlots(max(m.event_spans[pair.source][1] for m in layout.members)))
    (slots_a, slots_b), heads, selection = select(
        engine.policy, pair, layout, caches, pair.arm("root"), _shape(engine), kept_from=kept_from
    )
    assert heads == (None, None) and selection.head_kept_share is None
    assert selection.members_differ and selection.donor_visible  # the window holds the source
    assert selection.source_kept == (True, True)
    picked = [
        {m.positions[s] for s in engine.policy.keep(pair.arm("root"), m, caches[k])}
        for k, m in enumerate(layout.members)
    ]
    outside = set(range(max(max(m.positions) for m in layout.members) + 1)) - {
        m.positions[s] for m in layout.members for s in range(*m.event_spans[pair.source])
    }
    # The shorter member's window reaches into the events after the source: its extra picks are
    # the leak, and every layer's overlap is the shared share of the two picks outside the source.
    share = len(picked[0] & picked[1] & outside) / len((picked[0] | picked[1]) & outside)
    assert 0 < share < 1 and selection.overlap == (round(share, 6),) * _shape(engine)[0]
    served = [[m.positions[s] for s in slots] for m, slots in zip(layout.members, (slots_a, slots_b))]
    chosen = picked["ab".index(kept_from)]
    assert set(served["ab".index(kept_from)]) == chosen  # the chosen member serves exactly its picks
    assert set(served[1 - "ab".index(kept_from)]) <= chosen  # the other: those of its positions that exist
    assert [p for p in served[0] if p in outside] == [p for p in served[1] if p in outside] == sorted(chosen & outside)
    assert (
        selection.kept_tokens == len(slots_a)
        and selection.held_rows == len(slots_a) * _shape(engine)[0] * _shape(engine)[1]
    )


@dataclass(frozen=True)
class Unsorted(ServingPolicy):
    name = "unsorted"

    def keep(self, arm, member, cache, context=None):
        return (5, 3, *range(*member.header_span))


def test_a_policy_returning_bad_slots_is_one_line(tiny_llama, pairs):
    engine = PairEngine(tiny_llama, policy=Unsorted())
    layout, caches = engine.prepare(pairs[0])
    with pytest.raises(MatbenchError, match="policy 'unsorted' returned slots that are not sorted"):
        select(engine.policy, pairs[0], layout, caches, pairs[0].arm("root"), _shape(engine))


@dataclass(frozen=True)
class SwapsTokens(ServingPolicy):
    """Serves a decoy-free window whose token ids are then forged to differ (planted bug)."""

    name = "forged"

    def keep(self, arm, member, cache, context=None):
        return OracleEvents().keep(arm, member, cache)


def test_the_identity_gate_runs_on_the_served_selection(tiny_llama, pairs, monkeypatch):
    import dataclasses

    engine = PairEngine(tiny_llama, policy=SwapsTokens())
    pair = pairs[0]
    layout, caches = engine.prepare(pair)
    forged = dataclasses.replace(layout.members[1], input_ids=tuple(t + 1 for t in layout.members[1].input_ids))
    bad = dataclasses.replace(layout, members=(layout.members[0], forged))
    with pytest.raises(GateFailure, match="policy 'forged' serves different token ids"):
        select(engine.policy, pair, bad, caches, pair.arm("root"), _shape(engine))


def test_eval_with_a_policy_names_it_and_keeps_oracle_files_apart(tiny_dir, tmp_path):
    out = tmp_path / "out"
    common = [
        "eval",
        "--model",
        str(tiny_dir),
        "--limit",
        "2",
        "--device",
        "cpu",
        "--no-progress",
        "--output",
        str(out),
    ]
    assert main([*common, "--policy", "recent:30", "--check"]) == 0
    assert main(common) == 0
    results = json.loads((out / "discovery_probe_compact_recent-30.json").read_text())
    assert results["config"]["policy"] == "recent:30" and results["schema_version"] == SCHEMA_VERSION
    assert {g: s["passed"] for g, s in results["gates"].items()} == dict.fromkeys(
        ("A", "B", "control", "layout", "mask"), 2
    )
    oracle = json.loads((out / "discovery_probe_compact.json").read_text())
    assert "policy" not in oracle["config"] and oracle["config_hash"] != results["config_hash"]
    assert main(["scorecard", str(out)]) == 0  # the card is built from the oracle run alone
    card = json.loads((out / "scorecard.json").read_text())
    assert card["contract"]["discovery"]["evidence"]["results"] == "discovery_probe_compact.json"


def test_the_whole_contract_under_a_policy_writes_no_scorecard(tiny_dir, tmp_path, capsys):
    out = tmp_path / "all"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "all",
                "--limit",
                "2",
                "--device",
                "cpu",
                "--policy",
                "recent:30",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "no scorecard: runs under --policy recent:30 measure that policy" in err
    assert not (out / "scorecard.json").exists()
    written = sorted(p.name for p in out.glob("*.json"))
    assert written and all(name.endswith("_probe_compact_recent-30.json") for name in written)


@dataclass(frozen=True)
class RecentByHead(ServingPolicy):
    """recent:n for every head, except that layer `layer`'s KV head `head` drops the served slot
    at index `drop` (a per-head choice); `drop=None` keeps every row in every head."""

    n: int = 30
    layer: int = 0
    head: int = 0
    drop: int | None = None
    shape: tuple[int, int] = (2, 2)
    name = "recent-by-head"

    def keep(self, arm, member, cache, context=None):
        slots = RecentTokens(self.n).keep(arm, member, cache)
        heads = np.ones((*self.shape, len(slots)), dtype=bool)
        if self.drop is not None:
            heads[self.layer, self.head, self.drop] = False
        return KeptRows(slots, heads)


@pytest.mark.parametrize("serving", ["compact", "native"])
def test_a_per_head_choice_kept_by_every_head_serves_exactly_the_token_selection(tiny, pairs, serving):
    shape = (tiny.text_config.num_hidden_layers, tiny.text_config.num_key_value_heads)
    by_token = PairEngine(tiny, serving=serving, readout="short", policy=RecentTokens(30))
    by_head = PairEngine(tiny, serving=serving, readout="short", policy=RecentByHead(30, shape=shape))
    layout, caches = by_token.prepare(pairs[0])
    a, b = by_token.score(pairs[0], layout, caches), by_head.score(pairs[0], layout, caches)
    assert [arm.texts for arm in b.arms.values()] == [arm.texts for arm in a.arms.values()]  # 12 greedy steps
    for name, arm in a.arms.items():
        got, want = np.asarray(b.arms[name].probe_logp), np.asarray(arm.probe_logp)
        assert np.abs(got - want).max() <= 1e-5, name
    assert b.arms["root"].selection.head_kept_share == 1.0 and a.arms["root"].selection.head_kept_share is None


@pytest.mark.parametrize("serving", ["compact", "native"])
@pytest.mark.parametrize("attn", ["sdpa", "sdpa_grouped", "eager"])
def test_a_head_that_drops_a_row_does_not_see_it_and_the_others_do(tiny, pairs, serving, attn):
    """The per-head mask gate: noise in the K/V a head dropped changes nothing; noise in the same
    row of a head that kept it does (the check can fail). Every attention kernel, every tiny
    architecture (Gemma's sliding layers take their own mask), both serving modes."""
    import copy
    import dataclasses

    import torch

    from matbench.engine.serving import SERVING
    from matbench.models.loading import resolve_attn

    model = copy.deepcopy(tiny.model)
    model.config._attn_implementation = resolve_attn(attn)
    tiny = type(tiny)(model, tiny.tokenizer, tiny.source, tiny.dtype, tiny.device)
    config = tiny.text_config
    shape = (config.num_hidden_layers, config.num_key_value_heads)
    pair = pairs[0]
    engine = PairEngine(tiny, serving=serving, policy=RecentByHead(30, layer=1, head=0, drop=-3, shape=shape))
    layout, caches = engine.prepare(pair)
    (slots, _), heads, selection = select(engine.policy, pair, layout, caches, pair.arm("root"), shape)
    assert 0 < selection.head_kept_share < 1 and not heads[0][1, 0, -3] and heads[0][1, 1, -3]
    row = slots[-3]

    def logits(head: int | None):
        cache = caches[0]
        if head is not None:  # noise in the values: the row's attention weight stays what it was
            values = list(cache.values)
            noisy = values[1].clone()
            noisy[:, head, row] = 1e6  # attention weights on a random tiny model are small: a loud row
            cache = dataclasses.replace(cache, values=tuple(values[:1] + [noisy] + values[2:]))
        chosen = {"root": (((slots, slots)), (heads[0], heads[0]), selection)}
        request = engine.requests(pair, (cache, cache), engine.probe_readout, chosen=chosen)[0]
        return SERVING[engine.serving](engine.runner, [request])[1]

    clean = logits(None)
    assert torch.equal(logits(0), clean)  # layer 1's head 0 dropped the row: its noise is invisible
    assert not torch.allclose(logits(1), clean, atol=1e-3)  # head 1 kept it: the noise shows


def test_the_head_mask_gate_runs_with_check_and_catches_an_unmasked_head(tiny_llama, pairs, monkeypatch):
    from matbench.engine import runtime

    shape = (tiny_llama.text_config.num_hidden_layers, tiny_llama.text_config.num_key_value_heads)
    engine = PairEngine(tiny_llama, policy=RecentByHead(30, layer=1, head=0, drop=-3, shape=shape))
    layout, caches = engine.prepare(pairs[0])
    gates = {g.name: g for g in run_gates(engine, pairs[0], layout, caches, engine.score(pairs[0], layout, caches))}
    assert gates["head_mask"].passed and gates["head_mask"].max_abs_diff == 0.0
    assert gates["head_layout"].passed and gates["head_layout"].max_abs_diff <= 1e-5
    assert not {"head_mask", "head_layout"} & {
        g.name for g in run_gates(PairEngine(tiny_llama, policy=RecentTokens(30)), pairs[0], layout, caches)
    }  # no per-head choice
    from matbench.engine import serving

    original, fired = serving._head_valid, []

    def off_by_one(runner, heads, slots, slot_index):  # planted: each head's choice moved one row on
        fired.append(1)
        return original(runner, [h.roll(1, dims=-1) if h is not None else None for h in heads], slots, slot_index)

    monkeypatch.setattr(serving, "_head_valid", off_by_one)
    gates = {g.name: g for g in run_gates(engine, pairs[0], layout, caches)}
    assert fired and not gates["head_layout"].passed and gates["head_layout"].max_abs_diff > 1e-3
    monkeypatch.setattr(serving, "_head_valid", original)
    monkeypatch.setattr(runtime, "narrow_mask", lambda module, args, kwargs: None)  # planted: every head sees all
    engine = PairEngine(tiny_llama, policy=RecentByHead(30, layer=1, head=0, drop=-3, shape=shape))
    gates = {g.name: g for g in run_gates(engine, pairs[0], layout, caches)}
    assert not gates["head_mask"].passed and gates["head_mask"].max_abs_diff > 1e-3
