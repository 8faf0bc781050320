from __future__ import annotations

import math

import pytest
import torch

from matbench.engine.probe import ProbeScorer
from matbench.errors import MatbenchError
from matbench.protocol.frames import question_text
from matbench.protocol.margins import donor_margin, donor_shift
from matbench.protocol.menus import find_menu_words
from matbench.protocol.readouts import MIRROR_TRACE, READOUTS

NAME8 = ("ALPHA", "BRAVO", "DELTA", "ECHO", "GOLF", "HOTEL", "KILO", "TANGO")


def test_whole_words_only():
    assert find_menu_words("The reading was ABNORMAL.", ("NORMAL", "EXCEEDED")) == []
    assert find_menu_words("ABNORMAL? No: NORMAL.", ("NORMAL", "EXCEEDED")) == ["NORMAL"]
    assert find_menu_words("OFFLINE-ish then online", ("ONLINE", "OFFLINE")) == ["OFFLINE", "ONLINE"]


def test_echoed_register_names_are_not_answers():
    text = "Register ALPHA mirrors register DELTA, so ALPHA is in state KILO."
    assert find_menu_words(text, NAME8, registers=("ALPHA", "DELTA")) == ["KILO"]


def test_short_takes_first_and_trace_takes_last():
    menu = ("ONLINE", "OFFLINE")
    text = "It was ONLINE before, but the final state is OFFLINE"
    assert READOUTS.get("short").parse(text, menu) == "ONLINE"
    assert READOUTS.get("trace").parse(text, menu) == "OFFLINE"
    assert READOUTS.get("short").parse("no idea", menu) is None


def test_option_letters_are_case_sensitive():
    assert find_menu_words("I think a good answer is B.", ("A", "B")) == ["B"]
    assert find_menu_words("A.", ("A", "B")) == ["A"]
    assert find_menu_words("Neither, sorry", ("A", "B")) == []


def test_suffixes_are_the_papers_wording():
    """Verbatim from the paper's scripts: kv_sweepmenu `menu()` (serial comma), kv_causal's
    `" Answer ONLINE or OFFLINE." + TRACE`, kv_parabank's TRACE, kv_causal2's `--menu` question."""
    binary = ("ONLINE", "OFFLINE")
    assert READOUTS.get("short").suffix(binary) == " Answer ONLINE or OFFLINE:"
    assert READOUTS.get("probe").suffix(("NORTH", "SOUTH", "EAST", "WEST")) == " Answer NORTH, SOUTH, EAST, or WEST:"
    assert READOUTS.get("probe").assistant_prefix == "Answer:"
    assert READOUTS.get("trace").suffix(binary, MIRROR_TRACE) == (
        " Answer ONLINE or OFFLINE. Locate the mirror statement for that register, then end your answer with the "
        "final state word."
    )
    assert READOUTS.get("trace").suffix(("EXCEEDED", "NORMAL")) == (
        " Answer EXCEEDED or NORMAL. Locate the relevant statement, then end your answer with the final state word."
    )
    assert READOUTS.get("menu").suffix(binary) == " Answer with the single state word only (ONLINE or OFFLINE):"
    assert (READOUTS.get("trace").max_new_tokens, READOUTS.get("menu").max_new_tokens) == (160, 160)
    assert (READOUTS.get("trace").pick, READOUTS.get("menu").pick) == ("last", "last")


def test_question_opens_with_the_papers_blank_line():
    assert question_text("What state is register T in?", " Answer ONLINE or OFFLINE:") == (
        "\n\nQuestion: What state is register T in? Answer ONLINE or OFFLINE:"
    )


def test_paper_parse_is_the_looser_substring_search():
    # kv_causal.pick_last / kv_parabank.pickw_last: rfind on the upper-cased text.
    flag = ("EXCEEDED", "NORMAL")
    assert READOUTS.get("trace").paper_parse("the reading was abnormal", flag) == "NORMAL"
    assert READOUTS.get("trace").parse("the reading was abnormal", flag) is None
    assert READOUTS.get("trace").paper_parse("OFFLINE at first, then online", ("ONLINE", "OFFLINE")) == "ONLINE"
    # kv_sweepmenu.pick: the earliest hit.
    assert READOUTS.get("short").paper_parse("west, not north", ("NORTH", "SOUTH", "EAST", "WEST")) == "WEST"
    # kv_harvest4.pick_ab: a standalone letter after upper-casing, so the article "a" counts.
    assert READOUTS.get("short").paper_parse("a good answer is B", ("A", "B")) == "A"
    assert READOUTS.get("short").parse("a good answer is B", ("A", "B")) == "B"
    assert READOUTS.get("trace").paper_parse("no idea", ("ONLINE", "OFFLINE")) is None


def test_unknown_readout_suggests_a_name():
    with pytest.raises(MatbenchError, match="Did you mean 'probe'"):
        READOUTS.get("prob")


def test_probe_sums_spaced_and_bare_first_tokens():
    first = {" ONLINE": 1, "ONLINE": 2, " OFFLINE": 3, "OFFLINE": 4}
    scorer = ProbeScorer.for_menu(("ONLINE", "OFFLINE"), lambda s: [first[s], 5])
    logits = torch.full((1, 6), -1e9)
    logits[0, [1, 2, 3, 4]] = torch.log(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    logp = scorer.log_probs(logits)
    assert torch.allclose(logp.exp(), torch.tensor([[0.3, 0.7]]), atol=1e-6)
    assert scorer.answers(logp) == ["OFFLINE"]


def test_probe_refuses_colliding_first_tokens():
    with pytest.raises(MatbenchError, match="start with the same token"):
        ProbeScorer.for_menu(("ONLINE", "OFFLINE"), lambda s: [7])


def test_binary_donor_shift_is_margin_difference():
    menu, values = ("ONLINE", "OFFLINE"), ("ONLINE", "OFFLINE")
    a = torch.log(torch.tensor([0.6, 0.4]))
    b = torch.log(torch.tensor([0.3, 0.7]))
    m_a, m_b = math.log(0.6 / 0.4), math.log(0.3 / 0.7)
    assert donor_shift(a, b, menu, values) == pytest.approx(m_a - m_b, abs=1e-6)
    assert donor_shift(b, a, menu, values) == pytest.approx(-(m_a - m_b), abs=1e-6)
    assert donor_shift(a, a, menu, values) == 0.0


def test_kway_margin_is_donor_minus_logsumexp_of_others():
    menu = ("NORTH", "SOUTH", "EAST", "WEST")
    p = torch.tensor([0.4, 0.3, 0.2, 0.1])
    assert float(donor_margin(p.log(), menu, "SOUTH")) == pytest.approx(math.log(0.3 / 0.7), abs=1e-6)


def test_logit_readout_falls_back_to_own_first_tokens_where_spaced_ones_collide():
    from matbench.engine.probe import first_token_answers, first_token_ids

    # " 857" and " 217" both start with " " (as in Gemma's tokenizer): each is scored on its own
    # first tokens, like the probe; " A"/" B" keep the paper's raw " A" vs " B" comparison.
    encode = {" 857": [1, 8], "857": [8], " 217": [1, 2], "217": [2], " A": [5], "A": [7], " B": [6], "B": [9]}.get
    logits = torch.zeros(2, 10)
    logits[0, 8], logits[1, 2], logits[:, 1] = 3.0, 4.0, 9.0
    assert first_token_answers(logits, ("857", "217"), first_token_ids(("857", "217"), encode)) == ["857", "217"]
    letters = torch.zeros(1, 10)
    letters[0, 6], letters[0, 7] = 1.0, 5.0  # "A" without a space is not the paper's token
    assert first_token_answers(letters, ("A", "B"), first_token_ids(("A", "B"), encode)) == ["B"]


def test_a_plugin_generating_readout_gets_the_paper_parse_metrics():
    """GENERATING_READOUTS is read from the registry when asked, so a readout a plugin registers
    after matbench loaded carries the paper-parse metrics too (in a subprocess: the registry stays
    clean)."""
    import subprocess
    import sys

    code = (
        "from matbench.evaluators import EVALUATORS\n"
        "from matbench.protocol.readouts import GENERATING_READOUTS, READOUTS, Readout\n"
        "metric = EVALUATORS.get('discovery').metric('root_classes_paper')\n"
        "assert not metric.valid_for('brief') and 'brief' not in GENERATING_READOUTS\n"
        "READOUTS.register('brief')(Readout('brief', ' Answer {menu} in one word:', max_new_tokens=4))\n"
        "assert metric.valid_for('brief') and 'brief' in GENERATING_READOUTS\n"
        "assert not metric.valid_for('probe') and not metric.valid_for('logit')\n"
        "assert metric.describe()['readouts'] == ['brief', 'menu', 'short', 'trace'], metric.describe()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_batched_probe_log_probs_equal_each_rows_own_scorer_exactly():
    """`batched_log_probs` (one gather and one host copy for a batch) gives, row by row, exactly
    what each row's `ProbeScorer.log_probs` gives, for menus of different sizes and candidates of
    one and of two first tokens."""
    from matbench.engine.probe import batched_log_probs

    torch.manual_seed(0)
    two = ProbeScorer(("ONLINE", "OFFLINE"), ((11, 12), (13,)))
    three = ProbeScorer(("17", "42", "99"), ((21,), (22, 23), (24,)))
    scorers = [two, three, three, two, three]
    logits = torch.randn(len(scorers), 50) * 4
    got = batched_log_probs(logits, scorers)
    assert [tuple(g.shape) for g in got] == [(2,), (3,), (3,), (2,), (3,)]
    for row, (scorer, cand) in enumerate(zip(scorers, got)):
        assert torch.equal(cand, scorer.log_probs(logits[row : row + 1])[0])
        assert cand.device.type == "cpu"


def test_every_readout_is_described_and_named_in_the_running_docs():
    from pathlib import Path

    from matbench.protocol.readouts import READOUTS

    running = (Path(__file__).resolve().parent.parent / "docs" / "running.md").read_text()
    for name in READOUTS.names():
        assert READOUTS.get(name).description, name
        assert f"`{name}`" in running, name
