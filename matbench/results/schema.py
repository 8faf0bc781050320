"""The results file: a typed, versioned contract between `matbench eval` and everything that reads
its output (the leaderboard, `matbench submit`, the scorecard).

One file per (suite, readout, serving): `<suite>_<readout>_<serving>.json`, next to its per-item
log `<suite>_<readout>_<serving>.items.jsonl`. Every key is documented below; `validate_results`
runs on write and on read and names the first field that is wrong. Unknown keys are refused, so
a typo cannot pass as data. Bump SCHEMA_VERSION when a field changes meaning or type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from matbench.errors import MatbenchError
from matbench.protocol.pairs import ServingMode

SCHEMA_VERSION = "1.15"
# 1.1 added the optional `rescored`, 1.2 the optional `resources`, 1.3 the model's optional
# `fused_kernels`, 1.4 the config's optional `policy`, 1.5 the model dtype float64, 1.6 the
# config's optional `template`, 1.7 its optional `rope_yarn`, 1.8 its optional `judge`, 1.9 its
# optional `source_mode` and `kept_from` (and `metrics.selection` under a policy), 1.10 the item
# log's selection fields `picked`, `members_differ_matched`, `served_bytes`, `needed_bytes` (and
# their `metrics.selection` summaries) and the config's optional `check_pairs`, 1.11 the model's
# optional `decode_graphs`, 1.12 the GGUF file's whole sha256 (a 24-digit prefix before) and a local
# .gguf file's `general.name` as `model` (its path before), 1.13 totals over every attempt of a
# resumed run (`wall_seconds` summed, `resources.peak_memory_gib` the largest, the optional
# `resources.attempts`); older files are valid newer ones (their wall seconds and peak are the last
# attempt's), 1.14 the optional `merged` (`matbench merge` of `--shard` runs), 1.15 the config
# hash without the model's and judge's device and location (a merge of shards run on several
# devices names each, `cpu+cuda`, and each shard's device and location).
ReadableVersion = Literal[
    "1.0",
    "1.1",
    "1.2",
    "1.3",
    "1.4",
    "1.5",
    "1.6",
    "1.7",
    "1.8",
    "1.9",
    "1.10",
    "1.11",
    "1.12",
    "1.13",
    "1.14",
    "1.15",
]
READABLE_VERSIONS: tuple[str, ...] = get_args(ReadableVersion)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ModelInfo(_Strict):
    """What was evaluated, precisely enough to load it again."""

    model: str = Field(
        description="the --model argument (alias, Hub id, directory); for a local .gguf file its "
        "`general.name`, else its file name (schema 1.12; the path before, kept in location and gguf_file)"
    )
    location: str | None = Field(description="where it was loaded from (Hub id or local path)")
    gguf_file: str | None = Field(description="GGUF file name when loaded from GGUF, else null")
    revision: str | None = Field(description="the --revision asked for (tag, branch or sha), else null")
    commit_hash: str | None = Field(description="the Hub commit sha the weights came from, when known")
    model_type: str = Field(description="transformers model_type of the text model")
    dtype: Literal["float32", "bfloat16", "float16", "float64"] = Field(
        description="compute dtype (float64: schema 1.5)"
    )
    device: str = Field(
        description="cpu, cuda, cuda:N; a merge of shards run on several devices: each, in "
        "shard order, joined by + (cpu+cuda; schema 1.15)"
    )
    attn_implementation: str = Field(description="attention kernel the model ran with (eager, sdpa, sdpa_grouped)")
    fused_kernels: bool | None = Field(
        default=None,
        description="true when every RMSNorm and MLP forward ran as one "
        "compiled kernel (--fused-kernels, GPU; schema 1.3); absent otherwise",
    )
    decode_graphs: bool | None = Field(
        default=None,
        description="true when greedy decoding replayed each step from "
        "a CUDA graph (--decode-graphs, GPU; schema 1.11); absent otherwise",
    )
    n_parameters: int = Field(
        ge=0,
        description="parameters that serve text: the language model and lm_head (a wrapper's vision tower not counted)",
    )
    tokenizer_sha256: str = Field(
        description="fingerprint of the tokenizer's vocabulary (GGUF tokenizers differ across transformers versions)"
    )
    gguf_sha256: str | None = Field(
        description="sha256 of the GGUF file, when loaded from GGUF (all 64 hex digits "
        "since schema 1.12; its first 24 before)"
    )


class RunConfig(_Strict):
    """Everything that determines the per-item records; its hash keys the per-item log."""

    model: ModelInfo
    suite: str = Field(description="suite (dataset config) name")
    suite_version: str = Field(description="generator version of the suite's rows")
    seed: int | None = Field(description="suite seed (rows of a dataset carry their own)")
    dataset: str | None = Field(
        default=None, description="dataset repository or directory the rows came from; null = generated in memory"
    )
    dataset_revision: str | None = Field(default=None, description="dataset revision (tag or commit) asked for")
    config_content_hash: str | None = Field(
        default=None, description="sha256 over the config's row hashes (dataset runs)"
    )
    n_items: int = Field(ge=1, description="items (donor pairs) evaluated")
    readout: str = Field(
        pattern=r"^[a-z][a-z0-9_-]{0,39}$",
        description="how answers were read (SPEC 2.5): a registered readout (probe, short, trace, or a plugin's)",
    )
    serving: ServingMode = Field(description="serving mode (SPEC 2.3)")
    chunk_size: int | None = Field(description="prefill chunk size in tokens, null = one chunk")
    check: bool = Field(
        description="whether the faithfulness gates ran on every item (on the first `check_pairs` with that key)"
    )
    check_pairs: int | None = Field(
        default=None,
        ge=1,
        description="the gates ran on the suite's first this many "
        "items only (`--check-pairs`; schema 1.10); absent = every item when `check`",
    )
    policy: str | None = Field(
        default=None,
        description="serving policy that chose the kept rows (`--policy`, "
        "e.g. recent:64; schema 1.4); absent = the oracle, the suite's own served events",
    )
    source_mode: Literal["evicted"] | None = Field(
        default=None,
        description="under a policy (schema 1.9): "
        "evicted = the rows of every donor-dependent event were banned, "
        "the policy spent its budget on the rest; absent = natural, the "
        "policy decided",
    )
    kept_from: Literal["b"] | None = Field(
        default=None,
        description="under a policy (schema 1.9): b = both donor "
        "members were served member B's picks; absent = member A's",
    )
    template: Literal["para"] | None = Field(
        default=None,
        description="surface template (`--template`; schema "
        "1.6): para = the paper's untuned kv_frozen wording; absent = the "
        "suite's own",
    )
    rope_yarn: float | None = Field(
        default=None,
        gt=1,
        description="YaRN factor the model's RoPE was stretched "
        "by (`--rope-yarn`; schema 1.7): the paper's position stress; absent = as "
        "trained",
    )
    judge: ModelInfo | None = Field(
        default=None,
        description="the model that graded each free answer against the "
        "gold (`--judge`; schema 1.8): kv_harvest3's cross_judge prompt, 6 greedy "
        "tokens, yes = starts with y; absent = no judge",
    )

    @property
    def variants(self) -> list[str]:
        """How the run departs from the paper's protocol, as labels (empty: it follows it). Such a
        run measures a policy or is a robustness check: reported beside the contract, never in it."""
        return [
            *([f"policy {self.policy}"] if self.policy not in (None, "oracle") else []),
            *(["source evicted"] if self.source_mode else []),
            *(["kept from B"] if self.kept_from else []),
            *([f"template {self.template}"] if self.template else []),
            *([f"yarn ×{self.rope_yarn:g}"] if self.rope_yarn else []),
        ]


class Environment(_Strict):
    """Where it ran: package versions and hardware."""

    matbench: str = Field(description="matbench version")
    matbench_git: str | None = Field(description="git revision of the matbench checkout, when run from one")
    python: str
    torch: str
    transformers: str
    datasets: str | None = None
    platform: str
    cpu_count: int | None
    gpu: str | None = Field(description="GPU name, null on CPU")


class GateSummary(_Strict):
    """One faithfulness gate (SPEC 2.4) over the run's items."""

    checked: int = Field(ge=0, description="items on which the gate compared logits")
    passed: int = Field(ge=0, description="items that passed (skipped ones included)")
    skipped: int = Field(ge=0, description="items where the gate does not apply (e.g. B with sliding windows)")
    max_abs_diff: float | None = Field(description="worst |dlogit| among the compared items")


class ItemsInfo(_Strict):
    """The per-item log behind the metrics (evidence for every number)."""

    log: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$",
        description="per-item log file name, in the same directory (a bare name: no folders)",
    )
    sha256: str = Field(description="sha256 of the log file as it was when the results were written")
    n_records: int = Field(
        ge=1,
        description="records behind these metrics (= config.n_items); the log may hold more, from a larger earlier run under the same config",
    )
    n_from_log: int = Field(ge=0, description="records found in the log when this run started (a resumed run)")


class Rescored(_Strict):
    """Present when `matbench rescore` recomputed the metrics from the unchanged per-item log
    with a later evaluator (the records, config and environment are those of the original run)."""

    matbench: str = Field(description="matbench version that recomputed the metrics")
    matbench_git: str | None = Field(description="its git revision, when run from a checkout")
    from_schema_version: str = Field(description="schema_version of the file before rescoring")


class Resources(_Strict):
    """What the run used: where peak memory was measured, and how the pairs were batched. From
    schema 1.13 over every attempt behind the records (a run resumed after an interruption), each
    measured by its main process and kept beside the log in `<stem>.attempts.jsonl`; an
    invocation that logged no item is no attempt."""

    peak_memory_gib: float = Field(
        ge=0,
        description="peak accelerator memory allocated (GPU), or peak resident set "
        "size (CPU), of the main process: the largest over the attempts (schema 1.13; "
        "before, the last attempt's)",
    )
    memory_kind: Literal["gpu_allocated", "cpu_rss"] = Field(description="what peak_memory_gib measures")
    batch_pairs: int = Field(
        ge=1,
        description="donor pairs per batch at the start (given, or chosen from free "
        "accelerator memory); the largest over the attempts",
    )
    batch_pairs_chosen_from_memory: bool = Field(
        description="true when matbench chose batch_pairs from free accelerator memory"
    )
    processes: int = Field(
        ge=1,
        description="processes (GPUs) the pairs were sharded over; the most any attempt used "
        "(a merge: every shard's, summed)",
    )
    attempts: int | None = Field(
        default=None,
        ge=1,
        description="attempts behind the records: invocations that "
        "logged at least one item (schema 1.13; a merge: every shard's, summed); absent in "
        "older files",
    )


class ShardPart(_Strict):
    """One shard of a merged run: where it ran and what it spent."""

    shard: int = Field(ge=0, description="its index, 0-based (`--shard I/N`'s I)")
    shards: int = Field(ge=1, description="the number of shards (N)")
    environment: Environment = Field(description="the machine of its last attempt")
    n_items: int = Field(ge=0, description="items in its slice")
    device: str | None = Field(default=None, description="the device its model ran on (schema 1.15)")
    location: str | None = Field(
        default=None, description="where its model was read from (schema 1.15; the config holds shard 0's)"
    )
    wall_seconds: float | None = Field(default=None, ge=0, description="its attempts' wall time, summed")
    peak_memory_gib: float | None = Field(default=None, ge=0, description="its largest peak memory")
    attempts: int | None = Field(default=None, ge=1, description="its attempts that logged items")


class Merged(_Strict):
    """Present when `matbench merge` wrote the file from the shards of `matbench eval --shard I/N`
    (schema 1.14): the records, metrics and gates are those of one process over the same items;
    `wall_seconds` and `resources` are every shard's together and `environment` is shard 0's."""

    matbench: str = Field(description="matbench version that merged the shards")
    matbench_git: str | None = Field(description="its git revision, when run from a checkout")
    shards: list[ShardPart] = Field(description="every shard, in shard order")


class ResultsFile(_Strict):
    """The top level of `<suite>_<readout>_<serving>.json`."""

    schema_version: ReadableVersion = Field(description="version of this schema")
    config: RunConfig
    config_hash: str = Field(
        description="sha256 prefix of the config, without n_items, check and check_pairs, "
        "and (schema 1.15) without the model's and judge's device and location; it keys the per-item log, "
        "so a file rescored from an older schema keeps that schema's hash "
        "(rescored.from_schema_version)"
    )
    invocation: dict[str, Any] = Field(description="the command's arguments, as given")
    environment: Environment
    metrics: dict[str, Any] = Field(
        description="the suite evaluator's metrics; `headline` holds its summary; "
        "under a serving policy `selection` holds, per governed arm, what the policy "
        "kept and materialization split by it (schema 1.9)"
    )
    gates: dict[str, GateSummary] = Field(description="per faithfulness gate, over all items (empty without --check)")
    items: ItemsInfo
    wall_seconds: float = Field(
        ge=0,
        description="wall time of every attempt behind the records, summed (schema "
        "1.13; before, of the attempt that wrote the file); a merge: over every shard, "
        "machine time rather than the job's elapsed time",
    )
    rescored: Rescored | None = Field(
        default=None,
        description="set when the metrics were recomputed from the log by a later matbench (schema 1.1); absent otherwise",
    )
    resources: Resources | None = Field(
        default=None, description="peak memory and batching of the run (schema 1.2); absent in older files"
    )
    merged: Merged | None = Field(
        default=None,
        description="set when `matbench merge` joined the shards of a run "
        "split over machines (schema 1.14); absent otherwise",
    )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "<top level>"
    return f"field {where}: {err['msg']}"


def is_scorecard(payload: Any) -> bool:
    """Whether a JSON document is a scorecard (`matbench.results.scorecard`) rather than a run."""
    return isinstance(payload, dict) and "schema_version" not in payload and {"contract", "suites"} <= set(payload)


def validate_results(payload: Any, source: str = "results") -> ResultsFile:
    """The payload as a `ResultsFile`, or one line naming the first bad field."""
    if not isinstance(payload, dict):
        raise MatbenchError(f"{source}: a results file must be a JSON object")
    if is_scorecard(payload):
        raise MatbenchError(
            f"{source} is a memory-contract scorecard (matbench scorecard and eval --suite all write it), not a "
            "results file: pass the <suite>_<readout>_<serving>.json files beside it; matbench scorecard DIR "
            "rebuilds the scorecard"
        )
    version = payload.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise MatbenchError(
            f"{source}: schema_version {version!r} is not one of {', '.join(READABLE_VERSIONS)}; "
            "re-run matbench eval to write a current results file"
        )
    try:
        return ResultsFile.model_validate(json.loads(json.dumps(payload)))  # JSON types only, as on disk
    except ValidationError as exc:
        raise MatbenchError(f"{source} fails the results schema at {_first_error(exc)}") from None


def read_results(path: str | Path) -> ResultsFile:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MatbenchError(f"results file {path} not found") from None
    return parse_results(data, path)[1]


def parse_results(data: bytes, path: str | Path) -> tuple[dict[str, Any], ResultsFile]:
    """The JSON payload of a results file's bytes and its validated form; one line if either fails."""
    try:
        payload = json.loads(data)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise MatbenchError(f"results file {path} is not valid JSON ({exc})") from None
    return payload, validate_results(payload, f"results file {path}")


def schema_markdown() -> str:
    """The documentation of every key, generated from the models (docs/results-schema.md)."""
    lines = [f"# Results file schema {SCHEMA_VERSION}", "", __doc__.strip(), ""]
    for model in (
        ResultsFile,
        RunConfig,
        ModelInfo,
        Environment,
        GateSummary,
        ItemsInfo,
        Rescored,
        Resources,
        Merged,
        ShardPart,
    ):
        lines += [
            f"## {model.__name__}",
            "",
            (model.__doc__ or "").strip(),
            "",
            "| key | type | meaning |",
            "|---|---|---|",
        ]
        for name, field in model.model_fields.items():
            annotation = field.annotation
            kind = (
                annotation.__name__
                if isinstance(annotation, type) and not getattr(annotation, "__args__", None)
                else str(annotation).replace("typing.", "").replace(f"{__name__}.", "")
            )
            lines.append(f"| `{name}` | `{kind}` | {field.description or ''} |".replace(" | None`", " \\| None`"))
        lines.append("")
    return "\n".join(lines)
