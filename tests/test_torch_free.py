"""What only recomputes metrics needs no torch: the protocol core, the evaluators, the results code,
and `matbench rescore | submit | scorecard | leaderboard build`, each run in a subprocess where
importing torch or transformers raises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from matbench.results.rescore import log_records, recompute_metrics
from matbench.results.schema import read_results
from matbench.results.scorecard import build_scorecard
from tests.store_fixtures import STORE, as_eval_output

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = STORE / "contract" / "smollm2-135m"

# A meta-path finder that refuses torch and transformers (and their submodules) by name: an import
# of either raises, as in an environment where they are not installed.
BLOCK = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} is blocked in this test")
        return None
sys.meta_path.insert(0, _NoTorch())
"""


def _blocked(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_blocker_blocks_torch(tmp_path):
    done = _blocked("import torch", tmp_path)
    assert done.returncode != 0 and "torch is blocked in this test" in done.stderr


def test_protocol_evaluators_and_results_import_without_torch(tmp_path):
    code = """
import matbench.protocol.records, matbench.protocol.margins, matbench.protocol.menus, matbench.protocol.readouts
import matbench.protocol.pairs, matbench.protocol.frames, matbench.protocol.outcomes
import matbench.evaluators, matbench.data_gen
import matbench.results.schema, matbench.results.logs, matbench.results.rescore, matbench.results.scorecard
import matbench.leaderboard.site, matbench.leaderboard.submit, matbench.cli
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers")))
"""
    done = _blocked(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_rescore_scorecard_submit_and_leaderboard_build_run_without_torch(tmp_path):
    runs = tmp_path / "runs"
    as_eval_output(CONTRACT, runs)
    expected = {}  # the metrics this checkout's evaluators give, computed here with torch importable
    for path in runs.glob("*_probe_*.json"):
        parsed = read_results(path)
        expected[path.name] = recompute_metrics(parsed, log_records(path, parsed))
    code = f"""
from matbench.cli import main
codes = [main(["rescore", {str(runs)!r}]),
         main(["scorecard", {str(runs)!r}, "--output", {str(tmp_path / "card.json")!r}]),
         main(["submit", {str(runs / "discovery_probe_compact.json")!r}, "--store", {str(tmp_path / "store")!r}]),
         main(["leaderboard", "build", "--results", {str(runs)!r}, "--out", {str(tmp_path / "site")!r}])]
print(codes)
"""
    done = _blocked(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0]", done.stdout + done.stderr
    after = {p.name: json.loads(p.read_text())["metrics"] for p in runs.glob("*_probe_*.json")}
    assert after == expected and len(after) == len(list(CONTRACT.glob("*_probe_*/*.json"))) >= 2
    assert json.loads((tmp_path / "card.json").read_text()) == build_scorecard(runs, home=tmp_path)
    assert len(list((tmp_path / "store").rglob("discovery_probe_compact.json"))) == 1
    assert (tmp_path / "site" / "index.html").is_file()
