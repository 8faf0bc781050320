"""Synthetic leaderboard inputs: real runs copied under other model names (benchmarks, tests).

Only the results file changes (model name, revision), so every copy still passes the schema and
its log check, exactly like a real submission would.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.results.store import find_log, results_files, run_address

SOURCE_MODEL = "smollm2-135m"  # its contract runs are the synthetic runs' sources
CHECKOUT_STORE = Path(__file__).resolve().parents[1] / "results"  # the store of a source checkout


def sources(root: Path = CHECKOUT_STORE / "contract") -> list[Path]:
    """The SmolLM2 results files under `root` (recursively) that follow the paper's protocol (no
    policy, template or YaRN variant: those never reach a model's scorecard), sorted."""
    from matbench.results.schema import RunConfig

    found = [
        p
        for p in results_files(Path(root), recursive=True)
        if (config := RunConfig.model_validate(json.loads(p.read_text())["config"])).model.model == SOURCE_MODEL
        and not config.variants
    ]
    if not found:
        raise MatbenchError(f"no {SOURCE_MODEL} results files under {root} to synthesize from")
    return found


def copy_run(results: Path, dest: Path, model: str | None = None, revision: str | None = None) -> Path:
    """Copy a results file and its log into `dest`, optionally under another model name/revision."""
    dest.mkdir(parents=True, exist_ok=True)
    payload = json.loads(results.read_text())
    log = find_log(results.parent, payload["items"]["log"])
    if log is None:
        raise MatbenchError(f"{results}: its per-item log {payload['items']['log']} is missing")
    shutil.copyfile(log, dest / log.name)  # as stored: plain or compressed
    if model is not None:
        payload["config"]["model"]["model"] = model
    if revision is not None:
        payload["config"]["model"]["commit_hash"] = revision
    target = dest / results.name
    target.write_text(json.dumps(payload, indent=1))
    return target


def synthetic_runs(sources: list[Path], root: Path, n: int) -> list[Path]:
    """`n` results files: `sources` (one model's runs) repeated under new model names, each stored
    as `matbench submit` stores a submission (`<address>/<names>`), so a site built from them can
    link its evidence to a Hub dataset."""
    out = []
    incoming = root / ".incoming"
    for i in range(n):
        source = sources[i % len(sources)]
        model = f"org-{i // len(sources):04d}/model"
        written = copy_run(source, incoming, model, revision=f"{i // len(sources):040x}")
        payload = json.loads(written.read_text())
        folder = root / run_address(payload)
        folder.mkdir(parents=True, exist_ok=True)
        log = find_log(incoming, payload["items"]["log"])
        log.replace(folder / log.name)
        out.append(written.replace(folder / written.name))
    incoming.rmdir()
    return out
