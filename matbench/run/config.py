"""What one `matbench eval` asks for, as a frozen value: every option, parsed, before anything
loads (torch-free, so the CLI can check it before importing the engine)."""

from __future__ import annotations

from dataclasses import dataclass


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
    decode_graphs: str = "auto"  # matbench.engine.decode: auto = on a model on one CUDA device
    chunk_size: int | None = None
    batch_pairs: int | None = None  # donor pairs served and decoded together (default: from free GPU memory, 2 on CPU)
    memory_fraction: float | None = None  # this process's cap on its GPU's memory (several runs on one GPU)
    locomo: str | None = None  # the user's LoCoMo copy (harvest suite)
    realtalk: str | None = None  # the user's REALTALK folder (harvest suite)
    trust_remote_code: bool = False
    check: bool = False
    check_pairs: int | None = None  # with check: gate only the suite's first N pairs (None: every pair)
    fresh: bool = False
    progress: bool = True
    policies: tuple[str, ...] = ("oracle",)  # serving policy specs (matbench.engine.policies): oracle, snapkv@0.5, ...
    budgets: tuple[
        str, ...
    ] = ()  # budgets of the scoring policies named without @BUDGET (0.5: half removed; 256 tokens)
    source_modes: tuple[str, ...] = ("natural",)  # natural and/or evicted (the source's rows never kept)
    kept_from: tuple[str, ...] = ("a",)  # whose picks both donor members are served: a and/or b
    template: str = "orig"  # surface template (data_gen/paraphrase.py): orig, or kv_frozen's untuned para
    rope_yarn: float | None = None  # YaRN factor stretching the model's RoPE (matbench.models.rope); None = as trained
    judge: str | None = None  # a local causal LM grading free answers (matbench.run.judge); None = no judge
