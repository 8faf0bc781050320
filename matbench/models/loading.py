"""Load a checkpoint (`sources` says from where, `servable` whether it can be served sparsely,
`gguf` converts GGUF files) with the device, dtype and attention defaults, into a `LoadedModel`.

Every refusal is a one-line `MatbenchError`: unknown model, directory without weights, a model
that is not a causal LM, a model without token-addressable KV (SSM / linear-attention hybrids),
an unreadable GGUF file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError, first_line
from matbench.models.gguf import (
    UPGRADE,
    check_subword_tokenizer,
    convert_gguf,
    gguf_cache_dir,
    gguf_name,
    gguf_sha256,
    one_gguf_parse,
    require_gguf,
)
from matbench.models.servable import check_servable
from matbench.models.sources import ModelSource, require_weights, resolve_source, unknown_model_message


def load_config(source: ModelSource, trust_remote_code: bool = False) -> Any:
    from transformers import AutoConfig

    if source.gguf_file:
        converted = gguf_cache_dir(source)  # a GGUF converted before: its config.json, not a 5 s GGUF parse
        if (converted / "config.json").is_file():
            return AutoConfig.from_pretrained(converted, trust_remote_code=trust_remote_code)
        require_gguf(source)
    try:
        return AutoConfig.from_pretrained(
            source.location,
            gguf_file=source.gguf_file,
            revision=source.revision,
            trust_remote_code=trust_remote_code,
        )
    except Exception as exc:  # transformers raises OSError/ValueError/struct errors alike
        if source.gguf_file:
            raise MatbenchError(
                f"could not read GGUF file {source.gguf_file!r} (truncated or corrupt?): {first_line(exc)}"
            ) from None
        if "trust_remote_code" in str(exc):
            raise MatbenchError(
                f"model {source.name!r} ships custom code; pass --trust-remote-code if you trust it"
            ) from None
        if source.is_local:
            raise MatbenchError(f"could not read the config of {source.name!r}: {first_line(exc)}") from None
        raise MatbenchError(unknown_model_message(source.name, exc)) from None


@dataclass
class LoadedModel:
    """A causal LM ready for the engine. `model` may be a multimodal wrapper: its forward takes
    text-only inputs and `text_config` is the language model's config."""

    model: Any
    tokenizer: Any
    source: ModelSource
    dtype: str
    device: str
    fused_kernels: bool = False  # RMSNorm and MLP forwards compiled (matbench.fused)
    decode_graphs: bool = False  # greedy decoding steps replayed from CUDA graphs (matbench.engine.decode)

    @property
    def text_config(self) -> Any:
        return self.model.config.get_text_config(decoder=True)

    @property
    def attn_implementation(self) -> str:
        return getattr(self.model.config, "_attn_implementation", None) or "eager"

    @property
    def has_sliding_layers(self) -> bool:
        from matbench.models.windows import layer_windows

        return any(w is not None for w in layer_windows(self.text_config))

    def describe(self) -> dict[str, Any]:
        return {
            "model": model_name(self.source),
            "location": self.source.location,
            "gguf_file": self.source.gguf_file,
            "revision": self.source.revision,
            "commit_hash": getattr(self.model.config, "_commit_hash", None),
            "model_type": self.text_config.model_type,
            "dtype": self.dtype,
            "device": self.device,
            "attn_implementation": self.attn_implementation,
            # Only when on (the arithmetic is the same; absent keeps earlier runs' config hashes).
            **({"fused_kernels": True} if self.fused_kernels else {}),
            **({"decode_graphs": True} if self.decode_graphs else {}),
            "n_parameters": text_parameters(self.model),
            # GGUF tokenizers are rebuilt by transformers, differently across versions (5.17 and
            # 5.24 split Gemma's "ONLINE" differently): the vocabulary fingerprint pins it.
            "tokenizer_sha256": tokenizer_fingerprint(self.tokenizer),
            "gguf_sha256": gguf_sha256(self.source) if self.source.gguf_file else None,
        }


def model_name(source: ModelSource) -> str:
    """What a results file calls the model: the alias, Hub id or directory asked for; for a local
    .gguf file its `general.name` (the leaderboard groups by this, and a path names a machine,
    not a model), else the file's name. `location` and `gguf_file` keep the path."""
    if source.gguf_file and source.name.endswith(".gguf"):
        return gguf_name(Path(source.location) / source.gguf_file) or Path(source.gguf_file).stem
    return source.name


def tokenizer_fingerprint(tokenizer: Any) -> str:
    vocab = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    return hashlib.sha256(vocab.encode()).hexdigest()[:16]


# float64 is a reference precision (gate forensics: rounding shrinks with it, a fault keeps its
# size); transformers still rounds RMSNorm and the eager softmax through float32, and matbench
# reads logits in float32.
_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "float64": "float64",
    "fp64": "float64",
}
DTYPES = tuple(dict.fromkeys(_DTYPES.values()))  # the names --dtype resolves to, for help and errors


def resolve_device(device: str | None) -> str:
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MatbenchError(f"--device {device} asked for a GPU but torch sees none; use --device cpu")
    return device


ATTN_IMPLEMENTATIONS = ("sdpa_grouped", "sdpa", "eager")  # sdpa_grouped: matbench.attention.NAME


def default_attn(config: Any) -> str:
    """`sdpa_grouped` (SDPA without transformers' per-head K/V copies; flash with lower-right
    causality where a prefill's past is contiguous), eager for logit soft-capping (Gemma 2, which
    SDPA cannot apply). On GPUs, in float32 with real weights, it passes every gate and gives
    eager's outcome classes (benchmarks/gpu-default-attention-smollm2.json,
    gpu-default-attention-qwen2.5-coder.json; Gemma 3: gpu-gates-gemma3-270m-real-sdpa-grouped.json);
    `--attn-implementation eager` stays available."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    if getattr(text, "attn_logit_softcapping", None):
        return "eager"
    return "sdpa_grouped"


def check_device_map(device_map: str, device: str) -> str:
    """`--device-map` takes `auto`, which spreads one model over the visible GPUs."""
    if device_map != "auto" or not device.startswith("cuda"):
        raise MatbenchError("--device-map takes auto, and spreads a model over GPUs: use it with --device cuda")
    return device_map


def resolve_attn(attn_implementation: str) -> str:
    """Check an attention kernel name; `sdpa_grouped` (matbench.attention) is registered with
    transformers on first use."""
    if attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise MatbenchError(
            f"unknown attention implementation {attn_implementation!r}; use one of {', '.join(ATTN_IMPLEMENTATIONS)}"
        )
    if attn_implementation == "sdpa_grouped":
        from matbench.kernels.attention import register

        register()
    return attn_implementation


def resolve_dtype(dtype: str | None, device: str) -> str:
    if dtype in (None, "auto"):
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _DTYPES:
        raise MatbenchError(f"unknown --dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return _DTYPES[dtype]


def text_parameters(model: Any) -> int:
    """Parameters that serve text: the language model and its output head, a tied weight once. A
    causal LM has nothing else; a multimodal wrapper's vision tower and projector sit idle for text
    inputs and are not counted (Gemma 3 4B's would add some 400M)."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if decoder is None:
        return sum(p.numel() for p in model.parameters())
    head = model.get_output_embeddings()
    counted = {id(p): p.numel() for module in (decoder, head) if module is not None for p in module.parameters()}
    return sum(counted.values())


def auto_model_class(config: Any) -> Any:
    """`AutoModelForCausalLM`, or `AutoModelForImageTextToText` for a multimodal wrapper that is
    not in the causal-LM mapping (Ministral-3's `Mistral3ForConditionalGeneration`; the paper loads
    it the same way). Either is served through its text inputs: with no pixels the wrapper runs its
    language model and lm_head alone (`LoadedModel.text_config` is the language model's config)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    model_type = getattr(config, "model_type", None)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return AutoModelForImageTextToText
    return AutoModelForCausalLM


def load_model(
    name: str,
    *,
    revision: str | None = None,
    dtype: str | None = None,
    device: str | None = None,
    attn_implementation: str | None = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    fused_kernels: str = "auto",
    rope_yarn: float | None = None,
    decode_graphs: str = "auto",
    progress: bool = True,
) -> LoadedModel:
    """`device_map="auto"` spreads the layers of a model too large for one GPU over every visible
    GPU (accelerate); inputs then go to the device of the first layer. `rope_yarn` stretches the
    model's RoPE by YaRN with that factor (`matbench.models.rope`). `progress`: False silences
    the one bar transformers shows regardless (a GGUF file's dequantisation)."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    from matbench.kernels import fused

    # matbench shows its own progress; transformers' loading bars and advice would bury it.
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    source = resolve_source(name, revision)
    with one_gguf_parse(source):  # the config and the conversion read the GGUF file once
        config = load_config(source, trust_remote_code)
        check_servable(config, name)
        require_weights(source)
        device = resolve_device(device)
        dtype = resolve_dtype(dtype, device)
        fuse = fused.resolve(fused_kernels, device)  # a bad setting fails before the model loads
        graphs = resolve_decode_graphs(decode_graphs, device, device_map)
        location, gguf_file = source.location, source.gguf_file
        if gguf_file:
            location, gguf_file = str(convert_gguf(source, trust_remote_code, progress)), None
    kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype), "trust_remote_code": trust_remote_code}
    if rope_yarn is not None:
        from matbench.models.rope import with_yarn

        kwargs["config"] = with_yarn(config, rope_yarn, name)
    if device_map:
        kwargs["device_map"] = check_device_map(device_map, device)
    chosen = attn_implementation or default_attn(config)
    kwargs["attn_implementation"] = resolve_attn(chosen)
    auto = auto_model_class(config)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            location, revision=source.revision, trust_remote_code=trust_remote_code
        )
        if source.gguf_file:  # a copy converted earlier, perhaps by a release that saved it wrongly
            check_subword_tokenizer(
                tokenizer,
                f"the tokenizer in {location} (converted from {source.gguf_file})",
                f"run `matbench cache clear` and load the model again (if it comes back so, {UPGRADE})",
            )
        try:
            model = auto.from_pretrained(location, revision=source.revision, **kwargs)
        except ValueError as exc:
            if attn_implementation or "attn" not in str(exc).lower():  # asked for by name, or another fault
                raise
            kwargs.pop("attn_implementation")  # an architecture without custom attention: its own default
            model = auto.from_pretrained(location, revision=source.revision, **kwargs)
    except (OSError, ValueError, ImportError) as exc:
        raise MatbenchError(f"could not load model {name!r}: {first_line(exc, 240)}") from None
    if device_map:
        model.eval()
        device = str(next(model.parameters()).device)  # where the inputs go
    else:
        model.to(device).eval()
    loaded = with_fused_kernels(LoadedModel(model, tokenizer, source, dtype, device), fuse)
    loaded.decode_graphs = graphs
    return loaded


def resolve_decode_graphs(setting: str, device: str, device_map: str | None = None) -> bool:
    """`--decode-graphs auto|on|off` -> whether greedy decoding replays its steps from CUDA graphs
    (`matbench.engine.decode`; auto: on a CUDA device, the model on that one device)."""
    if setting not in ("auto", "on", "off"):
        raise MatbenchError(f"unknown --decode-graphs {setting!r}; use auto, on or off")
    possible = str(device).startswith("cuda") and not device_map
    if setting == "on" and not possible:
        raise MatbenchError(
            f"--decode-graphs on needs the model on one CUDA device (device {device!r}"
            f"{', --device-map ' + device_map if device_map else ''}); use auto or off"
        )
    return setting == "on" or (setting == "auto" and possible)


def load_tokenizer(name: str, *, revision: str | None = None, trust_remote_code: bool = False) -> Any:
    """The tokenizer `load_model` gives `name`, without loading any weights (`matbench show`). For
    a GGUF file: the one of its dequantised copy when there is one (what `load_model` reads), else
    the one transformers rebuilds from the GGUF file itself (what `convert_gguf` saves there)."""
    import transformers
    from transformers import AutoTokenizer

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    source = resolve_source(name, revision)
    location, kwargs = source.location, {"revision": source.revision}
    if source.gguf_file:
        converted = gguf_cache_dir(source)
        if (converted / "config.json").is_file():
            location = str(converted)
        else:
            kwargs["gguf_file"] = source.gguf_file
    try:
        return AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code, **kwargs)
    except Exception as exc:  # transformers raises OSError/ValueError/struct errors alike
        if source.gguf_file or source.is_local:
            raise MatbenchError(f"could not load the tokenizer of {name!r}: {first_line(exc, 240)}") from None
        raise MatbenchError(unknown_model_message(name, exc)) from None


def with_fused_kernels(loaded: LoadedModel, fuse: bool) -> LoadedModel:
    """`loaded` with its RMSNorm and MLP forwards compiled when `fuse` (`fused.resolve`, checked
    before the model is loaded)."""
    from matbench.kernels import fused

    if fuse:
        fused.fuse(loaded.model)
        loaded.fused_kernels = True
    return loaded
