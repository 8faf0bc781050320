"""Synthetic leaderboard inputs: real runs copied under other model names (benchmarks, tests).

Only the results file changes (model name, revision), so every copy still passes the schema and
its log check, exactly like a real submission would.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from matbench.errors import MatbenchError
from matbench.leaderboard.submit import SUBMISSIONS

SOURCE_MODEL = "smollm2-135m"  # its committed submissions are the synthetic runs' sources


def sources(root: Path = SUBMISSIONS) -> list[Path]:
    """The SmolLM2 results files stored under `root` (`submissions/<address>/<file>`) that follow the
    paper's protocol (no policy, template or YaRN variant: those never reach a model's scorecard),
    sorted."""
    from matbench.results.schema import RunConfig

    found = [p for p in sorted(Path(root).glob("*/*.json"))
             if (config := RunConfig.model_validate(json.loads(p.read_text())["config"])).model.model == SOURCE_MODEL
             and not config.variants]
    if not found:
        raise MatbenchError(f"no {SOURCE_MODEL} results files under {root} to synthesize from")
    return found


def copy_run(results: Path, dest: Path, model: str | None = None, revision: str | None = None) -> Path:
    """Copy a results file and its log into `dest`, optionally under another model name/revision."""
    dest.mkdir(parents=True, exist_ok=True)
    payload = json.loads(results.read_text())
    shutil.copyfile(results.parent / payload["items"]["log"], dest / payload["items"]["log"])
    if model is not None:
        payload["config"]["model"]["model"] = model
    if revision is not None:
        payload["config"]["model"]["commit_hash"] = revision
    target = dest / results.name
    target.write_text(json.dumps(payload, indent=1))
    return target


def synthetic_runs(sources: list[Path], root: Path, n: int) -> list[Path]:
    """`n` results files: `sources` (one model's runs) repeated under new model names, each stored
    as `matbench submit` stores a submission (`<sha256 of the results file, 16 hex>/<names>`), so
    a site built from them can link its evidence to a Hub dataset."""
    out = []
    incoming = root / ".incoming"
    for i in range(n):
        source = sources[i % len(sources)]
        model = f"org-{i // len(sources):04d}/model"
        written = copy_run(source, incoming, model, revision=f"{i // len(sources):040x}")
        folder = root / hashlib.sha256(written.read_bytes()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        log = json.loads(written.read_text())["items"]["log"]
        (incoming / log).replace(folder / log)
        out.append(written.replace(folder / written.name))
    incoming.rmdir()
    return out
