"""`matbench eval`: a suite through one model, written as a results JSON and a per-item log."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from matbench.engine.memory import choose_batch_pairs, peak_memory, reset_peak
from matbench.errors import MatbenchError, is_out_of_memory
from matbench.protocol.records import PairRecord
from matbench.results.files import config_hash, file_sha256, item_hash, write_json
from matbench.results.logs import ItemLog
from matbench.results.provenance import environment
from matbench.results.schema import SCHEMA_VERSION, validate_results
from matbench.run.distributed import Shard, merge_shard_logs, shard_logs


@dataclass(frozen=True)
class EvalConfig:
    model: str
    suite: str = "discovery"
    output: str = "out"
    dataset: str | None = None  # a suite repository (Hub id or directory); None = generate in memory
    dataset_revision: str | None = None
    limit: int | None = None
    seed: int = 0
    readouts: tuple[str, ...] = ("probe",)
    servings: tuple[str, ...] = ("auto",)
    revision: str | None = None
    device: str | None = None
    dtype: str | None = None
    device_map: str | None = None  # "auto": layers spread over every visible GPU
    attn_implementation: str | None = None
    fused_kernels: str = "auto"  # matbench.fused: auto = on a GPU with Triton
    chunk_size: int | None = None
    batch_pairs: int | None = None  # donor pairs served and decoded together (default: from free GPU memory, 2 on CPU)
    locomo: str | None = None  # the user's LoCoMo copy (harvest suite)
    realtalk: str | None = None  # the user's REALTALK folder (harvest suite)
    trust_remote_code: bool = False
    check: bool = False
    fresh: bool = False
    progress: bool = True


def run_contract(cfg: EvalConfig, shard: Shard = Shard()) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`--suite all`: every suite through one loaded model (harvest only with the dialog copies),
    then the memory-contract scorecard of the run, written as DIR/scorecard.json."""
    import sys
    from dataclasses import replace

    from matbench.data_gen import SUITES
    from matbench.results.scorecard import build_scorecard

    loaded = _load(cfg, shard)
    names = SUITES.names()
    if not (cfg.locomo or cfg.realtalk):
        names.remove("harvest")
        print("note: harvest left out (it reads your dialog copies: add --locomo PATH --realtalk DIR)", file=sys.stderr)
    payloads = []
    for name in names:
        payloads += run_eval(replace(cfg, suite=name), loaded=loaded, shard=shard)
    if not shard.is_main:
        return payloads, {}
    card = build_scorecard(Path(cfg.output))
    write_json(Path(cfg.output) / "scorecard.json", card)
    return payloads, card


def _load(cfg: EvalConfig, shard: Shard):
    from matbench.models.loading import load_model

    return load_model(cfg.model, revision=cfg.revision, dtype=cfg.dtype, device=shard.device(cfg.device),
                      attn_implementation=cfg.attn_implementation, fused_kernels=cfg.fused_kernels, trust_remote_code=cfg.trust_remote_code,
                      device_map=cfg.device_map)


def run_eval(cfg: EvalConfig, loaded: Any = None, shard: Shard = Shard()) -> list[dict[str, Any]]:
    """Evaluate every (readout, serving) combination from one global prefill per pair; one
    results file and one per-item log per combination. Returns the results payloads (none on
    ranks other than 0 of a sharded run, see `matbench.distributed`).
    `loaded`: a model already loaded (several suites in one run)."""
    from tqdm import tqdm

    from matbench.data_gen import SUITES
    from matbench.engine.gates import require, run_gates
    from matbench.engine.pair_engine import PairEngine
    from matbench.evaluators import EVALUATORS
    from matbench.protocol.readouts import READOUTS

    if cfg.limit is not None and cfg.limit < 1:
        raise MatbenchError(f"--limit must be at least 1 (got {cfg.limit})")
    if cfg.batch_pairs is not None and cfg.batch_pairs < 1:
        raise MatbenchError(f"--batch-pairs must be at least 1 (got {cfg.batch_pairs})")
    if cfg.chunk_size is not None and cfg.chunk_size < 1:
        raise MatbenchError(f"--chunk-size must be at least 1 (got {cfg.chunk_size})")
    if cfg.device_map and shard.active:
        raise MatbenchError("--device-map spreads one model over all GPUs of one process; launch without torchrun, "
                            "or shard pairs over GPUs (torchrun) without --device-map")
    SUITES.get(cfg.suite)  # a misspelt suite is named as a suite, with a suggestion
    evaluator = EVALUATORS.get(cfg.suite)(suite=cfg.suite)
    for readout in cfg.readouts:
        READOUTS.get(readout)
    from matbench.data_gen.dialogs import DialogSources

    sources = DialogSources(cfg.locomo, cfg.realtalk)
    if cfg.dataset:
        from matbench.data_gen.loading import load_pairs

        pairs, source_info = load_pairs(cfg.dataset, cfg.suite, cfg.limit, cfg.dataset_revision, sources=sources)
    else:
        suite = SUITES.get(cfg.suite)
        pairs = suite.generate(cfg.seed, cfg.limit, sources)
        source_info = {"dataset": None, "suite_version": suite.version, "seed": cfg.seed}

    started = time.time()
    if loaded is None:
        loaded = _load(cfg, shard)
    engine = PairEngine(loaded, chunk_size=cfg.chunk_size)
    servings = list(dict.fromkeys(engine.resolve_serving(s) for s in cfg.servings))
    combos = [(r, s) for s in servings for r in dict.fromkeys(cfg.readouts)]
    out = Path(cfg.output)
    model_info = {**loaded.describe(), "device": shard.config_device(loaded.device)}
    runs = {}
    for readout, serving in combos:
        run_config = {
            "model": model_info,
            "suite": cfg.suite,
            **source_info,
            "n_items": len(pairs),
            "readout": readout,
            "serving": serving,
            "chunk_size": cfg.chunk_size,
            "check": cfg.check,
        }
        key = config_hash({k: v for k, v in run_config.items() if k not in ("n_items", "check")})
        stem = f"{cfg.suite}_{readout}_{serving}"
        runs[(readout, serving)] = (run_config, key, stem, out / f"{stem}.items.jsonl")
    suite_order = [p.item_id for p in pairs]
    if shard.is_main:  # rank 0 alone starts afresh or merges what an interrupted sharded run left
        for run_config, key, stem, path in runs.values():
            if cfg.fresh:
                for leftover in shard_logs(path):
                    leftover.unlink()
            merge_shard_logs(ItemLog(path, key, fresh=cfg.fresh), suite_order)
    shard.barrier()
    runs = {combo: (run_config, key, stem, ItemLog(path, key, write_to=shard.shard_log(path) if shard.active else None))
            for combo, (run_config, key, stem, path) in runs.items()}

    hashes = {p.item_id: item_hash(p) for p in pairs}
    for *_, log in runs.values():
        log.check_items(hashes)  # a logged item must be the same item, not just the same id
    todo = [p for p in pairs if any(p.item_id not in log for *_, log in runs.values())]
    # Items of one variant (for harvest: one conversation) run together, so that consecutive
    # items over the same long dialog reuse its prefill; logs are written back in suite order.
    todo.sort(key=lambda p: p.variant)
    mine = shard.block(todo)
    group = cfg.batch_pairs or choose_batch_pairs(loaded, mine, engine.prefetch_layouts)
    first_group = group
    reset_peak(loaded.device)
    where = f", rank {shard.rank}/{shard.world_size}" if shard.active else ""
    progress = tqdm(total=len(pairs) - len(todo) + len(mine), initial=len(pairs) - len(todo),
                    desc=f"{cfg.suite} ({loaded.source.name}{where})", unit="pair",
                    disable=not cfg.progress or not shard.is_main)
    start = 0
    while start < len(mine):
        chunk = mine[start:start + group]
        # Recompute only what is missing; a pair missing in some logs is redone for those only.
        missing = [c for c in combos if any(p.item_id not in runs[c][3] for p in chunk)]
        try:
            items = engine.prepare_many(chunk)
            engine.prefetch_layouts(mine[start + len(chunk):start + len(chunk) + group])  # while the GPU prefills
            scored = engine.score_many(items, missing)
        except Exception as exc:
            if not is_out_of_memory(exc) or len(chunk) == 1:
                raise
            # Back off: finished pairs are already in the logs and this chunk wrote nothing, so
            # it is simply redone in halves. The records do not depend on the batch size.
            group = max(1, len(chunk) // 2)
            engine.release_memory()
            progress.write(f"out of memory serving {len(chunk)} pairs together; continuing with {group}")
            continue
        start += len(chunk)
        for (pair, layout, caches), records in zip(items, scored):
            gates = None
            if cfg.check:
                gates = run_gates(engine, pair, layout, caches, records[missing[0]])
                require(gates, pair.item_id)
            for combo in missing:
                if pair.item_id in runs[combo][3]:
                    continue
                record = replace(records[combo], item_hash=hashes[pair.item_id],
                                 gates=tuple(gates) if gates is not None else None)
                runs[combo][3].append(record)
            progress.update(1)
    progress.close()
    shard.barrier()
    if not shard.is_main:
        return []
    if shard.active:  # the shard logs into the run's log, in the order one process writes it
        for combo, (run_config, key, stem, log) in list(runs.items()):
            merged = ItemLog(log.path, key)
            merge_shard_logs(merged, [p.item_id for p in todo])
            merged.n_loaded = log.n_loaded
            runs[combo] = (run_config, key, stem, merged)

    payloads = []
    environment_info = environment()
    peak, memory_kind = peak_memory(loaded.device)
    resources = {"peak_memory_gib": round(peak, 3), "memory_kind": memory_kind, "batch_pairs": first_group,
                 "batch_pairs_chosen_from_memory": cfg.batch_pairs is None and loaded.device.startswith("cuda"),
                 "processes": shard.world_size}
    for run_config, key, stem, log in runs.values():
        records = log.ordered(p.item_id for p in pairs)
        payload = {
            "schema_version": SCHEMA_VERSION,
            "config": run_config,
            "config_hash": key,
            "invocation": {**asdict(cfg), "readouts": list(cfg.readouts), "servings": list(cfg.servings)},
            "environment": environment_info,
            "metrics": evaluator.summarize(records),
            "gates": _gate_summary(records),
            "items": {"log": log.path.name, "sha256": file_sha256(log.path), "n_records": len(records),
                      "n_from_log": log.n_loaded},
            "wall_seconds": round(time.time() - started, 2),
            "resources": resources,
        }
        validate_results(payload, f"results of {stem}")  # never write a file the schema refuses
        write_json(out / f"{stem}.json", payload)
        payloads.append(payload)
    return payloads


def _gate_summary(records: list[PairRecord]) -> dict[str, dict]:
    """Per gate: items checked, passed, skipped (not applicable, e.g. gate B with sliding
    windows) and the worst |dlogit| among those compared."""
    summary: dict[str, dict] = {}
    for record in records:
        for g in record.gates or ():
            s = summary.setdefault(g.name, {"checked": 0, "passed": 0, "skipped": 0, "max_abs_diff": None})
            if g.max_abs_diff is None and g.passed:
                s["skipped"] += 1
                continue
            s["checked"] += 1
            s["passed"] += g.passed
            s["max_abs_diff"] = max(s["max_abs_diff"] or 0.0, g.max_abs_diff or 0.0)
    return summary
