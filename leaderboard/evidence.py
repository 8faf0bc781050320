"""Where each number's evidence lives: copied into the site, or linked on the Hub.

`copy` (the default) copies every run's results file and per-item log under
evidence/<model slug>/ with content-addressed names: the site is whole and works from file://,
and its size is mostly those copies (a per-item log is up to 200 MB). `link` points every
evidence link at the run's files in the store's Hub dataset instead: a run stored by
`matbench submit` sits in `submissions/<address>/` (`matbench.results.store.run_address`: the
first 16 hex digits of the sha256 of its results), the same path `matbench submit --to-hub`
opens its pull request with, so the address names the file's content and the link cannot drift
to another file. A run found anywhere else (a collection of the store, a folder of one's own) has
no address: its evidence is copied, and the build says so in one line.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from matbench.errors import MatbenchError
from matbench.leaderboard.collect import ModelEntry, Run
from matbench.results.store import GZ, results_bytes

EVIDENCE_MODES = ("copy", "link")
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class HubDataset:
    """A Hub dataset repository holding a results store, at one revision (a branch, tag or commit)."""

    repo_id: str
    revision: str = "main"

    def __post_init__(self) -> None:
        if not _REPO_ID.fullmatch(self.repo_id) or ".." in self.repo_id:
            raise MatbenchError(f"--hub-dataset {self.repo_id!r} is not a Hub repository id (ORG/NAME)")
        if not self.revision or any(c.isspace() for c in self.revision):
            raise MatbenchError(f"--hub-revision {self.revision!r} is not a branch, tag or commit")

    def url(self, path_in_repo: str) -> str:
        """The file's download address (`resolve`: the raw file, not the Hub's viewer page)."""
        return (
            f"https://huggingface.co/datasets/{self.repo_id}/resolve/{quote(self.revision, safe='')}/"
            f"{quote(path_in_repo)}"
        )


@dataclass(frozen=True)
class EvidencePlan:
    """How the build places evidence: `mode` copy or link (link needs `hub`)."""

    mode: str = "copy"
    hub: HubDataset | None = None

    def __post_init__(self) -> None:
        if self.mode not in EVIDENCE_MODES:
            raise MatbenchError(f"--evidence {self.mode!r}: choose one of {', '.join(EVIDENCE_MODES)}")
        if self.mode == "link" and self.hub is None:
            raise MatbenchError("--evidence link needs --hub-dataset ORG/NAME: the dataset the submissions live in")
        if self.mode == "copy" and self.hub is not None:
            raise MatbenchError("--hub-dataset is for --evidence link; with copy the evidence is in the site")


COPY = EvidencePlan()  # today's behaviour, the default


@dataclass(frozen=True)
class PlacedEvidence:
    """Results path -> (results link, log link), and the one-line notes of the placement."""

    links: dict[Path, tuple[str, str]]
    copied: int
    linked: int
    notes: tuple[str, ...] = ()


def submission_address(run: Run) -> str | None:
    """The run's content address where it is stored as a submission (`<address>/<file>`), else None."""
    return run.address if run.path.parent.name == run.address else None


def _copy(out: Path, entry: ModelEntry, run: Run) -> tuple[str, str]:
    folder = out / "evidence" / entry.slug
    folder.mkdir(parents=True, exist_ok=True)
    stem = run.address
    log = f"{stem}.items.jsonl" + (GZ if run.log.name.endswith(GZ) else "")  # copied as stored
    # The results in the store's serialization: the copy's sha256 is the run's (`Run.sha256`).
    (folder / f"{stem}.json").write_bytes(results_bytes(json.loads(run.path.read_bytes())))
    shutil.copyfile(run.log, folder / log)
    return f"evidence/{entry.slug}/{stem}.json", f"evidence/{entry.slug}/{log}"


def place_evidence(out: Path, entries: list[ModelEntry], plan: EvidencePlan) -> PlacedEvidence:
    links: dict[Path, tuple[str, str]] = {}
    copied = linked = 0
    for entry in entries:
        for run in entry.runs:
            address = submission_address(run) if plan.hub is not None else None
            if address is None:
                links[run.path.resolve()] = _copy(out, entry, run)
                copied += 1
            else:  # names passed the schema's bare-file-name pattern
                links[run.path.resolve()] = (
                    plan.hub.url(f"submissions/{address}/{run.path.name}"),
                    plan.hub.url(f"submissions/{address}/{run.log.name}"),
                )
                linked += 1
    notes = ()
    if plan.mode == "link" and copied:
        notes = (
            (
                f"{copied} of {copied + linked} results files have no Hub address (not stored as "
                "submissions/<address>/ by matbench submit): their evidence is copied under evidence/"
            ),
        )
    return PlacedEvidence(links, copied, linked, notes)
