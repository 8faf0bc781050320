"""The access suite: pools, three-digit and phrase payloads, and the isolated and text encodings."""

from __future__ import annotations

import torch

from matbench.data_gen import SUITES
from matbench.data_gen.access import NEGATIVE, POOLS, POSITIVE
from matbench.engine.cache import isolated_cache, text_cache
from matbench.evaluators import EVALUATORS
from tests.helpers import engine_for, gated_records


def test_variants_values_and_independent_decoys():
    pairs = SUITES.get("access").generate(0, 500)
    by_variant = {v: [p for p in pairs if p.variant == v] for v in ("bin2", "dir4", "name8", "digit3", "phrase")}
    assert {v: len(ps) for v, ps in by_variant.items()} == dict.fromkeys(by_variant, 100)
    for name, pool in POOLS.items():
        for p in by_variant[name]:
            assert p.menu == pool and p.values[0] != p.values[1] and set(p.values) <= set(pool)
            assert not set(p.registers) & set(POOLS["name8"])
        decoys = [p.events[0].split()[-1] for p in by_variant[name]]
        # The decoy's state is drawn from the whole pool: it equals member A's donor about 1/k of the time.
        equal = sum(d == p.values[0] for d, p in zip(decoys, by_variant[name]))
        assert set(decoys) == set(pool) and 0.4 / len(pool) < equal / len(decoys) < 1.8 / len(pool)
    for p in by_variant["digit3"]:
        a, b = (int(v) for v in p.values)
        assert (a > 500) != (b > 500) and 100 <= min(a, b) and max(a, b) <= 998
        assert p.arm("harv_kv/above500").values == tuple("YES" if n > 500 else "NO" for n in (a, b))
        assert p.arm("sel_ikv/first_digit").values == (p.values[0][0], p.values[1][0])
        assert p.arm("harv_kv/exact").open_question and not p.arm("harv_kv/exact").menu
    for p in by_variant["phrase"]:
        assert {p.values[0] in POSITIVE, p.values[1] in POSITIVE} == {True, False}
        assert set(p.values) <= set(POSITIVE + NEGATIVE)
        polarity = p.arm("full_txt/polarity").values
        assert polarity == tuple("GOOD" if v in POSITIVE else "BAD" for v in p.values)
    encodings = {a.name.split("/")[0]: a.encoding for a in pairs[3].arms}
    assert encodings == {"harv_kv": "joint", "sel_ikv": "isolated", "sel_txt": "text", "full_txt": "text",
                         "control": "joint"}


def test_isolated_rows_equal_joint_rows_only_where_nothing_precedes(tiny_llama):
    engine = engine_for(tiny_llama)
    pair = SUITES.get("access").generate(0, 1)[0]
    layout, caches = engine.prepare(pair)
    iso = isolated_cache(engine.runner, caches[0], layout.members[0], (0, 23))
    for layer in range(len(iso.keys)):
        lo, hi = caches[0].event_spans[0]
        # Event 0 follows only the header in both encodings: same rows.
        torch.testing.assert_close(iso.keys[layer][:, :, lo:hi], caches[0].keys[layer][:, :, lo:hi], atol=1e-5, rtol=0)
        # Unserved events keep their joint rows.
        lo, hi = caches[0].event_spans[5]
        assert torch.equal(iso.keys[layer][:, :, lo:hi], caches[0].keys[layer][:, :, lo:hi])
    lo, hi = caches[0].event_spans[23]
    # The carrier's isolated rows did not see events 1..22; from layer 1 on the keys differ.
    assert (iso.keys[-1][:, :, lo:hi] - caches[0].keys[-1][:, :, lo:hi]).abs().max() > 1e-3


def test_text_cache_equals_a_plain_forward_of_the_served_text(tiny_llama):
    engine = engine_for(tiny_llama)
    pair = SUITES.get("access").generate(0, 1)[0]
    layout, caches = engine.prepare(pair)
    member = layout.members[1]
    text = text_cache(engine.runner, caches[1], member, (0, 23))
    ids = list(member.input_ids[:member.header_span[1]])
    for i in (0, 23):
        ids += member.input_ids[slice(*member.event_spans[i])]
    assert text.length == len(ids) and text.positions.tolist() == list(range(len(ids)))
    arm = pair.arm("sel_txt")
    query = engine.query_ids(pair, arm, engine.probe_readout)
    full = torch.tensor([ids + list(query)])
    ref = engine.runner.plain_forward(full, torch.arange(full.shape[1])[None])[0]
    for serving in ("compact", "native"):
        from matbench.engine.serving import SERVING, ServeRequest

        _, logits = SERVING[serving](engine.runner, [ServeRequest(text, arm.served, query)])
        torch.testing.assert_close(logits[0], ref, atol=1e-4, rtol=0)


def test_gates_zero_shift_controls_and_evaluator(tiny_llama):
    pairs = SUITES.get("access").generate(0, 5)
    records = gated_records(tiny_llama, pairs)
    for record in records:
        for name, arm in record.arms.items():
            if name.startswith(("sel_ikv", "sel_txt", "control")):
                # Neither encoding can see the source: both members are served bit-identical rows.
                assert arm.shift == 0.0 and arm.probe_logp[0] == arm.probe_logp[1], name
    digit = next(r for r in records if r.variant == "digit3")
    assert digit.arms["harv_kv/first_digit"].menu == tuple(str(d) for d in range(1, 10))
    metrics = EVALUATORS.get("access")(suite="access").summarize(records)
    head = metrics["headline"]
    assert set(head) == {"bin2", "dir4", "name8", "digit3/exact", "digit3/above500", "digit3/first_digit",
                         "phrase/verbatim", "phrase/polarity", "control_clean"}
    assert head["name8"]["harv_kv"]["chance"] == 1 / 8 and head["phrase/verbatim"]["sel_ikv"]["chance"] == 1 / 12
    assert head["control_clean"] is True
    assert metrics["by_variant"]["digit3"]["n_pairs"] == 1
