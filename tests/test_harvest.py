"""The harvest suite: the paper's selection, rendering and iso geometry over references into the
user's LoCoMo / REALTALK copies; hydration, refusals; the evaluator's readings, clusters, strata."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import pytest
import torch

from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import (
    DialogSources,
    load_locomo,
    load_realtalk,
    participant_components,
)
from matbench.data_gen.harvest import N_CARRIERS, N_INJECTED, content_words, gold_answer, gold_option
from matbench.errors import MatbenchError
from matbench.protocol.frames import FRAMES
from matbench.protocol.outcomes import outcome
from matbench.protocol.records import ArmRecord, PairRecord
from tests.helpers import dialog_args, dialog_sources, shared_data


@pytest.fixture(scope="module")
def rows():
    return SUITES.get("harvest").dataset_rows(0, None, dialog_sources())


@pytest.fixture(scope="module")
def conversations():
    return {
        (c.corpus, c.conversation): c
        for c in load_locomo(shared_data() / "locomo") + load_realtalk(shared_data() / "realtalk")
    }


def test_sources_load_turns_as_the_paper_does():
    locomo = load_locomo(shared_data() / "locomo" / "locomo10.json")
    realtalk = load_realtalk(shared_data() / "realtalk")
    assert [c.conversation for c in locomo][:2] == ["conv-26", "conv-30"] and len(locomo) == 10
    assert [c.conversation for c in realtalk][:2] == ["Chat_1_Emi_Elise", "Chat_2_Kevin_Elise"] and len(realtalk) == 10
    # REALTALK's text is `clean_text`; empty messages are skipped; sessions follow their number.
    assert all(t.text for c in realtalk for t in c.turns)
    assert all(a.session <= b.session for c in locomo + realtalk for a, b in zip(c.turns, c.turns[1:]))
    assert realtalk[0].turns[0].body().startswith("[session 1 29.12.2023, 22:42:04] Emi: ")
    # LoCoMo's image captions stay in the turn (kv_harvest3.py), REALTALK's are not read.
    raw = json.loads((shared_data() / "locomo" / "locomo10.json").read_text())[0]["conversation"]
    shared = next(m for m in raw["session_1"] if m.get("blip_caption"))
    turn = next(t for t in locomo[0].turns if t.dia_id == shared["dia_id"])
    assert turn.text == f"{shared['text'].strip()}  [shares an image: {shared['blip_caption']}]"
    assert sum("[shares an image: " in t.text for c in locomo for t in c.turns) == 1226
    assert not any("[shares an image: " in t.text for c in realtalk for t in c.turns)
    # Stripped, not collapsed: a message's inner newlines are served as they are.
    assert any("\n" in t.text for c in locomo + realtalk for t in c.turns)


def test_realtalk_chats_form_three_participant_components():
    realtalk = [c.conversation for c in load_realtalk(shared_data() / "realtalk")]
    components = participant_components(realtalk)
    assert len(set(components.values())) == 3
    assert components["Chat_1_Emi_Elise"] == components["Chat_3_Kevin_Paola"] == "Elise+Emi+Kevin+Paola"
    assert components["Chat_5_Nicolas_Nebraas"] != components["Chat_9_Fahim_Akib"]
    # A subset joins only through the chats it holds; a name without participants stands alone.
    assert participant_components(["Chat_1_Emi_Elise", "Chat_3_Kevin_Paola", "conv-26"]) == {
        "Chat_1_Emi_Elise": "Elise+Emi",
        "Chat_3_Kevin_Paola": "Kevin+Paola",
        "conv-26": "conv-26",
    }


def test_rows_follow_the_papers_selection_rules(rows, conversations):
    kinds = Counter((r["corpus"], r["kind"]) for r in rows)
    # Every qualifying QA of the paper's rule (kv_harvest3 select_qa + kv_harvest4 hard_neg): the
    # counts were checked against the paper's own functions on these files, item for item.
    assert kinds == {
        ("locomo", "natural"): 564,
        ("realtalk", "natural"): 497,
        ("locomo", "injected"): 36,
        ("realtalk", "injected"): 26,
    }
    per_conversation = Counter((r["conversation"], r["kind"]) for r in rows)
    assert max(v for (_, kind), v in per_conversation.items() if kind == "injected") <= N_INJECTED
    assert {r["strong"] for r in rows} == {True, False}
    # Round robin: the first 20 items come from 20 different conversations.
    assert len({r["conversation"] for r in rows[:20]}) == 20
    for r in rows:
        conv = conversations[(r["corpus"], r["conversation"])]
        index = conv.index_of()
        bodies = [t.body().lower() for t in conv.turns]
        qa = conv.qa[r["qa_index"]]
        gold = gold_answer(qa)
        assert r["category"] == qa["category"] in (1, 2, 3) and gold
        assert r["source_sha256"] == conv.sha256 and r["evidence"]
        assert r["evidence"] == [e for e in qa["evidence"] if e in index]  # as listed, never repaired
        assert gold_answer(conv.qa[r["negative_qa_index"]]).lower() != gold.lower()
        assert r["gold_option"] == gold_option(qa["question"], injected=r["kind"] == "injected")
        last = max(conv.turns[index[e]].session for e in r["evidence"])
        assert len(r["carriers"]) <= N_CARRIERS and (r["kind"] == "natural") == bool(r["carriers"])
        for dia in r["carriers"]:
            i = index[dia]
            assert conv.turns[i].session > last and dia not in r["evidence"]
            # Words and the gold are read in the turn as served (session, date and speaker included).
            assert len(content_words(qa["question"]) & content_words(bodies[i])) >= 2
            assert gold.lower() not in " ".join(bodies[max(0, i - 1) : i + 2])
        if r["kind"] == "injected":
            assert len(gold) >= 3 and any(gold.lower() in bodies[index[e]] for e in r["evidence"])


def test_the_option_letter_is_the_papers_sha1_rule():
    import hashlib

    for q in ("When did Caroline go to the LGBTQ support group?", "What is x?", ""):
        even = int(hashlib.sha1(q.encode()).hexdigest(), 16) % 2 == 0
        assert gold_option(q) == ("A" if even else "B")
        even = int(hashlib.sha1(("inj" + q).encode()).hexdigest(), 16) % 2 == 0
        assert gold_option(q, injected=True) == ("A" if even else "B")


def test_rows_hold_references_and_never_dialog_text(rows):
    for r in rows:
        strings = [v for v in r.values() if isinstance(v, str)] + r["evidence"] + r["carriers"]
        assert all(" " not in s and len(s) <= 80 for s in strings), r


def test_hydration_builds_both_kinds_of_item():
    pairs = SUITES.get("harvest").generate(0, 40, dialog_sources())
    natural = next(p for p in pairs if p.variant.startswith("natural/"))
    injected = next(p for p in pairs if p.variant.startswith("injected/"))
    assert re.fullmatch(r"natural/(locomo|realtalk)/[\w-]+/(strong|weak)", natural.variant)
    assert not natural.paired and natural.values[0] == natural.values[1] and natural.frame == "dialog"
    # The paper's header is the chat head alone; its iso encodes each turn with no header at all.
    assert FRAMES["dialog"].header == ""
    assert [a.name for a in natural.arms] == ["harv", "iso", "text", "none", "goldev"]
    assert natural.arm("iso").encoding == "headless" and natural.arm("none").served == ()
    assert natural.arm("none").encoding == natural.arm("text").encoding == "text"  # the paper's text prompts
    # kv_harvest4 recog_q after "\n\nQuestion: ": the question carries its own answer instruction.
    assert all(a.open_question for a in natural.arms + injected.arms)
    assert re.search(
        r"\nOption A: .+\nOption B: .+\nWhich option is correct\? Answer A or B\.$", natural.arms[0].question
    )
    assert injected.paired and set(injected.values) == {"A", "B"}
    inj = len(injected.events) - 1
    assert injected.arm("harv").served == (inj,) and "moderator: for the record" in injected.events[inj]
    assert injected.events[inj].startswith(f"[session {int(injected.events[inj - 1].split()[1]) + 1} follow-up] ")
    a, b = injected.member(0).events, injected.member(1).events
    changed = [i for i in range(len(a)) if a[i] != b[i]]
    assert changed and changed[0] == injected.source and all(i < inj for i in changed)


def test_the_headless_encoding_encodes_the_event_with_nothing_before_it(tiny_llama):
    from matbench.data_gen.harvest import HarvestDraw, build
    from matbench.engine.cache import isolated_cache, prefill
    from matbench.engine.runtime import cache_rows, new_cache
    from tests.helpers import engine_for

    bodies = (
        "[session 1 May] Ann: I moved to Lisbon last spring.",
        "[session 1 May] Bob: How is the weather there?",
        "[session 2 June] Ann: The tram to the old town is my favourite ride.",
    )
    draw = HarvestDraw("natural", bodies, "Where did Ann move?", "Lisbon", "Porto", "B", evidence=(0,), carriers=(2,))
    pair = build(draw, "tiny", "natural/locomo/tiny/weak")
    engine = engine_for(tiny_llama)
    layout, caches = engine.prepare(pair)
    member = layout.members[0]
    lo, hi = member.event_spans[2]
    alone = isolated_cache(engine.runner, caches[0], member, (2,), alone=True)
    after_header = isolated_cache(engine.runner, caches[0], member, (2,))
    reference = new_cache()
    prefill(
        engine.runner,
        reference,
        list(member.input_ids[lo:hi]),
        list(member.positions[lo:hi]),
        torch.empty(0, dtype=torch.long),
    )
    keys, _ = cache_rows(reference)
    last = len(keys) - 1  # layer 0's keys see no context: compare the last layer's
    assert torch.allclose(alone.keys[last][:, :, lo:hi], keys[last], atol=1e-5)
    assert not torch.allclose(after_header.keys[last][:, :, lo:hi], keys[last], atol=1e-3)
    assert not torch.allclose(caches[0].keys[last][:, :, lo:hi], keys[last], atol=1e-3)  # the joint rows
    assert torch.equal(alone.keys[last][:, :, :lo], caches[0].keys[last][:, :, :lo])  # every other row unchanged
    # The engine asks for it through the arm's encoding.
    derived = engine.derived_caches(pair, layout, caches)["iso"][0]
    assert all(torch.equal(d, a) for d, a in zip(derived.keys, alone.keys))


def test_gate_a_runs_one_reference_for_the_identical_members_of_a_natural_item(tiny_llama, monkeypatch):
    """A natural item is unpaired (both members the same dialog): gate A compares both members'
    served logits with one plain forward, not two over the whole dialog; a paired item still
    gets one per member."""
    from matbench.data_gen.harvest import HarvestDraw, build
    from matbench.engine.gates import gate_a
    from matbench.engine.runtime import ModelRunner
    from tests.helpers import engine_for

    bodies = (
        "[session 1 May] Ann: I moved to Lisbon last spring.",
        "[session 1 May] Bob: How is the weather there?",
        "[session 2 June] Ann: The tram to the old town is my favourite ride.",
    )
    natural = build(
        HarvestDraw("natural", bodies, "Where did Ann move?", "Lisbon", "Porto", "B", evidence=(0,), carriers=(2,)),
        "tiny",
        "natural/locomo/tiny/weak",
    )
    paired = SUITES.get("discovery").generate(0, 1)[0]
    engine = engine_for(tiny_llama)
    calls = []
    original = ModelRunner.plain_forward

    def counting(self, input_ids, position_ids, chunk_size=None):
        calls.append(input_ids.shape[1])
        return original(self, input_ids, position_ids, chunk_size)

    monkeypatch.setattr(ModelRunner, "plain_forward", counting)
    for pair, references in ((natural, 1), (paired, 2)):
        calls.clear()
        layout, caches = engine.prepare(pair)
        result = gate_a(engine, pair, layout, caches)
        assert result.passed and result.max_abs_diff <= 1e-3
        assert len(calls) == references
    assert layout.members[0].input_ids != layout.members[1].input_ids  # the paired item's members differ


def test_a_changed_or_missing_source_copy_is_refused(rows, tmp_path):
    realtalk_rows = [r for r in rows if r["corpus"] == "realtalk"][:3]
    copy = tmp_path / "realtalk"
    shutil.copytree(shared_data() / "realtalk", copy)
    target = copy / realtalk_rows[0]["source_file"]
    data = json.loads(target.read_text())
    target.write_text(json.dumps(data))  # same content, other bytes: a different copy
    suite = SUITES.get("harvest")
    with pytest.raises(MatbenchError, match="has sha256 .* use the same copy of realtalk"):
        suite.pairs_from_rows(realtalk_rows, DialogSources(realtalk=str(copy)))
    with pytest.raises(MatbenchError, match="pass --realtalk DIR"):
        suite.pairs_from_rows(realtalk_rows, DialogSources(locomo=str(shared_data() / "locomo")))
    with pytest.raises(MatbenchError, match="no REALTALK files"):
        suite.pairs_from_rows(realtalk_rows, DialogSources(realtalk=str(tmp_path)))
    with pytest.raises(MatbenchError, match="content_hash does not match"):
        suite.pairs_from_rows([{**realtalk_rows[0], "qa_index": 0}], dialog_sources())
    from matbench.data_gen.harvest import row_hash

    far = {**realtalk_rows[0], "qa_index": 9999}
    far["content_hash"] = row_hash(far)
    with pytest.raises(MatbenchError, match="qa_index 9999 is not a QA of Chat_"):
        suite.pairs_from_rows([far], dialog_sources())
    with pytest.raises(MatbenchError, match="pass --locomo PATH"):
        suite.dataset_rows(0, 5, None)


def _record(
    variant: str,
    gold: str,
    answers: dict[str, str | None],
    paper: dict[str, str | None] | None = None,
    probe: dict[str, str] | None = None,
) -> PairRecord:
    """A natural item's record: per arm the readout's answer (both members), optionally the
    paper's parse of generated text and the probe's answer."""
    arms = {}
    for arm, answer in answers.items():
        p = (probe or {}).get(arm, answer) or "A"
        arms[arm] = ArmRecord(
            answers=(answer, answer),
            outcome=outcome((answer, answer), (gold, gold)),
            probe_answers=(p, p),
            probe_logp=((0.0, 0.0), (0.0, 0.0)),
            shift=0.0,
            texts=("", "") if paper is not None else None,
            paper_answers=(paper[arm], paper[arm]) if paper is not None else None,
        )
    return PairRecord(
        item_id=variant,
        variant=variant,
        values=(gold, gold),
        menu=("A", "B"),
        budget=1,
        length=1,
        n_tokens=(1, 1),
        arms=arms,
    )


def _item(variant: str, harv_right: bool, iso_right: bool, **kw) -> PairRecord:
    answers = {
        "harv": "A" if harv_right else "B",
        "iso": "A" if iso_right else "B",
        "text": "A",
        "none": "B",
        "goldev": "A",
    }
    return _record(variant, "A", answers, **kw)


def test_the_evaluator_clusters_realtalk_by_component_and_reports_the_strong_stratum():
    from matbench.evaluators import EVALUATORS

    chats = ["Chat_1_Emi_Elise", "Chat_2_Kevin_Elise", "Chat_5_Nicolas_Nebraas", "Chat_9_Fahim_Akib"]
    records = [
        _item(f"natural/realtalk/{c}/{'strong' if k % 2 else 'weak'}", k % 3 == 0, k % 4 == 0)
        for c in chats
        for k in range(6)
    ]
    records += [
        _item(f"natural/locomo/conv-{c}/{'strong' if k < 2 else 'weak'}", True, k != 0)
        for c in (26, 30, 41)
        for k in range(5)
    ]
    metrics = EVALUATORS.get("harvest")(suite="harvest").summarize(records)
    realtalk, locomo = metrics["natural"]["realtalk"], metrics["natural"]["locomo"]
    assert realtalk["clustered_by"] == realtalk["harv_minus_iso"]["clustered_by"] == "participant component"
    assert realtalk["n_clusters"] == 3 and realtalk["n_conversations"] == 4  # Chat_1 and Chat_2 share Elise
    assert realtalk["harv_minus_iso"]["descriptive"] and "equivalent" not in realtalk["harv_minus_iso"]
    assert "realtalk_equivalent" not in metrics["headline"] and "locomo_equivalent" in metrics["headline"]
    assert set(realtalk["by_component"]) == {"Elise+Emi+Kevin", "Nebraas+Nicolas", "Akib+Fahim"}
    assert set(realtalk["leave_one_participant_out"]) == {
        "Emi",
        "Elise",
        "Kevin",
        "Nicolas",
        "Nebraas",
        "Fahim",
        "Akib",
    }
    assert locomo["clustered_by"] == "conversation" and locomo["harv_minus_iso"]["tost_bound"] == 0.05
    assert locomo["harv_minus_iso"]["mean"] == pytest.approx(3 / 15)
    strong = locomo["strata"]["strong"]
    assert strong["n_items"] == 6 and strong["harv_minus_iso"]["mean"] == pytest.approx(3 / 6)
    assert locomo["strata"]["weak"]["harv_minus_iso"]["mean"] == 0
    assert metrics["headline"]["locomo_strong_harv_minus_iso"] == pytest.approx(0.5)
    # Under the probe readout the headline is the probe's, named as such.
    assert locomo["reading"] == "probe" and list(locomo["readings"]) == ["probe"]
    evaluator = EVALUATORS.get("harvest")
    assert evaluator.metric("locomo_strong").path == "natural.locomo.strata.strong.harv_minus_iso"
    for m in evaluator.contract:
        if m.value(metrics) is not None:
            m.check(m.value(metrics))


def test_a_generating_run_reads_the_papers_parse_first_and_matbenchs_beside_it():
    from matbench.evaluators import EVALUATORS

    # The paper's parse finds "A" in text matbench's parse leaves unread (e.g. "a) ..." upper-cased).
    records = [
        _item(
            f"natural/locomo/conv-{c}/weak",
            False,
            False,
            paper={"harv": "A", "iso": None, "text": "A", "none": "B", "goldev": "A"},
            probe={"harv": "B", "iso": "B"},
        )
        for c in (26, 30, 41, 42)
    ]
    natural = EVALUATORS.get("harvest")(suite="harvest").summarize(records)["natural"]["locomo"]
    assert natural["reading"] == "paper_parse" and list(natural["readings"]) == ["paper_parse", "readout", "probe"]
    assert natural["harv_minus_iso"]["mean"] == 1.0 and natural["arms"]["iso"]["parsed"] == 0.0
    assert natural["readings"]["readout"]["harv_minus_iso"]["mean"] == 0.0
    assert natural["readings"]["probe"]["arms"]["harv"] == 0.0


def test_generate_and_evaluate_harvest_from_a_repository(tmp_path, tiny_dir, capsys, short_dialogs):
    from matbench.cli import main

    sources = dialog_args(short_dialogs)
    assert main(["generate", "--suite", "harvest", "--n-items", "3", "--out", str(tmp_path / "suites"), *sources]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3
    out = tmp_path / "run"
    code = main(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--suite",
            "harvest",
            "--dataset",
            str(tmp_path / "suites"),
            "--chunk-size",
            "4096",
            "--check-pairs",
            "1",  # the gates on the first pair: each gated pair repeats its 20-70k-token forwards
            "--no-progress",
            "--output",
            str(out),
            *sources,
        ]
    )
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "harvest_probe_compact.json").read_text())
    natural = results["metrics"]["natural"]
    assert sum(m["n_items"] for m in natural.values()) + results["metrics"]["injected"].get("n_pairs", 0) == 3
    for corpus, summary in natural.items():
        assert -1 <= summary["harv_minus_iso"]["mean"] <= 1 and summary["reading"] == "probe"
        unit = "participant component" if corpus == "realtalk" else "conversation"
        assert summary["harv_minus_iso"]["clustered_by"] == unit
    assert results["gates"]["A"]["passed"] == results["gates"]["A"]["checked"] == 1


def test_missing_dialog_data_fails_in_one_line_instead_of_skipping(tmp_path, monkeypatch):
    monkeypatch.setenv("MATBENCH_SHARED_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(pytest.fail.Exception, match=f"real-dialog data not found at {tmp_path / 'nowhere'}"):
        shared_data()


def test_the_injected_carriers_donor_shift_is_on_the_scorecard():
    """injected_shift reads harv's donor margin shift over the injected items (mean, CI, signs)."""
    from dataclasses import replace

    from matbench.evaluators import EVALUATORS

    shifts = [0.25, -0.05, 0.1, 0.3]
    records = []
    for k, s in enumerate(shifts):
        record = _item(f"injected/locomo/conv-{26 + k}/strong", True, False)
        arms = {**record.arms, "harv": replace(record.arms["harv"], shift=s)}
        records.append(replace(record, item_id=f"i{k}", arms=arms))
    evaluator = EVALUATORS.get("harvest")
    metrics = evaluator(suite="harvest").summarize(records)
    value = evaluator.metric("injected_shift").value(metrics)
    assert value["mean"] == pytest.approx(sum(shifts) / 4)
    assert (value["positive"], value["negative"]) == (3, 1)
    assert value["ci"][0] <= value["mean"] <= value["ci"][1]
    assert evaluator.metric("injected_shift").text(value).startswith("+0.150 [")
    assert (
        evaluator.metric("injected_shift").value(
            EVALUATORS.get("harvest")(suite="harvest").summarize([_item("natural/locomo/conv-26/weak", True, False)])
        )
        is None
    )  # no injected items: a dash
