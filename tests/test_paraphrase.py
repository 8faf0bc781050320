"""`--template para`: the paper's untuned robustness surface (kv_frozen.py PARA) over any synthetic
trajectory suite: the rewording table is the paper's, pairs stay donor pairs that pass the
generation checks and the gates, and the run is recorded apart from the contract."""

from __future__ import annotations

import json
import re

import pytest

from matbench.data_gen import SUITES
from matbench.data_gen.paraphrase import PARA_BODIES, paraphrase_body, paraphrase_leaks, with_template
from matbench.errors import MatbenchError
from matbench.protocol.frames import FRAMES
from matbench.protocol.readouts import RELEVANT_TRACE
from tests.parity.compare import fixture

FIXTURE = fixture("paraphrase")
PARAPHRASABLE = ["access", "decoy_audit", "discovery", "edge_swap", "landing", "programming"]


def test_the_rewording_table_is_kv_frozens():
    kinds = FIXTURE["kinds"]
    assert len(kinds) == len(PARA_BODIES) == 9
    for kind, texts in kinds.items():
        assert paraphrase_body(texts["orig"]) == texts["para"], kind
    wrap = FIXTURE["wrap_index_4"]
    assert FRAMES["entry"].render_event(4, "BODY") == wrap["para"]
    assert FRAMES["trajectory"].render_event(4, "BODY") == wrap["orig"]
    assert (
        paraphrase_body("register KAPPA set to state ONLINE, then more")
        == "register KAPPA set to state ONLINE, then more"
    )


def test_which_suites_take_the_template_is_declared_once():
    assert [n for n in SUITES.names() if SUITES.get(n).paraphrase] == PARAPHRASABLE
    for name in ("trigger", "update"):
        pair = SUITES.get(name).generate(0, 1)[0]
        with pytest.raises(MatbenchError, match=rf"^--template para rewords the synthetic trajectories; suite {name} "):
            with_template(pair, "para", name, SUITES.get(name).paraphrase)
    with pytest.raises(MatbenchError, match=r"^unknown --template 'frozen'; choose from orig, para$"):
        with_template(SUITES.get("discovery").generate(0, 1)[0], "frozen", "discovery", True)


@pytest.mark.parametrize("name", PARAPHRASABLE)
def test_every_structural_statement_is_reworded_and_the_pair_stays_a_donor_pair(name):
    suite = SUITES.get(name)
    pairs = suite.generate(0, 10)
    orig_forms = [p for p, _ in PARA_BODIES]
    for pair in pairs:
        para = with_template(pair, "para", name, True)  # validate() and the generation checks ran
        assert para.frame == "entry" and para.values == pair.values and para.arms[0].served == pair.arms[0].served
        for member in (0, 1):
            a, b = pair.member(member).events, para.member(member).events
            for orig, new in zip(a, b):
                assert new == paraphrase_body(orig)
                assert not any(f.fullmatch(new) for f in orig_forms)  # nothing of the orig forms is left
        changed = sum(x != y for x, y in zip(pair.member(0).events, para.member(0).events))
        assert changed >= 2, (name, pair.item_id)  # at least the source and one served statement
        assert para.varying().keys() == pair.varying().keys()
        assert "mirror" not in para.trace and all("mirror" not in a.trace for a in para.arms)


def test_leak_patterns_gain_their_reworded_twins():
    assert paraphrase_leaks((r"\bregister KAPPA set to\b", r"\bsensor OMEGA measured\b")) == (
        r"\bregister KAPPA set to\b",
        r"\bsensor OMEGA measured\b",
        r"\bstatus of register KAPPA was logged as\b",
        r"\bsensor OMEGA returned a reading\b",
    )
    pair = SUITES.get("discovery").generate(0, 1)[0]
    para = with_template(pair, "para", "discovery", True)
    source = para.member(0).events[para.source]
    assert any(re.search(p, source, re.IGNORECASE) for p in para.leak_patterns)  # the guard still sees the source
    assert para.trace == RELEVANT_TRACE


def test_eval_under_para_passes_the_gates_and_stays_out_of_the_scorecard(tmp_path, tiny_dir, capsys):
    from matbench.cli import main
    from matbench.results.schema import read_results
    from matbench.results.scorecard import largest_runs

    out = tmp_path / "para"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--suite",
                "discovery",
                "--limit",
                "2",
                "--check",
                "--template",
                "para",
                "--no-progress",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    path = out / "discovery_probe_compact_para.json"
    parsed = read_results(path)
    assert parsed.config.template == "para" and all(g.passed == g.checked for g in parsed.gates.values())
    log = [json.loads(line) for line in (out / "discovery_probe_compact_para.items.jsonl").read_text().splitlines()]
    assert len(log) == 2
    assert largest_runs([(path, parsed)], "probe") == {}  # the robustness check, not the contract
    from matbench.results.report import report_rows

    rows = [line for line in report_rows([path]) if line.startswith("| ") and "discovery" not in line]
    assert rows[1].split(" | ")[1:4] == ["probe", "compact, template para", "float32"]
    assert (
        main(["eval", "--model", str(tiny_dir), "--suite", "trigger", "--template", "para", "--output", str(out)]) == 2
    )
    assert "suite trigger cannot take it" in capsys.readouterr().err
