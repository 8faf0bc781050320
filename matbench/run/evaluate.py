"""`matbench eval`: a suite through one model, written as a results JSON and a per-item log.

`run_eval` plans one `RunSpec` per readout x serving mode, opens (or resumes) a per-item log for
each, scores the pairs a log still lacks through the engine in batches (one global prefill per
pair serves every spec), and writes each spec's results file.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from matbench.engine.memory import cap_memory, check_memory_fraction, choose_batch_pairs, reset_peak
from matbench.errors import MatbenchError
from matbench.protocol.pairs import prefill_order
from matbench.protocol.runspec import RunSpec
from matbench.results.attempts import AttemptLog, attempts_path, totals
from matbench.results.files import item_hash, legacy_run_key, rekey_lines, run_key, write_json
from matbench.results.logs import ItemLog
from matbench.results.payload import RunRecords, write_payload
from matbench.results.shards import ShardManifest, manifest_path, manifests
from matbench.run.attempt import AttemptClock
from matbench.run.config import EvalConfig
from matbench.run.distributed import Shard, merge_shard_logs, shard_logs
from matbench.run.environment import environment
from matbench.run.preflight import preflight


def run_contract(cfg: EvalConfig, shard: Shard | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`--suite all`: every contract suite through one loaded model (harvest only with the dialog copies),
    then the memory-contract scorecard of the run, written as DIR/scorecard.json."""
    shard = shard or Shard()
    from dataclasses import replace

    loaded = load_eval_model(cfg, shard)
    payloads = []
    for name in contract_suites(cfg):
        payloads += run_eval(replace(cfg, suite=name), loaded=loaded, shard=shard)
    if not shard.is_main:
        return payloads, {}
    return payloads, write_scorecard(cfg)


def write_scorecard(cfg: EvalConfig) -> dict[str, Any]:
    """The memory-contract scorecard of the `--suite all` run in `cfg.output`, written as
    DIR/scorecard.json; none (an empty dict) for runs under a policy other than the oracle."""
    import sys

    from matbench.results.scorecard import build_scorecard

    if cfg.policies != ("oracle",):  # the contract is the model's under the paper's protocol, not a policy's
        print(
            f"note: no scorecard: runs under --policy {' --policy '.join(cfg.policies)} measure that policy, and "
            "the scorecard counts oracle runs only",
            file=sys.stderr,
        )
        return {}
    readout = "probe" if "probe" in cfg.readouts else cfg.readouts[0]
    card = build_scorecard(Path(cfg.output), readout)
    write_json(Path(cfg.output) / "scorecard.json", card)
    return card


def contract_suites(cfg: EvalConfig) -> list[str]:
    """The suites `--suite all` runs, in order: every contract suite, harvest only with the dialog copies."""
    import sys

    from matbench.data_gen import SUITES

    names = [name for name in SUITES.names() if SUITES.get(name).contract]
    if not (cfg.locomo or cfg.realtalk):
        names.remove("harvest")
        print("note: harvest left out (it reads your dialog copies: add --locomo PATH --realtalk DIR)", file=sys.stderr)
    return names


def load_eval_model(cfg: EvalConfig, shard: Shard):
    from matbench.models.loading import load_model

    if cfg.memory_fraction is not None:  # before the weights arrive, so they count against the cap
        cap_memory(shard.device(cfg.device), cfg.memory_fraction)
    return load_model(
        cfg.model,
        revision=cfg.revision,
        dtype=cfg.dtype,
        device=shard.device(cfg.device),
        attn_implementation=cfg.attn_implementation,
        fused_kernels=cfg.fused_kernels,
        trust_remote_code=cfg.trust_remote_code,
        device_map=cfg.device_map,
        rope_yarn=cfg.rope_yarn,
        decode_graphs=cfg.decode_graphs,
        progress=cfg.progress and shard.is_main,
    )


def _load_judge(cfg: EvalConfig, shard: Shard):
    """The judge model, on the evaluated model's device and in its dtype."""
    from matbench.models.loading import load_model
    from matbench.run.judge import Judge

    if cfg.judge is None:
        raise ValueError("the run names no judge model (EvalConfig.judge)")

    return Judge(
        load_model(
            cfg.judge,
            dtype=cfg.dtype,
            device=shard.device(cfg.device),
            trust_remote_code=cfg.trust_remote_code,
            progress=cfg.progress and shard.is_main,
        )
    )


def _judge_is_model(cfg: EvalConfig) -> bool:
    """The answering model grades its own answers (kv_harvest3's setting): one copy of the weights
    serves both, unless the model is loaded in a way the judge is not (YaRN-scaled, spread over GPUs)."""
    return cfg.judge == cfg.model and cfg.rope_yarn is None and cfg.device_map is None


def load_model_for(cfg: EvalConfig, shard: Shard | None = None):
    """The model of `cfg`, loaded once for several runs (`matbench replicate`), after every option
    that can be refused without it has been checked."""
    shard = shard if shard is not None else Shard()
    check_config(cfg, shard)
    return load_eval_model(cfg, shard)


def check_config(cfg: EvalConfig, shard: Shard) -> None:
    """Every option that can be refused before anything loads, each as one line."""
    from matbench.data_gen import SUITES
    from matbench.protocol.readouts import READOUTS

    preflight(cfg)
    if cfg.memory_fraction is not None:
        check_memory_fraction(cfg.memory_fraction)
    if cfg.rope_yarn is not None:
        from matbench.models.rope import check_yarn_factor

        check_yarn_factor(cfg.rope_yarn)
    if cfg.device_map and shard.active:
        raise MatbenchError(
            "--device-map spreads one model over all GPUs of one process; launch without torchrun, "
            "or shard pairs over GPUs (torchrun) without --device-map"
        )
    SUITES.get(cfg.suite)  # a misspelt suite is named as a suite, with a suggestion
    evaluator_for(cfg.suite)
    for readout in cfg.readouts:
        READOUTS.get(readout)
    suite_readouts(cfg)
    if cfg.judge:
        from matbench.run.judge import check_judged

        check_judged(SUITES.get(cfg.suite), cfg.suite)
    settings_of(cfg)
    from matbench.data_gen.paraphrase import check_template

    check_template(cfg.template, cfg.suite, SUITES.get(cfg.suite).paraphrase)


def load_suite(cfg: EvalConfig) -> tuple[list[Any], dict[str, Any]]:
    """The suite's donor pairs (from a dataset repository, or generated) and where they came from."""
    from matbench.data_gen import SUITES
    from matbench.data_gen.dialogs import DialogSources
    from matbench.data_gen.paraphrase import with_template

    sources = DialogSources(cfg.locomo, cfg.realtalk)
    suite = SUITES.get(cfg.suite)
    if cfg.dataset:
        from matbench.data_gen.loading import load_pairs

        pairs, info = load_pairs(cfg.dataset, cfg.suite, cfg.limit, cfg.dataset_revision, sources=sources)
    else:
        pairs, info = (
            suite.generate(cfg.seed, cfg.limit, sources),
            {"dataset": None, "suite_version": suite.version, "seed": cfg.seed},
        )
    # Under --template para each pair is reworded (kv_frozen's untuned surface) and rechecked.
    return [with_template(p, cfg.template, cfg.suite, suite.paraphrase) for p in pairs], info


def settings_of(cfg: EvalConfig) -> list[Any]:
    """The policy settings of the run (`matbench.engine.policies.setting.expand_settings`)."""
    from matbench.engine.policies.setting import expand_settings

    return expand_settings(cfg.policies, cfg.budgets, cfg.source_modes, cfg.kept_from)


def plan(cfg: EvalConfig, engine: Any) -> list[RunSpec]:
    """One spec per policy setting x serving mode x readout (`auto` resolved for the loaded model,
    or to the modes the suite compares: `Suite.servings`); every spec is served from the same
    global prefill per pair."""
    from matbench.data_gen import SUITES

    own = SUITES.get(cfg.suite).servings
    servings = dict.fromkeys(
        m for s in cfg.servings for m in (own if s == "auto" and own else (engine.resolve_serving(s),))
    )
    return [
        RunSpec(
            model=cfg.model,
            suite=cfg.suite,
            readout=r,
            serving=s,
            policy=setting.policy.spec,
            source=setting.source,
            kept_from=setting.kept_from,
            revision=cfg.revision,
            dataset=cfg.dataset,
            dataset_revision=cfg.dataset_revision,
            dtype=cfg.dtype,
            attention=cfg.attn_implementation,
            seed=cfg.seed,
            limit=cfg.limit,
            chunk_size=cfg.chunk_size,
            template=cfg.template,
            rope_yarn=cfg.rope_yarn,
            judge=cfg.judge,
        )
        for setting in settings_of(cfg)
        for s in servings
        for r in suite_readouts(cfg)
    ]


def suite_readouts(cfg: EvalConfig) -> list[str]:
    """The run's readouts the suite can be read by (`Suite.readouts`), refused when none is."""
    from matbench.data_gen import SUITES

    own = SUITES.get(cfg.suite).readouts
    readouts = [r for r in dict.fromkeys(cfg.readouts) if not own or r in own]
    if not readouts:
        raise MatbenchError(
            f"suite {cfg.suite} is read by --readout {' or '.join(own)} only (got "
            f"{', '.join(cfg.readouts)}); its arms ask open questions and score the text"
        )
    return readouts


@dataclass
class PlannedRun:
    """A spec with the results config it writes, the config's hash, its per-item log and the
    attempts file beside it."""

    spec: RunSpec
    config: dict[str, Any]
    key: str
    log: ItemLog
    attempts: AttemptLog


def run_config(
    spec: RunSpec,
    model_info: dict[str, Any],
    source_info: dict[str, Any],
    n_items: int,
    check: bool,
    judge_info: dict[str, Any] | None = None,
    check_pairs: int | None = None,
) -> dict[str, Any]:
    """The results file's `config`; its hash (without n_items, check and check_pairs) keys the
    per-item log.
    The policy is written only when it is not the oracle, its source mode and kept-from member
    only when not natural and a, so earlier runs keep their hashes (and the judge only when one
    graded the answers)."""
    return {
        "model": model_info,
        "suite": spec.suite,
        **source_info,
        "n_items": n_items,
        "readout": spec.readout,
        "serving": spec.serving,
        "chunk_size": spec.chunk_size,
        "check": check,
        **({"check_pairs": check_pairs} if check and check_pairs else {}),
        **({"policy": spec.policy} if spec.policy != "oracle" else {}),
        **({"source_mode": spec.source} if spec.source != "natural" else {}),
        **({"kept_from": spec.kept_from} if spec.kept_from != "a" else {}),
        **({"template": spec.template} if spec.template != "orig" else {}),
        **({"rope_yarn": spec.rope_yarn} if spec.rope_yarn else {}),
        **({"judge": judge_info} if judge_info else {}),
    }


def open_runs(
    specs: list[RunSpec], configs: list[dict[str, Any]], cfg: EvalConfig, shard: Shard, suite_order: list[str]
) -> list[PlannedRun]:
    """A per-item log per spec: rank 0 alone starts afresh or merges what an interrupted sharded
    run left, then every rank opens it (appending to its own shard log when sharded). Earlier
    attempts are forgotten with the records they made: under --fresh, or when the log holds none."""
    out = Path(cfg.output)
    keys = [run_key(c) for c in configs]
    paths = [out / f"{spec.stem}.items.jsonl" for spec in specs]
    if shard.is_main or shard.independent:  # logs of matbench before schema 1.15 (device and location in the key)
        for c, key, path in zip(configs, keys, paths):
            log = shard.shard_log(path) if shard.independent else path
            for kept in (log, attempts_path(log), *(() if shard.independent else shard_logs(path))):
                rekey_lines(kept, legacy_run_key(c), key)
    if shard.independent:  # its own shard log, read and appended as one process's log is
        return [_open_shard(spec, c, key, path, cfg, shard) for spec, c, key, path in zip(specs, configs, keys, paths)]
    if shard.is_main:
        for key, path in zip(keys, paths):
            # `--shard I/N` runs left here are joined by `matbench merge`, not taken for an
            # interrupted torchrun's rank logs (merged and deleted, their descriptions left stale)
            described = [p for p in manifests(out) if p.name.startswith(path.name.replace(".items.jsonl", ".shard."))]
            if described and not cfg.fresh:
                raise MatbenchError(
                    f"{out} holds {len(described)} --shard run(s) of {path.name.replace('.items.jsonl', '')}: "
                    f"join them with `matbench merge {out} --output DIR`, run the rest with --shard, "
                    "or pass --fresh to discard them"
                )
            if cfg.fresh:
                for leftover in (*shard_logs(path), *described, *(attempts_path(p) for p in shard_logs(path))):
                    leftover.unlink(missing_ok=True)
            item_log = ItemLog(path, key, fresh=cfg.fresh)
            merge_shard_logs(item_log, suite_order)
            if not item_log.records:
                AttemptLog(attempts_path(path), key).discard()
    shard.barrier()
    return [
        PlannedRun(
            spec,
            c,
            key,
            ItemLog(path, key, write_to=shard.shard_log(path) if shard.active else None),
            AttemptLog(attempts_path(path), key),
        )
        for spec, c, key, path in zip(specs, configs, keys, paths)
    ]


def _open_shard(
    spec: RunSpec, config: dict[str, Any], key: str, path: Path, cfg: EvalConfig, shard: Shard
) -> PlannedRun:
    """An independent shard's log and attempts file (`--shard I/N`): the run's, with its rank."""
    log_path, attempts = shard.shard_log(path), attempts_path(shard.shard_log(path))
    if cfg.fresh:
        for leftover in (attempts, manifest_path(path, shard.rank)):
            leftover.unlink(missing_ok=True)
    log = ItemLog(log_path, key, fresh=cfg.fresh)
    if not log.records:
        AttemptLog(attempts, key).discard()
    return PlannedRun(spec, config, key, log, AttemptLog(attempts, key))


def _describe_shard(run: PlannedRun, cfg: EvalConfig, shard: Shard, slice_: list[Any], pairs: list[Any]) -> None:
    """What `matbench merge` needs of this shard besides its records, written before it scores:
    so a shard that never finishes is named, with the items it lacks."""
    path = Path(cfg.output) / f"{run.spec.stem}.items.jsonl"
    ShardManifest(
        stem=run.spec.stem,
        shard=shard.rank,
        shards=shard.world_size,
        config=run.config,
        config_hash=run.key,
        invocation=_invocation(cfg),
        environment=environment(),
        items=tuple(p.item_id for p in slice_),
        suite_order=tuple(p.item_id for p in pairs),
        n_from_log=run.log.n_loaded,
    ).write(manifest_path(path, shard.rank))


def _invocation(cfg: EvalConfig) -> dict[str, Any]:
    return {**asdict(cfg), "readouts": list(cfg.readouts), "servings": list(cfg.servings)}


def score_missing(
    engine: Any,
    todo: list[Any],
    runs: list[PlannedRun],
    hashes: dict[str, str],
    cfg: EvalConfig,
    group: int,
    progress: Any,
    judge: Any = None,
    gated: frozenset[str] | None = None,
    on_batch: Any = None,
) -> None:
    """Score every pair of `todo` for the specs whose logs lack it and append the records (with
    the gates when --check, on the pairs of `gated` when given; graded by `judge` when the run
    names one), a batch at a time; `on_batch()` is called after each batch is logged."""
    from matbench.data_gen import SUITES
    from matbench.engine.batches import score_in_batches
    from matbench.engine.gates import require, run_gates

    by_combo: dict[tuple[str, ...], PlannedRun] = {run.spec.combo: run for run in runs}
    suite = SUITES.get(cfg.suite)  # what the judge reads a record's question and gold from

    def missing(chunk: list[Any]) -> list[tuple[str, ...]]:
        return [c for c, run in by_combo.items() if any(p.item_id not in run.log for p in chunk)]

    def backoff(old: int, new: int) -> None:  # score_in_batches has released the engine's memory
        progress.write(f"out of memory serving {old} pairs together; continuing with {new}")

    for batch in score_in_batches(engine, todo, missing, group, on_backoff=backoff):
        for (pair, layout, caches), records in batch:
            gates = None
            if cfg.check and (gated is None or pair.item_id in gated):
                settings = list(dict.fromkeys(engine.setting_of(c) for c in records))
                gates = run_gates(engine, pair, layout, caches, next(iter(records.values())), settings)
                require(gates, pair.item_id, engine.loaded.attn_implementation, engine.loaded.dtype)
            for combo, record in records.items():
                if judge is not None:
                    record = judge.judge_record(pair, record, suite)
                if pair.item_id not in by_combo[combo].log:
                    by_combo[combo].log.append(
                        replace(
                            record, item_hash=hashes[pair.item_id], gates=tuple(gates) if gates is not None else None
                        )
                    )
            progress.update(1)
        if on_batch is not None:
            on_batch()


def run_eval(cfg: EvalConfig, loaded: Any = None, shard: Shard | None = None) -> list[dict[str, Any]]:
    """Evaluate every (readout, serving) combination from one global prefill per pair; one
    results file and one per-item log per combination. Returns the results payloads (none on
    ranks other than 0 of a sharded run, see `matbench.run.distributed`).
    `loaded`: a model already loaded (several suites in one run)."""
    from tqdm import tqdm

    from matbench.engine.pair_engine import PairEngine

    shard = shard or Shard()
    check_config(cfg, shard)
    pairs, source_info = load_suite(cfg)
    started = time.time()
    # A judge of its own loads first, so a misspelt one fails in seconds, not after the model's weights.
    own_judge = bool(cfg.judge) and not _judge_is_model(cfg)
    judge = _load_judge(cfg, shard) if own_judge else None
    loaded = loaded if loaded is not None else load_eval_model(cfg, shard)
    if cfg.judge and not own_judge:
        from matbench.run.judge import Judge

        judge = Judge(loaded)  # the answering model grades itself
    first = settings_of(cfg)[0]
    engine = PairEngine(
        loaded, chunk_size=cfg.chunk_size, policy=first.policy, source=first.source, kept_from=first.kept_from
    )
    specs = plan(cfg, engine)
    model_info = {**loaded.describe(), "device": shard.config_device(loaded.device)}
    judge_info = {**judge.loaded.describe(), "device": shard.config_device(judge.loaded.device)} if judge else None
    configs = [
        run_config(s, model_info, source_info, len(pairs), cfg.check, judge_info, cfg.check_pairs) for s in specs
    ]
    runs = open_runs(specs, configs, cfg, shard, [p.item_id for p in pairs])
    hashes = {p.item_id: item_hash(p) for p in pairs}
    for run in runs:
        run.log.check_items(hashes)  # a logged item must be the same item, not just the same id
    todo = [p for p in pairs if any(p.item_id not in run.log for run in runs)]
    # Items of one prefill (harvest: the questions of one dialog) run together, each group where
    # its first item stands (`prefill_order`); logs are written back in suite order. This order
    # is the same on every device, so shards slice alike.
    todo = prefill_order(todo)
    mine = shard.block(todo)
    if shard.independent:
        # Its slice of every item in that order, not of what is left to do: a shard resumed
        # alone must keep the same slice. One after the other, the slices are the order one
        # process logs a fresh run in, and so the merged log.
        slice_ = shard.block(prefill_order(pairs))
        for run in runs:
            _describe_shard(run, cfg, shard, slice_, pairs)
        mine = [p for p in slice_ if any(p.item_id not in run.log for run in runs)]
        todo = mine  # the progress bar counts the slice
    if engine.share_prefixes:  # and the items that open alike together, to start from each other's rows
        mine = prefill_order(mine, by_context=True)
    group = cfg.batch_pairs or choose_batch_pairs(loaded, mine, engine.prefetch_layouts, cfg.memory_fraction)
    reset_peak(loaded.device)
    clock = AttemptClock.start(
        started,
        loaded.device,
        group,
        cfg.batch_pairs is None and loaded.device.startswith("cuda"),
        shard.world_size if shard.active else 1,
    )  # an independent shard is one process
    # The main process keeps the attempt's totals (its own peak; under torchrun every rank runs
    # as long), after each batch, so a killed attempt counts up to its last batch.
    on_batch = (lambda: clock.record(runs)) if shard.is_main or shard.independent else None
    where = f", rank {shard.rank}/{shard.world_size}" if shard.active else ""
    where = f", shard {shard.rank}/{shard.world_size}" if shard.independent else where
    total = len(slice_) if shard.independent else len(pairs)
    with tqdm(
        total=total - len(todo) + len(mine),
        initial=total - len(todo),
        desc=f"{cfg.suite} ({loaded.source.name}{where})",
        unit="pair",
        disable=not cfg.progress or not (shard.is_main or shard.independent),
    ) as progress:
        gated = frozenset(p.item_id for p in pairs[: cfg.check_pairs]) if cfg.check_pairs else None
        try:
            score_missing(engine, mine, runs, hashes, cfg, group, progress, judge, gated, on_batch)
        except BaseException:  # out of memory, a failed gate, Ctrl-C: the time spent still counts
            if on_batch is not None:
                on_batch()
            raise
    shard.barrier()
    if shard.independent:  # no results file: `matbench merge` writes it from every shard
        clock.record(runs)
        return []
    if not shard.is_main:
        return []
    if shard.active:  # the shard logs into the run's log, in the order one process writes it
        for run in runs:
            merged = ItemLog(run.log.path, run.key)
            merge_shard_logs(merged, [p.item_id for p in todo])
            merged.n_loaded = run.log.n_loaded
            run.log = merged
    clock.record(runs)  # the attempt's final totals (every rank's records merged)
    env = environment()
    return [write_results(run, cfg, pairs, evaluator_for(cfg.suite), env, _attempts(run, clock)) for run in runs]


def evaluator_for(suite: str) -> Any:
    from matbench.evaluators import EVALUATORS

    return EVALUATORS.get(suite)(suite=suite)


def _attempts(run: PlannedRun, clock: AttemptClock) -> Any:
    """The totals of every attempt behind the run's records. A log from before attempts files
    were kept, re-run with nothing left to score, has none recorded: this invocation stands in
    (once; it is recorded, so re-running again changes nothing)."""
    attempts = run.attempts.read()
    if not attempts:
        run.attempts.record(clock.so_far(run.key, 0))
        attempts = run.attempts.read()
    return totals(attempts)


def write_results(
    run: PlannedRun, cfg: EvalConfig, pairs: list[Any], evaluator: Any, env: dict[str, Any], spent: Any
) -> dict[str, Any]:
    """The spec's results file from its log's records, validated before it is written; `env`:
    where it ran, `spent`: the `Totals` of every attempt behind the records."""
    records = run.log.ordered(p.item_id for p in pairs)
    made = RunRecords(
        config=run.config,
        config_hash=run.key,
        invocation=_invocation(cfg),
        environment=env,
        log=run.log.path,
        n_from_log=run.log.n_loaded,
        spent=spent,
    )
    return write_payload(
        made, records, evaluator, Path(cfg.output) / f"{run.spec.stem}.json", f"results of {run.spec.stem}"
    )
