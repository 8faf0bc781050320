"""Every arm as one table: what `matbench eval` ends with and the report prints under its summary."""

from __future__ import annotations

import json
import subprocess
import sys

from matbench.cli import main
from matbench.results.arms import arm_rows, arm_table, run_summary, wrapped
from matbench.results.schema import read_results
from matbench.results.verdicts import LEGEND
from tests.store_fixtures import stored

DISCOVERY = stored("contract", "smollm2-135m", "discovery_probe_compact")
ACCESS = stored("audit", "gemma3-270m", "access_probe_native_adakv-0.25")
FREEFORM = stored("experiments", "gemma3-270m", "harvest_freeform_short_native_judge-gemma3-270m")


def test_each_arm_of_a_discovery_file_is_a_row_with_its_own_numbers():
    metrics = read_results(DISCOVERY).metrics
    rows = arm_rows(metrics)
    assert [r.arm for r in rows] == sorted(metrics["arms"]) and len(rows) == 4
    for row in rows:
        m = metrics["arms"][row.arm]
        assert row.group == "" and row.n == m["n_pairs"] == read_results(DISCOVERY).config.n_items == 16
        assert row.classes == tuple(m["classes"][c] for c in ("follow", "anti", "const", "other"))
        assert (row.p, row.accuracy, row.accuracy_ci) == (
            m["follow_anti_p"],
            m["menu_accuracy"],
            tuple(m["menu_accuracy_ci"]),
        )
        assert (row.shift, row.shift_ci, row.shift_p) == (
            m["donor_shift"]["mean"],
            tuple(m["donor_shift"]["ci"]),
            m["donor_shift"]["wilcoxon_p"],
        )
    table = arm_table(rows)
    assert len(table) == 2 + 4 and table[0].startswith("| arm |")  # no group column without groups
    txt = next(line for line in table if line.startswith("| txt |"))
    assert f"{metrics['arms']['txt']['donor_shift']['mean']:+.3f}" in txt


def test_variant_arms_are_grouped_by_their_variant():
    metrics = read_results(ACCESS).metrics
    rows = arm_rows(metrics)
    expected = [(v, arm) for v, block in metrics["by_variant"].items() for arm in sorted(block["arms"])]
    assert [(r.group, r.arm) for r in rows] == expected and len(expected) > len(metrics["by_variant"])
    assert arm_table(rows)[0].startswith("| group | arm |")


def test_free_answers_show_the_headline_reading_only():
    metrics = read_results(FREEFORM).metrics
    rows = arm_rows(metrics)
    reading = metrics["reading"]
    assert rows and all(r.group.endswith("/" + reading) for r in rows)
    windows = metrics["natural"]["locomo"]["by_window"]
    n_locomo = sum(len(w["readings"][reading]["arms"]) for w in windows.values())
    assert sum(r.group.startswith("natural/locomo/") for r in rows) == n_locomo
    assert all(r.shift is None and r.accuracy is not None for r in rows)


def test_eval_ends_with_every_arm_and_the_paths_and_json_on_request(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "eval",
        "--model",
        str(tiny_dir),
        "--suite",
        "discovery",
        "--limit",
        "2",
        "--no-progress",
        "--output",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    results = read_results(out / "discovery_probe_compact.json")
    # the arms, the verdict and warnings, the paths, the legend once, and what the whole suite is
    hint = [
        "this was 2 of discovery's 256 pairs; the whole suite:",
        f"  matbench eval --model {tiny_dir} --suite discovery --no-progress --output {out}-256",
    ]
    assert printed.strip().splitlines() == [*run_summary(results, out), "", *wrapped(LEGEND), "", *hint]
    assert any(line.startswith("verdict: not shown at 2 pairs: root f:a") for line in printed.splitlines())
    assert f"results: {out / 'discovery_probe_compact.json'}" in printed
    assert sum(line.startswith("| ") for line in printed.splitlines()) == 1 + len(results.metrics["arms"])
    assert main([*argv, "--json"]) == 0  # resumed: nothing to recompute, the same file
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == {
        "readout": "probe",
        "serving": "compact",
        **results.metrics["headline"],
    }


def test_the_report_prints_every_files_arms_after_the_summaries():
    done = subprocess.run(
        [sys.executable, "-m", "matbench.results.report", str(DISCOVERY), str(ACCESS)],
        capture_output=True,
        text=True,
        check=True,
    )
    text = done.stdout
    assert text.index("### discovery") < text.index(f"#### {DISCOVERY}") and f"#### {ACCESS}" in text
    access = read_results(ACCESS).metrics
    n_access, n_governed = len(arm_rows(access)), len(access["selection"])
    section = text[text.index(f"#### {ACCESS}") :].split("#### ")[1]
    # the arms table, then the policy's selection table (a header and one row per governed arm)
    assert sum(line.startswith("| ") for line in section.splitlines()) == 1 + n_access + 1 + n_governed
    assert "what adakv@0.25 kept:" in section


def test_report_rows_name_each_files_model_readout_serving_and_dtype():
    """The first five cells of a row come from the file's config, in the order of the header."""
    from matbench.results.report import report_rows

    for path in (DISCOVERY, FREEFORM):  # protocol runs: an audit run's serving cell also names its policy
        config = read_results(path).config
        row = next(r for r in report_rows([path]) if r.startswith(f"| {config.model.model} |"))
        assert row.split(" | ")[:5] == [
            f"| {config.model.model}",
            config.readout,
            config.serving,
            config.model.dtype,
            str(config.n_items),
        ]


def test_the_report_names_a_missing_file_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "matbench.results.report", str(tmp_path / "nope.json")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert f"results file {tmp_path / 'nope.json'} not found" in done.stderr


def test_the_whole_suite_command_is_quoted_for_a_shell(tiny_dir, tmp_path, capsys):
    """A kvpress policy spec holds parentheses and spaces: the printed command splits back into
    exactly the arguments of the run (less --limit, a new output)."""
    import shlex

    out = tmp_path / "run"
    spec = "kvpress:AdaKVPress(press=KnormPress())@0.5"
    argv = ["eval", "--model", str(tiny_dir), "--suite", "discovery", "--limit", "1", "--policy", spec]
    assert main([*argv, "--no-progress", "--output", str(out)]) == 0
    command = capsys.readouterr().out.strip().splitlines()[-1]
    assert shlex.split(command) == [
        "matbench",
        *argv[:5],
        "--policy",
        spec,
        "--no-progress",
        "--output",
        f"{out}-256",
    ]
