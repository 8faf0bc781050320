"""`matbench merge`: the shards of a run split with `matbench eval --shard I/N` (run on separate
machines, copied or written into one or several folders) joined into the per-item log and results
file one process writes over the same items, without the model.

The log is the one process's byte for byte: the shards' records, in the order of their slices
one after the other, each line serialized as one process serializes it. The results file is
too, except what describes the attempts: `wall_seconds` is summed over the shards (machine time,
not the elapsed time of the job), `resources` takes the largest peak and counts every shard's
attempts and processes, `environment` is shard 0's machine and `merged` lists each shard's
machine and totals; the invocation is the shards' command with the merge's --output. Shards are
merged only when they are every shard of one run: one configuration (config hash: the model
with its dtype and kernels, the suite, the readout, ...), every slice present and complete, an
item logged twice only with the same content. The device is no part of the configuration (schema
1.15), nor where the model was read from: shards run on a CPU and on a GPU merge, and the
config names both devices (`cpu+cuda`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from matbench import __version__
from matbench.errors import MatbenchError
from matbench.protocol.records import PairRecord
from matbench.results.attempts import AttemptLog, Totals, attempts_path, combined, totals
from matbench.results.files import PLACED, keyed_config, legacy_run_key, run_key, without_place
from matbench.results.logs import record_line
from matbench.results.payload import RunRecords, write_payload
from matbench.results.provenance import git_revision
from matbench.results.shards import ShardManifest, manifests, read_shard_records, shard_log_path


@dataclass(frozen=True)
class FoundShard:
    """One shard's description with the folder it was found in and what its attempts spent."""

    manifest: ShardManifest
    folder: Path
    spent: Totals | None  # None: no attempt recorded (it logged nothing yet)

    @property
    def key(self) -> str:
        """The run's key: its config's, whatever matbench described the shard (the device was in
        the key before schema 1.15, so a shard described then carries another)."""
        return run_key(self.manifest.config)

    @property
    def log(self) -> Path:
        return shard_log_path(self.folder / f"{self.manifest.stem}.items.jsonl", self.manifest.shard)


def find_shards(folders: list[Path]) -> dict[str, list[FoundShard]]:
    """Every shard description under `folders`, by the results file they make together."""
    found: dict[str, list[FoundShard]] = defaultdict(list)
    for folder in folders:
        if not folder.is_dir():
            raise MatbenchError(f"{folder} is not a folder; pass the --output folders of the shards")
        for path in manifests(folder):
            manifest = ShardManifest.read(path)
            if manifest.config_hash not in (run_key(manifest.config), legacy_run_key(manifest.config)):
                raise MatbenchError(
                    f"{path}: its config_hash {manifest.config_hash} is not its config's; the "
                    "description was edited or damaged: run that shard again with its command"
                )
            log = shard_log_path(folder / f"{manifest.stem}.items.jsonl", manifest.shard)
            attempts = AttemptLog(attempts_path(log), manifest.config_hash).read()
            found[manifest.stem].append(FoundShard(manifest, folder, totals(attempts) if attempts else None))
    if not found:
        raise MatbenchError(
            f"no shard of `matbench eval --shard I/N` in {', '.join(map(str, folders))} (files *.shard.rank<I>.jsonl)"
        )
    return dict(found)


def differences(a: dict[str, Any], b: dict[str, Any], where: str = "") -> list[str]:
    """`key: a vs b` for every (nested) config entry that differs, as one line can name them."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out += differences(x, y, f"{where}{key}.")
        elif x != y:
            out.append(f"{where}{key}: {x} vs {y}")
    return out


def check_complete(stem: str, shards: list[FoundShard]) -> list[FoundShard]:
    """The shards of one run in shard order, or one line naming what does not fit. Shards may
    have run on different devices (a CPU and a GPU): the key leaves the device out."""
    first = shards[0].manifest
    for other in shards[1:]:
        m = other.manifest
        if other.key != shards[0].key:
            named = "; ".join(
                differences(keyed_config(first.config), keyed_config(m.config))
            )  # keys differ: never empty
            raise MatbenchError(
                f"{stem}: shard {first.label} in {shards[0].folder} and shard {m.label} in {other.folder} "
                f"ran different configurations ({named}); "
                "run the shards with the same options (--dtype, --attn-implementation, --decode-graphs, "
                "--fused-kernels: their defaults differ on CPU and GPU) or merge each run's shards "
                "on their own"
            )
        if without_place(m.config) != without_place(first.config):  # the key leaves out n_items, check and check_pairs
            raise MatbenchError(
                f"{stem}: shard {first.label} in {shards[0].folder} and shard {m.label} in {other.folder} "
                "ran different configurations (--limit, --check or --check-pairs differ); merge each "
                "run's shards on their own"
            )
        if (m.shards, m.suite_order) != (first.shards, first.suite_order):
            raise MatbenchError(
                f"{stem}: shard {m.label} in {other.folder} split other items than shard {first.label} "
                f"in {shards[0].folder} (another --shard N, --limit or suite)"
            )
    by_index: dict[int, FoundShard] = {}
    for found in shards:
        index = found.manifest.shard
        if index in by_index:
            raise MatbenchError(
                f"{stem}: shard {found.manifest.label} is in both {by_index[index].folder} and "
                f"{found.folder}; pass one of them"
            )
        by_index[index] = found
    n, count = len(first.suite_order), first.shards
    for index in range(count):
        if index not in by_index:
            lo, hi = index * n // count, (index + 1) * n // count  # Shard.block's slice
            raise MatbenchError(
                f"{stem}: shard {index}/{count} (items {lo + 1}-{hi} of {n} in the order shards take "
                f"them) is missing: no {stem}.shard.rank{index}.jsonl in the folders given; run "
                f"matbench eval --shard {index}/{count} or pass its folder"
            )
    return [by_index[i] for i in range(count)]


def merged_records(stem: str, shards: list[FoundShard]) -> dict[str, dict[str, Any]]:
    """Every record of the shards, by item id; one line naming a shard that lacks items of its slice."""
    keys = {shards[0].key, *(s.manifest.config_hash for s in shards)}  # each checked to be the config's
    logs = [s.log for s in shards if s.log.exists()]
    records = {i: r for i, (r, _) in read_shard_records(logs, keys, "these shards are not one run").items()}
    for found in shards:
        lacking = [i for i in found.manifest.items if i not in records]
        if lacking:
            raise MatbenchError(
                f"{stem}: shard {found.manifest.label} in {found.folder} lacks {len(lacking)} of its "
                f"{len(found.manifest.items)} items (first {lacking[0]}): it has not finished; run it "
                "again with the same command, it resumes"
            )
    return records


def merged_config(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """Shard 0's config; where the shards ran on different devices, the model's (and judge's)
    device names each, in shard order, joined by `+` (`cpu+cuda`): one process's file names one.
    (The location stays shard 0's; `merged.shards` holds each shard's.)"""
    first = configs[0]
    devices = {
        m: list(dict.fromkeys(c[m]["device"] for c in configs)) for m in PLACED if isinstance(first.get(m), dict)
    }
    return {**first, **{m: {**first[m], "device": "+".join(d)} for m, d in devices.items() if len(d) > 1}}


def merge_run(stem: str, shards: list[FoundShard], output: Path, evaluator: Any) -> dict[str, Any]:
    """Write `output/<stem>.items.jsonl` and `output/<stem>.json` from the complete shards of one run."""
    shards = check_complete(stem, shards)
    records = merged_records(stem, shards)
    first = shards[0].manifest
    order = [i for s in shards for i in s.manifest.items]  # the slices one after the other: one process's order
    parsed = {i: PairRecord.from_json(records[i], f"{stem} record {i}") for i in order}
    key = shards[0].key
    text = "".join(record_line(replace(parsed[i], config_hash=key)) for i in order)
    log = output / f"{stem}.items.jsonl"
    if log.exists() and log.read_text() != text:
        raise MatbenchError(f"{log} already holds another log; choose another --output or move it away")
    output.mkdir(parents=True, exist_ok=True)
    tmp = log.with_name(log.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(log)
    spent = [s.spent for s in shards if s.spent is not None]
    if not spent:
        raise MatbenchError(
            f"{stem}: no shard recorded an attempt (files {stem}.attempts.rank<I>.jsonl); copy them with the shard logs"
        )
    made = RunRecords(
        config=merged_config([s.manifest.config for s in shards]),
        config_hash=key,
        invocation={**first.invocation, "output": str(output)},  # the command one process would have run
        environment=first.environment,
        log=log,
        n_from_log=sum(s.manifest.n_from_log for s in shards),
        spent=combined(spent),
        merged={
            "matbench": __version__,
            "matbench_git": git_revision(),
            "shards": [
                {
                    "shard": s.manifest.shard,
                    "shards": s.manifest.shards,
                    "environment": s.manifest.environment,
                    "n_items": len(s.manifest.items),
                    "device": s.manifest.config["model"]["device"],
                    "location": s.manifest.config["model"]["location"],
                    **(
                        {
                            "wall_seconds": s.spent.wall_seconds,
                            "peak_memory_gib": s.spent.peak_memory_gib,
                            "attempts": s.spent.attempts,
                        }
                        if s.spent
                        else {}
                    ),
                }
                for s in shards
            ],
        },
    )
    suite_order = [parsed[i] for i in first.suite_order]
    return write_payload(made, suite_order, evaluator, output / f"{stem}.json", f"merged results of {stem}")


def merge_folders(folders: list[Path], output: Path) -> list[dict[str, Any]]:
    """Every run whose shards are in `folders`, merged into `output`; checked whole before anything is written."""
    from matbench.evaluators import EVALUATORS

    found = find_shards(folders)
    for stem, shards in found.items():  # refuse before writing anything
        merged_records(stem, check_complete(stem, shards))
    payloads = []
    for stem, shards in sorted(found.items()):
        suite = shards[0].manifest.config["suite"]
        payloads.append(merge_run(stem, shards, output, EVALUATORS.get(suite)(suite=suite)))
    return payloads
