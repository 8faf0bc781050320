"""harvest_freeform (kv_harvest3.py): the selection without negatives, the window dose's units, free
answers read four ways, the judge (`--judge`), and the run's refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.dialogs import DialogSources, load_locomo, load_realtalk
from matbench.data_gen.harvest import gold_answer, select
from matbench.data_gen.harvest_freeform import ANSWER_TOKENS, INSTRUCTION, WINDOWS, window_units
from matbench.errors import MatbenchError
from matbench.protocol.records import ArmRecord, PairRecord
from matbench.results.schema import SCHEMA_VERSION
from tests.helpers import dialog_args, dialog_sources, shared_data


@pytest.fixture(scope="module")
def conversations():
    return {
        (c.corpus, c.conversation): c
        for c in load_locomo(shared_data() / "locomo") + load_realtalk(shared_data() / "realtalk")
    }


@pytest.fixture(scope="module")
def rows():
    return SUITES.get("harvest_freeform").dataset_rows(0, None, dialog_sources())


def test_every_qa_with_a_carrier_gives_one_row_per_window_in_order(rows, conversations):
    qualifying = {(c.corpus, c.conversation, s.qa_index) for c in conversations.values() for s in select(c)}
    assert len(rows) == len(WINDOWS) * len(qualifying)  # no negative needed, nothing refused
    assert {(r["corpus"], r["conversation"], r["qa_index"]) for r in rows} == qualifying
    for k in range(0, len(rows), len(WINDOWS)):  # a QA's windows are consecutive rows, 0, 1, 2
        group = rows[k : k + len(WINDOWS)]
        assert [r["window"] for r in group] == list(WINDOWS)
        assert len({(r["conversation"], r["qa_index"]) for r in group}) == 1
    assert [r["index"] for r in rows] == list(range(len(rows)))
    assert len({r["conversation"] for r in rows[: 3 * 20]}) == 20  # round-robin over the 20 conversations


def test_the_windows_grow_around_the_carriers_under_the_papers_screens(rows, conversations):
    grew = 0
    for w0, w1, w2 in zip(rows[0::3], rows[1::3], rows[2::3]):
        conv = conversations[(w0["corpus"], w0["conversation"])]
        assert w0["units"] == w0["carriers"]
        assert set(w0["units"]) <= set(w1["units"]) <= set(w2["units"])
        grew += len(w2["units"]) > len(w0["units"])
        known = conv.index_of()
        last = max(conv.turns[known[e]].session for e in w2["evidence"])
        gold = gold_answer(conv.qa[w2["qa_index"]]).lower()
        carriers = [known[d] for d in w2["carriers"]]
        for d in w2["units"]:
            turn = conv.turns[known[d]]
            assert turn.session > last and d not in w2["evidence"] and gold not in turn.body().lower()
            assert min(abs(known[d] - c) for c in carriers) <= 2
    assert grew > len(rows) // 6  # the dose does widen what is served


def test_window_units_apply_each_screen_to_the_neighbours(conversations):
    conv = conversations[("locomo", "conv-26")]
    item = select(conv)[0]
    known = conv.index_of()
    c = sorted(known[d] for d in item.carriers)
    wide = window_units(conv, item, 1)
    assert set(c) <= set(wide) and set(wide) <= {j for i in c for j in (i - 1, i, i + 1)}
    evidence = replace(
        item,
        evidence=item.evidence + tuple(conv.turns[j].dia_id for j in (c[0] - 1, c[0] + 1) if 0 <= j < len(conv.turns)),
    )
    assert not {c[0] - 1, c[0] + 1} & set(window_units(conv, evidence, 1)) - set(c)


def test_a_row_hydrates_into_the_papers_five_arms():
    suite = SUITES.get("harvest_freeform")
    pairs = suite.generate(0, 3, dialog_sources())
    pair = pairs[1]
    assert not pair.paired and pair.menu == (pair.values[0],) and pair.frame == "dialog"
    arms = {a.name: a for a in pair.arms}
    assert list(arms) == ["harv", "iso", "text", "none", "goldev"]
    assert {a.encoding for a in arms.values()} == {"joint", "headless_runs", "text"}
    assert arms["iso"].encoding == "headless_runs" and arms["harv"].served == arms["iso"].served == arms["text"].served
    assert arms["none"].served == () and arms["goldev"].uses_source
    assert all(a.open_question and a.budget == ANSWER_TOKENS for a in arms.values())
    question, gold = suite.judge_prompt(pair)
    assert arms["harv"].question == f"{question}\n{INSTRUCTION}" and gold == pair.values[0]
    assert pair.variant.split("/")[-1] == "w1" and pair.variant.startswith("natural/")
    assert len(arms["harv"].served) >= len(pairs[0].arm("harv").served)


def test_malformed_rows_are_refused_in_one_line(rows):
    suite = SUITES.get("harvest_freeform")
    bad = dict(rows[0], window=5)
    bad["content_hash"] = suite.row_hash(bad)
    with pytest.raises(MatbenchError, match=r"malformed harvest_freeform row .*: window 5 is not one of \(0, 1, 2\)"):
        suite.pairs_from_rows([bad], dialog_sources())
    gone = dict(rows[0], units=["D99:99"])
    gone["content_hash"] = suite.row_hash(gone)
    with pytest.raises(MatbenchError, match="turn D99:99 is not in locomo10.json"):
        suite.pairs_from_rows([gone], dialog_sources())
    with pytest.raises(MatbenchError, match="content_hash does not match"):
        suite.pairs_from_rows([dict(rows[0], window=1)], dialog_sources())


def _arm(text: str, gold: str, judged: bool | None) -> ArmRecord:
    from matbench.protocol.menus import find_menu_words
    from matbench.protocol.readouts import paper_pick

    found = find_menu_words(text, (gold,))
    answer = found[0] if found else None
    return ArmRecord(
        answers=(answer, answer),
        outcome="same",
        probe_answers=(gold, gold),
        probe_logp=((0.0,), (0.0,)),
        shift=0.0,
        texts=(text, text),
        paper_answers=(paper_pick(text, (gold,), "first"),) * 2,
        judged=(judged, judged) if judged is not None else None,
    )


def _freeform(conv: str, qa: int, window: int, harv: bool, iso: bool, judged: bool = True) -> PairRecord:
    gold = "Lisbon"
    say = {True: "She went to Lisbon.", False: "Paris"}
    texts = {"harv": say[harv], "iso": say[iso], "text": "Lisbonne", "none": "no idea", "goldev": "lisbon, in July"}
    arms = {arm: _arm(t, gold, (t == say[True] or arm == "goldev") if judged else None) for arm, t in texts.items()}
    variant = f"natural/locomo/{conv}/{'strong' if qa == 0 else 'weak'}/q{qa}/w{window}"
    return PairRecord(
        item_id=f"{variant}",
        variant=variant,
        values=(gold, gold),
        menu=(gold,),
        budget=1,
        length=1,
        n_tokens=(1, 1),
        arms=arms,
    )


def test_the_evaluator_reads_four_ways_and_measures_the_dose_on_the_same_qas():
    from matbench.evaluators import EVALUATORS
    from matbench.evaluators.harvest_freeform import token_f1

    assert token_f1("The Lisbon trip", "lisbon") == pytest.approx(2 * (1 / 2) * 1 / (1 / 2 + 1))
    assert token_f1("Paris", "Lisbon") == 0.0 and token_f1("the", "a") == 1.0  # both empty after normalizing
    # w0: harv right, iso wrong on every QA; w1: both right; w2: both wrong.
    records = [
        _freeform(f"conv-{c}", qa, w, harv=w in (0, 1), iso=w == 1)
        for c in (26, 30, 41)
        for qa in (0, 1)
        for w in WINDOWS
    ]
    evaluator = EVALUATORS.get("harvest_freeform")(suite="harvest_freeform")
    metrics = evaluator.summarize(records)
    assert metrics["readings"] == ["judge", "contains", "paper_contains", "f1"] and metrics["reading"] == "judge"
    locomo = metrics["natural"]["locomo"]
    w0 = locomo["by_window"]["w0"]["readings"]
    assert w0["judge"]["arms"]["harv"]["mean"] == 1.0 and w0["judge"]["arms"]["iso"]["mean"] == 0.0
    assert w0["judge"]["harv_minus_iso"]["mean"] == 1.0 and w0["judge"]["harv_minus_iso"]["n_clusters"] == 3
    assert w0["judge"]["strong"]["n_items"] == 3
    # "Lisbonne" is not the gold as a whole word, but holds it as a substring (the paper-style reading)
    assert w0["contains"]["arms"]["text"]["mean"] == 0.0 and w0["paper_contains"]["arms"]["text"]["mean"] == 1.0
    assert w0["judge"]["arms"]["goldev"]["mean"] == 1.0 and w0["contains"]["arms"]["goldev"]["mean"] == 1.0
    assert 0 < w0["f1"]["arms"]["harv"]["mean"] < 1 and "ci" not in w0["f1"]["arms"]["harv"]
    dose = locomo["dose"]
    assert dose["w1"]["judge"]["mean"] == -1.0 and dose["w2"]["judge"]["mean"] == -1.0
    assert dose["w1"]["judge"]["n_qas"] == 6
    assert metrics["headline"]["locomo_dose"] == {"w1": -1.0, "w2": -1.0}
    assert metrics["headline"]["locomo_harv_minus_iso"]["mean"] == 1.0
    for m in evaluator.contract:
        if m.value(metrics) is not None:
            m.check(m.value(metrics))
    # without a judge the headline is matbench's whole-phrase reading
    unjudged = [_freeform("conv-26", 0, w, True, False, judged=False) for w in WINDOWS]
    assert evaluator.summarize(unjudged)["reading"] == "contains"


def test_the_judge_asks_the_papers_question_and_grades_each_text_once(tiny_llama, monkeypatch):
    from matbench.engine.runtime import ModelRunner
    from matbench.run import judge as judging

    request = judging.judge_request("When?", "July", "in July")
    assert request == (
        "You are grading an answer to a question about an agent trajectory.\nQuestion: When?\n"
        "Reference answer: July\nCandidate answer: in July\n\nIs the candidate correct and consistent "
        "with the reference answer? Reply with exactly one word: yes or no."
    )
    assert judging.verdict(" Yes, it is") and not judging.verdict("no") and not judging.verdict("The answer: yes")
    seen = []
    tok = tiny_llama.tokenizer

    def fake_greedy(self, ids, max_new_tokens, stop_ids):
        seen.append((tok.decode(ids), max_new_tokens))
        return tok(
            "yes" if "Candidate answer: in July" in tok.decode(ids) else "no", add_special_tokens=False
        ).input_ids

    monkeypatch.setattr(ModelRunner, "plain_greedy", fake_greedy)
    judge = judging.Judge(tiny_llama)
    suite = SUITES.get("harvest_freeform")
    pair = suite.generate(0, 1, dialog_sources())[0]
    question, gold = suite.judge_prompt(pair)
    record = _freeform("conv-26", 0, 0, True, False)
    record = replace(record, arms={name: replace(a, judged=None) for name, a in record.arms.items()})
    texts = {"harv": "in July", "iso": "in July", "text": "in June", "none": "no", "goldev": "in July"}
    record = replace(record, arms={n: replace(a, texts=(texts[n], texts[n])) for n, a in record.arms.items()})
    judged = judge.judge_record(pair, record, suite)
    assert {n: a.judged for n, a in judged.arms.items()} == {
        "harv": (True, True),
        "iso": (True, True),
        "text": (False, False),
        "none": (False, False),
        "goldev": (True, True),
    }
    assert len(seen) == 3 and {n for _, n in seen} == {judging.JUDGE_TOKENS}  # one call per distinct text
    assert all(f"Question: {question}\nReference answer: {gold}\n" in text for text, _ in seen)


def test_a_judged_run_of_a_tiny_model_end_to_end(tmp_path, tiny_dir, capsys, short_dialogs):
    from matbench.cli import main

    sources = dialog_args(short_dialogs)
    out = tmp_path / "run"
    code = main(
        [
            "eval",
            "--model",
            str(tiny_dir),
            "--suite",
            "harvest_freeform",
            "--limit",
            "3",
            "--readout",
            "all",
            "--judge",
            str(tiny_dir),
            "--chunk-size",
            "4096",
            "--check",
            "--no-progress",
            "--output",
            str(out),
            *sources,
        ]
    )
    assert code == 0, capsys.readouterr().err
    stem = f"harvest_freeform_short_compact_judge-{str(tiny_dir).strip('/').replace('/', '-')}"
    assert sorted(p.name for p in out.iterdir()) == [
        f"{stem}.attempts.jsonl",
        f"{stem}.items.jsonl",
        f"{stem}.json",
    ]  # short alone
    results = json.loads((out / f"{stem}.json").read_text())
    assert results["schema_version"] == SCHEMA_VERSION and results["config"]["judge"]["model"] == str(tiny_dir)
    assert results["config"]["readout"] == "short" and results["gates"]["A"]["passed"] == 3
    assert results["metrics"]["reading"] == "judge"
    lines = [json.loads(line) for line in (out / f"{stem}.items.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    for line in lines:
        for arm in line["arms"].values():
            assert len(arm["judged"]) == 2 and arm["texts"][0] == arm["texts"][1]
    w0 = results["metrics"]["natural"]["locomo"]["by_window"]["w0"]["readings"]["judge"]
    judged = [line["arms"]["harv"]["judged"][0] for line in lines if line["variant"].endswith("/w0")]
    assert w0["arms"]["harv"]["mean"] == sum(judged) / len(judged)
    # the leaderboard's suite page names the judge beside the run
    from matbench.leaderboard.site import build_site

    build_site([out], tmp_path / "site")
    page = (tmp_path / "site" / "suite-harvest_freeform.html").read_text()
    assert "<th" in page and ">judge<" in page.replace(" ", "") and str(tiny_dir) in page


def test_a_free_answer_suite_refuses_other_readouts_and_other_suites_refuse_a_judge(
    tmp_path, tiny_dir, capsys, short_dialogs
):
    from matbench.cli import main

    sources = dialog_args(short_dialogs)[:2]
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "harvest_freeform",
                "--readout",
                "probe",
                "--output",
                str(tmp_path),
                *sources,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert (
        err.endswith(
            "suite harvest_freeform is read by --readout short only (got probe); its arms ask open "
            "questions and score the text"
        )
        and len(err.splitlines()) == 1
    )
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "discovery",
                "--judge",
                str(tiny_dir),
                "--output",
                str(tmp_path),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "--judge grades free answers against a gold; suite discovery is read from its menu" in err
    assert len(err.splitlines()) == 1


def test_a_judge_of_its_own_loads_first_and_the_model_itself_loads_once(
    tmp_path, tiny_dir, capsys, monkeypatch, short_dialogs
):
    from matbench.cli import main
    from matbench.models import loading

    loads = []
    real = loading.load_model

    def counted(name, *args, **kwargs):
        loads.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(loading, "load_model", counted)
    sources = dialog_args(short_dialogs)[:2]
    # a misspelt judge is named before any weights are read (3 rows: one whole QA)
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "harvest_freeform",
                "--limit",
                "3",
                "--judge",
                "smolm2-135m",
                "--output",
                str(tmp_path / "a"),
                *sources,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "unknown model 'smolm2-135m'" in err and "did you mean the offline alias 'smollm2-135m'?" in err
    assert loads == [] and len(err.splitlines()) == 1
    # the answering model as its own judge (kv_harvest3's setting): its weights load once
    loads.clear()
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "harvest_freeform",
                "--limit",
                "1",
                "--judge",
                str(tiny_dir),
                "--chunk-size",
                "4096",
                "--no-progress",
                "--output",
                str(tmp_path / "b"),
                *sources,
            ]
        )
        == 0
    ), capsys.readouterr().err
    assert loads == [str(tiny_dir)]


@pytest.mark.parametrize("n", [30, 31, 32])
def test_a_count_that_ends_inside_a_qas_windows_is_named_with_the_whole_qa_counts(n, capsys, short_dialogs):
    sources = DialogSources(str(short_dialogs / "locomo"), str(short_dialogs / "realtalk"))
    rows = SUITES.get("harvest_freeform").dataset_rows(0, n, sources)

    assert len(rows) == n
    err = capsys.readouterr().err
    whole = n - n % len(WINDOWS)  # every QA gives len(WINDOWS) consecutive rows (the test above)
    if n % len(WINDOWS):
        assert err == (
            f"note: the first {n} harvest_freeform rows end inside a QA's windows ({n % len(WINDOWS)} of "
            f"its 3 rows kept: its dose lacks the rest); {whole} or {whole + 3} rows keep whole QAs\n"
        )
    else:
        assert err == ""
    assert SUITES.get("harvest").dataset_rows(0, n, sources) and capsys.readouterr().err == ""
