"""The fixture store (`tests/fixtures/store`, made by `tests/fixtures/build_store.py`) and its runs
laid out as `matbench eval` writes them (torch-free)."""

from __future__ import annotations

import json
from pathlib import Path

from matbench.results.files import write_json
from matbench.results.store import find_log, read_log_bytes

STORE = Path(__file__).resolve().parent / "fixtures" / "store"


def stored(collection: str, model: str, stem: str) -> Path:
    """The results file of one run of the store: <collection>/<model>/<stem>/<stem>.json."""
    path = STORE / collection / model / stem / f"{stem}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not in the fixture store: add it to tests/fixtures/build_store.py")
    return path


def as_eval_output(folder: Path, dest: Path, stems: list[str] | None = None) -> Path:
    """Copy the runs of a store folder (all, or those of `stems`) into `dest` as an eval output
    folder: indented results files and plain logs side by side. Returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for run in sorted(Path(folder).glob("*/*_*_*.json")):
        if stems is not None and run.stem not in stems:
            continue
        payload = json.loads(run.read_bytes())
        (dest / payload["items"]["log"]).write_bytes(read_log_bytes(find_log(run.parent, payload["items"]["log"])))
        write_json(dest / run.name, payload)
    return dest
