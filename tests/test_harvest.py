"""The harvest suite: references into the user's LoCoMo / REALTALK copies, hydration, refusals."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import (
    DialogSources,
    load_locomo,
    load_realtalk,
    resolve_evidence,
)
from matbench.data_gen.harvest import N_CARRIERS, N_INJECTED, content_words, gold_answer
from matbench.errors import MatbenchError
from tests.helpers import dialog_sources, shared_data


@pytest.fixture(scope="module")
def rows():
    return SUITES.get("harvest").dataset_rows(0, None, dialog_sources())


def test_malformed_evidence_ids_are_normalised_or_dropped():
    known = {f"D{s}:{t}": 0 for s in range(1, 13) for t in range(1, 30)}
    raw = ["D8:6; D9:17", "D9:1 D4:4 D4:6", "D:11:26", "D12:05", "D", "D58", "D3:2.", "D12:3-D12:5", "D2:1,D2:2",
           "D99:1", ""]
    assert resolve_evidence(raw, known) == ["D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D12:5", "D3:2",
                                            "D12:3", "D12:4", "D2:1", "D2:2"]


def test_sources_load_with_their_text_fields():
    locomo = load_locomo(shared_data() / "locomo" / "locomo10.json")
    realtalk = load_realtalk(shared_data() / "realtalk")
    assert [c.conversation for c in locomo][:2] == ["conv-26", "conv-30"] and len(locomo) == 10
    assert [c.conversation for c in realtalk][:2] == ["Chat_1_Emi_Elise", "Chat_2_Kevin_Elise"] and len(realtalk) == 10
    # REALTALK's text is `clean_text`; empty messages are skipped; sessions follow their number.
    assert all(t.text for c in realtalk for t in c.turns)
    assert all(a.session <= b.session for c in locomo + realtalk for a, b in zip(c.turns, c.turns[1:]))
    assert realtalk[0].turns[0].body().startswith("[session 1 29.12.2023, 22:42:04] Emi: ")


def test_rows_follow_the_selection_rules(rows):
    conversations = {(c.corpus, c.conversation): c for c in load_locomo(shared_data() / "locomo")
                     + load_realtalk(shared_data() / "realtalk")}
    kinds = Counter((r["corpus"], r["kind"]) for r in rows)
    assert all(kinds[(corpus, kind)] > 0 for corpus in ("locomo", "realtalk") for kind in ("natural", "injected"))
    per_conversation = Counter((r["conversation"], r["kind"]) for r in rows)
    assert max(v for (_, kind), v in per_conversation.items() if kind == "injected") <= N_INJECTED
    # Round robin: the first 20 items come from 20 different conversations.
    assert len({r["conversation"] for r in rows[:20]}) == 20
    for r in rows:
        conv = conversations[(r["corpus"], r["conversation"])]
        index = conv.index_of()
        qa = conv.qa[r["qa_index"]]
        assert r["category"] == qa["category"] in (1, 2, 3) and gold_answer(qa)
        assert r["source_sha256"] == conv.sha256 and r["evidence"]
        assert gold_answer(conv.qa[r["negative_qa_index"]]).lower() != gold_answer(qa).lower()
        last = max(conv.turns[index[e]].session for e in r["evidence"])
        assert len(r["carriers"]) <= N_CARRIERS and (r["kind"] == "natural") == bool(r["carriers"])
        for dia in r["carriers"]:
            i = index[dia]
            assert conv.turns[i].session > last and dia not in r["evidence"]
            assert len(content_words(qa["question"]) & content_words(conv.turns[i].text)) >= 2
            window = " ".join(t.text for t in conv.turns[max(0, i - 1):i + 2]).lower()
            assert gold_answer(qa).lower() not in window


def test_rows_hold_references_and_never_dialog_text(rows):
    for r in rows:
        strings = [v for v in r.values() if isinstance(v, str)] + r["evidence"] + r["carriers"]
        assert all(" " not in s and len(s) <= 80 for s in strings), r


def test_hydration_builds_both_kinds_of_item():
    pairs = SUITES.get("harvest").generate(0, 40, dialog_sources())
    natural = next(p for p in pairs if p.variant.startswith("natural/"))
    injected = next(p for p in pairs if p.variant.startswith("injected/"))
    assert not natural.paired and natural.values[0] == natural.values[1] and natural.frame == "dialog"
    assert [a.name for a in natural.arms] == ["harv", "iso", "text", "none", "goldev"]
    assert natural.arm("iso").encoding == "isolated" and natural.arm("none").served == ()
    assert re.search(r"\nOption A: .+\nOption B: .+\nWhich option is correct\?$", natural.arms[0].question)
    assert injected.paired and set(injected.values) == {"A", "B"}
    inj = len(injected.events) - 1
    assert injected.arm("harv").served == (inj,) and "moderator: for the record" in injected.events[inj]
    a, b = injected.member(0).events, injected.member(1).events
    changed = [i for i in range(len(a)) if a[i] != b[i]]
    assert changed and changed[0] == injected.source and all(i < inj for i in changed)


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


def test_generate_and_evaluate_harvest_from_a_repository(tmp_path, tiny_dir, capsys):
    from matbench.cli import main

    sources = ["--locomo", str(shared_data() / "locomo" / "locomo10.json"), "--realtalk", str(shared_data() / "realtalk")]
    assert main(["generate", "--suite", "harvest", "--n-items", "3", "--out", str(tmp_path / "suites"), *sources]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3
    out = tmp_path / "run"
    code = main(["eval", "--model", str(tiny_dir), "--suite", "harvest", "--dataset", str(tmp_path / "suites"),
                 "--chunk-size", "4096", "--check", "--no-progress", "--output", str(out), *sources])
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "harvest_probe_compact.json").read_text())
    natural = results["metrics"]["natural"]
    assert sum(m["n_items"] for m in natural.values()) + results["metrics"]["injected"].get("n_pairs", 0) == 3
    for summary in natural.values():
        assert -1 <= summary["harv_minus_iso"]["mean"] <= 1 and summary["harv_minus_iso"]["clustered_by"] == "conversation"
    assert results["gates"]["A"]["passed"] == results["gates"]["A"]["checked"] == 3


def test_missing_dialog_data_fails_in_one_line_instead_of_skipping(tmp_path, monkeypatch):
    import pytest

    from tests.helpers import shared_data

    monkeypatch.setenv("MATBENCH_SHARED_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(pytest.fail.Exception, match=f"real-dialog data not found at {tmp_path / 'nowhere'}"):
        shared_data()
