"""The access suite: the paper's stimuli (kv_sweepmenu, kv_digit), matbench's phrase payload, the
isolated and text encodings, and the evaluator's reads (the paper's parse, exact recovery only from
generated text, item-level intervals)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
import torch

from matbench import stats
from matbench.data_gen import SUITES
from matbench.data_gen.access import (
    DIGITS,
    NEGATIVE,
    POOLS,
    POSITIVE,
    AccessDraw,
    build,
    draw,
    make_item,
)
from matbench.data_gen.base import REGISTER_POOL
from matbench.engine.cache import isolated_cache, text_cache
from matbench.evaluators import EVALUATORS
from matbench.evaluators.access import EXACT_CHANCE, first_number
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import engine_for, gated_records


def test_variants_values_and_independent_decoys():
    pairs = SUITES.get("access").generate(0, 500)
    by_variant = {v: [p for p in pairs if p.variant == v] for v in ("bin2", "dir4", "name8", "digit3", "phrase")}
    assert {v: len(ps) for v, ps in by_variant.items()} == dict.fromkeys(by_variant, 100)
    # kv_sweepmenu and kv_digit: the source anywhere in [8, 16); decoy at 0, carrier at 23.
    assert set(Counter(p.source for p in pairs)) == set(range(8, 16))
    for name, pool in POOLS.items():
        for p in by_variant[name]:
            assert p.menu == pool and p.values[0] != p.values[1] and set(p.values) <= set(pool)
            source, target, _ = p.registers
            assert p.events[23] == f"register {target} copied from register {source}"
            assert p.source_bodies == tuple(f"register {source} set to state {v}" for v in p.values)
            assert p.arm("harv_kv").question == f"What state is register {target} in?"
        decoys = [p.events[0].split()[-1] for p in by_variant[name]]
        # The decoy's state is drawn from the whole pool: it equals member A's donor about 1/k of the time.
        equal = sum(d == p.values[0] for d, p in zip(decoys, by_variant[name]))
        assert set(decoys) == set(pool) and 0.4 / len(pool) < equal / len(decoys) < 1.8 / len(pool)
    # Registers are the paper's ten, except that name8 items never use its menu words as names.
    outside = {r for v in ("bin2", "dir4", "digit3", "phrase") for p in by_variant[v] for r in p.registers}
    assert outside == set(REGISTER_POOL)
    for p in by_variant["name8"]:
        named = set(p.registers) | {e.split()[1] for e in p.events if e.startswith("register ")}
        assert not named & set(POOLS["name8"])
    for p in by_variant["digit3"]:
        a, b = (int(v) for v in p.values)
        source, target, decoy = p.registers
        assert (a > 500) != (b > 500) and 100 <= min(a, b) and max(a, b) <= 998
        # kv_digit's carrier, decoy and questions, verbatim.
        assert p.events[23] == f"register {target} mirrors register {source}"
        assert p.events[0] == f"register {decoy} completed a routine self-test"
        assert p.source_bodies == (f"register {source} refreshed to {a}", f"register {source} refreshed to {b}")
        exact, above, digit = p.arm("harv_kv/exact"), p.arm("harv_kv/above500"), p.arm("sel_ikv/first_digit")
        assert exact.question == f"What is the numeric value of register {target}? Answer with the number only."
        assert above.question == f"Is the numeric value of register {target} greater than 500? Answer YES or NO."
        assert digit.question == (
            f"What is the first digit of register {target}'s numeric value? Answer with a single digit."
        )
        assert exact.open_question and above.open_question and digit.open_question and not exact.menu
        assert above.values == tuple("YES" if n > 500 else "NO" for n in (a, b)) and above.menu == ("YES", "NO")
        assert digit.values == (p.values[0][0], p.values[1][0]) and digit.menu == DIGITS
        # Fillers never repeat a donor number.
        assert not any(e.endswith((f" {a}", f" {b}")) for i, e in enumerate(p.events) if i != p.source)
    for p in by_variant["phrase"]:
        assert {p.values[0] in POSITIVE, p.values[1] in POSITIVE} == {True, False}
        assert set(p.values) <= set(POSITIVE + NEGATIVE)
        polarity = p.arm("full_txt/polarity").values
        assert polarity == tuple("GOOD" if v in POSITIVE else "BAD" for v in p.values)
    encodings = {a.name.split("/")[0]: a.encoding for a in pairs[3].arms}
    assert encodings == {
        "harv_kv": "joint",
        "sel_ikv": "isolated",
        "sel_txt": "text",
        "full_txt": "text",
        "control": "joint",
    }


def test_make_item_is_draw_then_build_and_build_takes_any_draws():
    for index in range(5):
        variant = ("bin2", "dir4", "name8", "digit3", "phrase")[index]
        assert make_item(random.Random(index), "x", index) == build(draw(random.Random(index), variant), "x")
    # Explicit draws (as the parity tests take them from the paper's recordings): a name8 item
    # whose source register is ALPHA, which kv_sweepmenu may draw and matbench's draw avoids.
    fillers = tuple(f"register BETA refreshed to {100 + i}" for i in range(24))
    pair = build(AccessDraw("name8", "GAMMA", "ALPHA", "KAPPA", ("HOTEL", "KILO"), "HOTEL", 15, fillers), "y")
    pair.validate()
    assert pair.source == 15 and pair.events[0] == "register GAMMA set to state HOTEL"
    assert pair.events[23] == "register KAPPA copied from register ALPHA" and pair.events[14] == fillers[14]
    assert pair.member(1).events[15] == "register ALPHA set to state KILO"
    with pytest.raises(ValueError, match="unknown access variant"):
        draw(random.Random(0), "hex16")


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
    ids = list(member.input_ids[: member.header_span[1]])
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
    assert digit.arms["harv_kv/first_digit"].menu == DIGITS
    evaluator = EVALUATORS.get("access")(suite="access")
    metrics = evaluator.summarize(records)
    head = metrics["headline"]
    # A probe run has no generated text: exact recovery is left out, not read as a 2-way choice.
    assert set(head) == {
        "bin2",
        "dir4",
        "name8",
        "digit3/above500",
        "digit3/first_digit",
        "phrase/verbatim",
        "phrase/polarity",
        "control_clean",
    }
    assert head["name8"]["harv_kv"]["chance"] == 1 / 8 and head["phrase/verbatim"]["sel_ikv"]["chance"] == 1 / 12
    assert head["control_clean"] is True
    assert metrics["by_variant"]["digit3"]["n_pairs"] == 1
    # Under the probe, the state questions are read by the probe's argmax (the readout's answers).
    arm = records[0].arms["harv_kv"]
    assert head["bin2"]["harv_kv"]["correct"] == sum(a == v for a, v in zip(arm.answers, records[0].values))
    assert evaluator.metric("digit3_exact").value(metrics) is None  # optional: absent from probe runs
    assert not evaluator.metric("digit3_exact").valid_for("probe")


def test_every_variant_passes_the_gates_under_native_serving(tiny_gemma):
    """The sliding-window model is served natively (rows at their original positions): every
    variant passes the gates and the encodings that cannot see the source shift nothing."""
    assert engine_for(tiny_gemma).serving == "native"
    records = gated_records(tiny_gemma, SUITES.get("access").generate(0, 5))
    assert [r.variant for r in records] == ["bin2", "dir4", "name8", "digit3", "phrase"]
    for record in records:
        for name, arm in record.arms.items():
            if name.startswith(("sel_ikv", "sel_txt", "control")):
                assert arm.shift == 0.0 and arm.probe_logp[0] == arm.probe_logp[1], (record.variant, name)


def test_short_readout_reads_exact_recovery_from_text_and_the_paper_parse(tiny_llama):
    pairs = SUITES.get("access").generate(0, 5)
    engine = engine_for(tiny_llama, readout="short")
    records = [engine.run_pair(pairs[0]), engine.run_pair(pairs[3])]  # bin2, digit3 (gated above, probe)
    metrics = EVALUATORS.get("access")(suite="access").summarize(records)
    head = metrics["headline"]
    exact = head["digit3/exact"]["harv_kv"]
    assert exact["chance"] == EXACT_CHANCE and exact["answers"] == 2
    digit = next(r for r in records if r.variant == "digit3")
    texts = digit.arms["harv_kv/exact"].texts
    assert exact["correct"] == sum(first_number(t) == v for t, v in zip(texts, digit.values))
    # State questions: the paper's parse of the generated text; > 500 and the first digit: the probe.
    bin2 = next(r for r in records if r.variant == "bin2")
    paper = bin2.arms["harv_kv"].paper_answers
    assert head["bin2"]["harv_kv"]["correct"] == sum(a == v for a, v in zip(paper, bin2.values))
    above = digit.arms["harv_kv/above500"]
    assert head["digit3/above500"]["harv_kv"]["correct"] == sum(
        a == v for a, v in zip(above.probe_answers, digit.arm_values("harv_kv/above500"))
    )


def _record(variant: str, values: tuple[str, str], arms: dict[str, ArmRecord]) -> PairRecord:
    return PairRecord(
        item_id=f"i-{variant}-{values}",
        variant=variant,
        values=values,
        menu=values,
        budget=3,
        length=100,
        n_tokens=(100, 100),
        arms=arms,
    )


def _arm(answers, probe=("NO", "NO"), texts=None, menu=None, values=None) -> ArmRecord:
    return ArmRecord(
        answers=answers,
        outcome="other",
        probe_answers=probe,
        probe_logp=((0.0,), (0.0,)),
        shift=0.0,
        menu=menu,
        values=values,
        texts=texts,
    )


def test_exact_is_the_first_three_digit_number_and_intervals_are_item_level():
    assert first_number("The value is 5234, not 12") == "523" and first_number("about 52") is None
    texts = [("It is 523.", "It is 523."), ("Value: 117", "Value: 117"), ("812", "140"), ("I cannot tell", "140")]
    values = [("523", "210"), ("640", "117"), ("812", "140"), ("733", "140")]
    records = []
    for (ta, tb), vals in zip(texts, values):
        arms = {}
        for name in ("harv_kv", "sel_ikv", "sel_txt", "full_txt"):
            # The readout's own parse picked a donor number; exact recovery reads the text instead.
            arms[f"{name}/exact"] = _arm(vals, texts=(ta, tb))
            arms[f"{name}/above500"] = _arm(
                ("YES", "NO"),
                probe=("YES", "YES"),
                menu=("YES", "NO"),
                values=tuple("YES" if int(v) > 500 else "NO" for v in vals),
            )
        arms["control"] = _arm((None, None), texts=("", ""))
        records.append(_record("digit3", vals, arms))
    head = EVALUATORS.get("access")(suite="access").summarize(records)["headline"]
    exact = head["digit3/exact"]["harv_kv"]
    # Correct answers per pair: 1, 1, 2, 1 of 8; classes: const, const, follow, other.
    assert exact["correct"] == 5 and exact["accuracy"] == 5 / 8 and exact["chance"] == EXACT_CHANCE
    assert exact["ci"] == stats.clustered_wilson([1, 1, 2, 1], 2).as_list()
    assert exact["follow_anti"] == [1, 0] and exact["classes"]["const"] == 2
    # > 500 is the probe's reading (kv_digit's candidate logits), not the readout's answers.
    above = head["digit3/above500"]["harv_kv"]
    assert above["correct"] == 4 and above["chance"] == 0.5
    # Without texts (a probe run) the exact entry is absent.
    probe_only = [_record("digit3", r.values, {k: replace(a, texts=None) for k, a in r.arms.items()}) for r in records]
    assert "digit3/exact" not in EVALUATORS.get("access")(suite="access").summarize(probe_only)["headline"]
