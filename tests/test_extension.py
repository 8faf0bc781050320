"""Extension costs: a readout, a suite (generator + evaluator) and a serving policy registered from
outside the package (tests/plugins/toggle_plugin.py, the recipe CONTRIBUTING gives) run through
`matbench eval` on a tiny model and show up in the results files, the scorecard and the built
leaderboard, with no other file touched. Run in subprocesses: registries are filled once per
process, and this suite must not leak into the other tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent / "plugins" / "toggle_plugin.py"


def _matbench(*args: str, plugins: str | None = str(PLUGIN)) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("MATBENCH_PLUGINS", None)
    if plugins is not None:
        env["MATBENCH_PLUGINS"] = plugins
    return subprocess.run(
        [sys.executable, "-m", "matbench", *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )


def test_a_plugin_suite_readout_and_policy_run_end_to_end(tiny_dir, tmp_path):
    out, site = tmp_path / "out", tmp_path / "site"
    common = [
        "eval",
        "--model",
        str(tiny_dir),
        "--suite",
        "toggle",
        "--limit",
        "3",
        "--device",
        "cpu",
        "--no-progress",
        "--output",
        str(out),
    ]
    done = _matbench(*common, "--readout", "probe,brief", "--check")
    assert done.returncode == 0, done.stderr[-2000:]
    done = _matbench(*common, "--policy", "latest", "--check")
    assert done.returncode == 0, done.stderr[-2000:]

    brief = json.loads((out / "toggle_brief_compact.json").read_text())
    assert (brief["config"]["suite"], brief["config"]["readout"], brief["items"]["n_records"]) == ("toggle", "brief", 3)
    assert set(brief["metrics"]["arms"]) == {"carrier", "txt", "control"}
    assert all(g["passed"] == 3 for g in brief["gates"].values())
    latest = json.loads((out / "toggle_probe_compact_latest.json").read_text())
    assert latest["config"]["policy"] == "latest"
    record = json.loads((out / "toggle_probe_compact_latest.items.jsonl").read_text().splitlines()[0])
    assert set(record["arms"]["carrier"]["selection"]) == {
        "kept_tokens",
        "members_differ",
        "donor_visible",
        "overlap",
        "source_kept",
        "kept",
        "held_rows",
        "picked",
        "members_differ_matched",
        "served_bytes",
        "needed_bytes",
    }
    assert "selection" not in record["arms"]["control"]  # a before-source control keeps its declared rows

    assert _matbench("scorecard", str(out), "--readout", "brief").returncode == 0
    card = json.loads((out / "scorecard.json").read_text())
    assert set(card["contract"]["toggle"]) == {"carrier_classes", "carrier_shift", "control_clean", "evidence"}
    assert card["contract"]["toggle"]["evidence"]["results"] == "toggle_brief_compact.json"

    done = _matbench("leaderboard", "build", "--results", str(out), "--out", str(site))
    assert done.returncode == 0, done.stderr[-2000:]
    page = (site / "suite-toggle.html").read_text()
    assert "carrier f:a" in page and "carrier donor shift" in page
    index = (site / "index.html").read_text()
    assert re.search(r"<th[^>]*>toggle carrier f:a</th>", index)
    assert 'href="suite-toggle.html"' in index


def test_without_the_plugin_its_suite_is_unknown_and_a_broken_plugin_is_one_line(tmp_path):
    done = _matbench("eval", "--model", "x", "--suite", "toggle", "--output", str(tmp_path), plugins=None)
    assert done.returncode == 2 and "unknown suite 'toggle'" in done.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('half written')\n")
    done = _matbench("scorecard", str(tmp_path), plugins=str(broken))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"plugin {str(broken)!r}" in done.stderr and "RuntimeError: half written" in done.stderr
