"""The one adapter that calls the model.

`transformers` changed its forward keywords within 5.x (5.17: `past_key_values=` and
`cache_position=`; 5.24: `cache=` and no `cache_position`). Everything that calls a model goes
through `ModelRunner.forward`, which also builds the attention masks itself: matbench never lets
transformers infer a mask from the cache length, because after sparse serving the cache length
says nothing about positions. Masks are explicit 4-D tensors computed from per-key
*mask coordinates* (original positions for native serving, cache slots for compact serving),
per-key validity, and each layer's sliding window.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch
from transformers.cache_utils import DynamicLayer

from matbench.errors import MatbenchError
from matbench.kernels.attention import NAME as GROUPED_SDPA
from matbench.models.windows import layer_windows


def to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """`tensor` on `device`, without waiting for the GPU.

    A plain `.to("cuda")` from pageable host memory synchronizes the stream: the CPU then idles
    until every queued kernel has run and cannot prepare the next batch meanwhile. A pinned,
    non-blocking copy is queued like a kernel (PyTorch's caching host allocator keeps the pinned
    buffer until the copy has run)."""
    if tensor.device.type != "cpu" or torch.device(device).type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def narrow_mask(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """Attention pre-hook: narrow the layer's mask `[B, 1 or H, T, K]` to the keys each KV head
    keeps (`module._matbench_heads["valid"][layer]`, `[B, H_kv, K]`) while a per-head selection
    is served; otherwise leave the call as it is."""
    state = module._matbench_heads
    if state["valid"] is None:
        return None
    mask = kwargs.get("attention_mask")
    if mask is None:
        raise MatbenchError("a per-head selection needs an explicit mask (it was served without one)")
    valid = state["valid"][module.layer_idx]
    valid = valid.repeat_interleave(state["heads"] // valid.shape[1], dim=1)[:, :, None, : mask.shape[-1]]
    if mask.dtype == torch.bool:
        return args, {**kwargs, "attention_mask": mask & valid}
    # torch.full, not torch.tensor: no host-to-device copy (a decoding step may be captured in a CUDA graph)
    lowest = torch.full((), torch.finfo(mask.dtype).min, dtype=mask.dtype, device=mask.device)
    return args, {**kwargs, "attention_mask": torch.where(valid, mask, lowest)}


def new_cache() -> Any:
    """An empty cache that keeps every row of every layer.

    Built without the model config on purpose: a config-built DynamicCache truncates
    sliding-window layers to the window, and the global prefill needs every row (SPEC 4).
    """
    from transformers import DynamicCache

    return DynamicCache()


def cache_from_rows(keys: list[torch.Tensor], values: list[torch.Tensor], length: int | None = None) -> Any:
    """A fresh cache holding the given per-layer rows `[batch, kv_heads, T, head_dim]`.

    With `length`, the tensors are buffers whose first `length` slots are the rows and the rest
    room for the tokens appended later (a query, decoded tokens): the cache then writes them in
    place (`ReservedLayer`) instead of concatenating a new copy of every layer at every step."""
    cache = new_cache()
    if length is not None:
        cache.layers.extend(ReservedLayer.holding(k, v, length) for k, v in zip(keys, values))
        return cache
    for layer, (k, v) in enumerate(zip(keys, values)):
        cache.update(k, v, layer)
    return cache


class ReservedLayer(DynamicLayer):
    """A `DynamicLayer` whose rows sit at the front of a preallocated buffer `[B, H, room, D]`.

    `DynamicLayer.update` concatenates: appending a 27-token query to a served cache copies the
    whole cache in every layer (measured: the largest single cost of CPU serving), and each
    decoding step does it again. Here appended tokens are written into the room after the rows;
    `keys`/`values` stay views of the first `length` slots, so everything transformers reads
    (sequence length, mask sizes) is as for a `DynamicLayer`. Out of room, it concatenates."""

    # `holding` sets them all: the rows (views of the buffers) and the preallocated buffers
    keys: torch.Tensor
    values: torch.Tensor
    room: tuple[torch.Tensor, torch.Tensor]

    @classmethod
    def holding(cls, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int) -> ReservedLayer:
        layer = cls()
        layer.lazy_initialization(key_buffer, value_buffer)  # dtype, device, is_initialized
        layer.room = (key_buffer, value_buffer)
        layer.keys, layer.values = key_buffer[:, :, :length], value_buffer[:, :, :length]
        return layer

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start, new = self.keys.shape[-2], key_states.shape[-2]
        key_buffer, value_buffer = self.room
        if start + new > key_buffer.shape[-2]:
            return super().update(key_states, value_states, *args, **kwargs)
        key_buffer[:, :, start : start + new] = key_states
        value_buffer[:, :, start : start + new] = value_states
        self.keys, self.values = key_buffer[:, :, : start + new], value_buffer[:, :, : start + new]
        return self.keys, self.values


def cache_rows(cache: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    return [layer.keys for layer in cache.layers], [layer.values for layer in cache.layers]


def cache_keyword(model: Any) -> str:
    """The forward keyword that takes the KV cache: `cache` (transformers 5.x after 5.17, whose
    `past_key_values` goes in 5.40) or `past_key_values` (5.17)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@dataclass
class ModelRunner:
    """Calls `model` with explicit position ids and explicit masks, whatever the transformers version."""

    model: Any
    text_config: Any
    # Greedy decoding steps replayed from CUDA graphs (`matbench.engine.decode`), as `load_model`
    # resolved `--decode-graphs` (`models.loading.resolve_decode_graphs`).
    decode_graphs: bool = False

    def __post_init__(self) -> None:
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = cache_keyword(self.model)
        self._pass_cache_position = "cache_position" in params
        self._pass_logits_to_keep = "logits_to_keep" in params
        self.windows = layer_windows(self.text_config)
        layer_types = getattr(self.text_config, "layer_types", None) or ()
        # Models with mixed layer types take a dict {layer_type: mask}; the others one tensor.
        self._mask_by_type = "sliding_attention" in set(layer_types)
        impl = getattr(self.model.config, "_attn_implementation", None) or "eager"
        self._bool_masks = impl in ("sdpa", GROUPED_SDPA)
        # Whether a causal mask after a past is left to the attention kernel: `sdpa_grouped` on a
        # GPU, whose flash kernel takes it (`kernels.attention`). Elsewhere it would be built in
        # full as the explicit one is, so the CPU keeps its batches and its numbers.
        self.causal_past = impl == GROUPED_SDPA and not any(self.windows) and self.device.type == "cuda"
        if impl.startswith("flash"):
            raise MatbenchError(
                f"attn_implementation {impl!r} takes no arbitrary masks; sparse serving needs {GROUPED_SDPA!r}, 'sdpa' or 'eager'"
            )

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def head_shape(self) -> tuple[int, int]:
        """(layers, KV heads): the shape of a per-layer, per-KV-head selection."""
        config = self.text_config
        return config.num_hidden_layers, config.num_key_value_heads or config.num_attention_heads

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    def prefill_chunk(self, rows: int, width: int, past: int) -> int | None:
        """Queries per forward for a prefill too long to attend at once on a GPU
        (`memory.prefill_chunk`); None on the CPU, whose runs keep one forward per prefill."""
        if self.device.type != "cuda":
            return None
        from matbench.engine.memory import prefill_chunk

        impl = getattr(self.model.config, "_attn_implementation", None) or "eager"
        return prefill_chunk(
            rows,
            width,
            past,
            self.text_config.num_attention_heads,
            torch.finfo(self.dtype).bits // 8,
            eager=impl == "eager",
            masks=2 if self._mask_by_type else 1,
        )

    def build_masks(
        self, query_coords: torch.Tensor, key_coords: torch.Tensor, key_valid: torch.Tensor
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """Masks `[B, 1, T, K]`: key k is visible to query q iff it is valid,
        `key_coords[k] <= query_coords[q]`, and (sliding layers) `query - key < window`.

        Boolean (True = visible) for SDPA, additive float (0 / dtype min) for eager: the formats
        transformers itself hands each kernel. (Known open issue: on an H200 with torch 2.11 and
        CUDA SDPA, Gemma 3 270M fails gate A on 1 item in 64, |dlogit| 2.45, with either mask
        format; the same item passes with a one-forward prefill, so the suspect is SDPA on the
        suffix prefill after the shared prefix (q_len < kv_len, explicit mask). `sdpa_grouped`,
        the default, passes every gate on that model's 64 pairs
        (benchmarks/gpu-gates-gemma3-270m-real-sdpa-grouped.json); `--check` catches it.)
        """
        q = query_coords[:, None, :, None]
        k = key_coords[:, None, None, :]
        causal = (k <= q) & key_valid[:, None, None, :].bool()
        neg = torch.finfo(self.dtype).min

        def additive(allowed: torch.Tensor) -> torch.Tensor:
            if self._bool_masks:
                return allowed
            zero = torch.zeros((), dtype=self.dtype, device=allowed.device)
            return torch.where(allowed, zero, torch.full((), neg, dtype=self.dtype, device=allowed.device))

        full = additive(causal)
        windows = {w for w in self.windows if w is not None}
        if not windows:
            return full
        if len(windows) > 1:
            raise MatbenchError("models with several different sliding windows are not supported yet")
        window = windows.pop()
        sliding = additive(causal & ((q - k) < window))
        if self._mask_by_type:
            return {"full_attention": full, "sliding_attention": sliding}
        return sliding

    def attention_modules(self, purpose: str) -> list[Any]:
        """The language model's attention module of each layer, in layer order (`get_decoder`: a
        multimodal wrapper's vision tower has attention layers too); `purpose` names what needs
        them in the one-line error for an architecture without one per layer."""
        decoder = self.model.get_decoder() if hasattr(self.model, "get_decoder") else self.model
        layers = [m for m in decoder.modules() if type(m).__name__.endswith("Attention") and hasattr(m, "layer_idx")]
        if len(layers) != self.text_config.num_hidden_layers:
            raise MatbenchError(
                f"{purpose} needs one attention module per layer; found {len(layers)} for "
                f"{self.text_config.num_hidden_layers} layers in this architecture"
            )
        return sorted(layers, key=lambda m: m.layer_idx)

    def _heads_state(self) -> dict[str, Any]:
        """The per-head validity every attention layer reads, hooked into the model once (by
        whichever runner first serves a per-head selection): transformers hands one mask to all
        layers of a type, so a per-layer mask has to be set per module. Only the language model's
        (`get_decoder`): a multimodal wrapper's vision tower has attention layers too."""
        state = getattr(self.model, "_matbench_heads", None)
        if state is None:
            state = {"valid": None, "heads": self.text_config.num_attention_heads}
            for module in self.attention_modules("a per-head serving policy"):
                module._matbench_heads = state
                module.register_forward_pre_hook(lambda m, a, k: narrow_mask(m, a, k), with_kwargs=True)
            self.model._matbench_heads = state
        return state

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        cache: Any,
        *,
        query_coords: torch.Tensor,
        key_coords: torch.Tensor,
        key_valid: torch.Tensor,
        logits_to_keep: int = 1,
        causal: bool = False,
        head_valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One forward step appending `input_ids` `[B, T]` to `cache` (in place).

        `key_coords`/`key_valid` are `[B, K]` with K = cache length + T (the new tokens included).
        `causal=True` is the caller's word that in every row the cache's rows (if any) are all
        valid, the new valid tokens come next and the coordinates strictly increase over both:
        the explicit mask is then the plain causal one over cache slots for every valid token (a
        padded key sits after them all), so on a model without sliding windows it is left to the
        attention kernel (causal kernels skip the blocks above the diagonal). After a past this
        needs `causal_past` (`sdpa_grouped`). Sliding windows are counted in coordinates, which
        transformers' own masks would count in slots, so those models always get the explicit masks.
        `head_valid` `[L, B, H_kv, K]` (a per-layer, per-KV-head selection) further hides, in
        layer l, from the query heads of KV head h every key whose entry is False.
        Returns logits `[B, logits_to_keep or T, vocab]` in float32.
        """
        past = cache.get_seq_length()
        batch, length = input_ids.shape
        if key_coords.shape != (batch, past + length) or key_valid.shape != key_coords.shape:
            raise ValueError(f"key_coords {tuple(key_coords.shape)} must be {(batch, past + length)}")
        if position_ids.shape != input_ids.shape or query_coords.shape != input_ids.shape:
            raise ValueError("position_ids and query_coords must have the shape of input_ids")
        device = self.device
        if causal and past and not self.causal_past:
            raise ValueError("causal=True after a past needs causal_past (sdpa_grouped on a GPU, no sliding windows)")
        if causal and not any(self.windows):
            # No mask: transformers makes the causal one (none at all for SDPA kernels). It reads
            # position gaps as packed sequences only when called without a cache, never here; a
            # 2-D all-ones mask would do too but costs a device sync (transformers checks it).
            masks: Any = None
        else:
            # Built on the device: [B, 1, T, K] can be hundreds of MB for a batched prefill.
            masks = self.build_masks(
                to_device(query_coords, device), to_device(key_coords, device), to_device(key_valid, device)
            )
        if head_valid is not None and causal:
            raise ValueError("head_valid needs the explicit masks (causal=False)")
        logits = self._call(
            to_device(input_ids, device),
            to_device(position_ids, device),
            masks,
            cache,
            torch.arange(past, past + length, device=device),
            logits_to_keep,
            None if head_valid is None else to_device(head_valid, device),
        )
        return logits.float()

    def step_forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        cache: Any,
        *,
        query_coords: torch.Tensor,
        key_coords: torch.Tensor,
        key_valid: torch.Tensor,
        head_valid: torch.Tensor | None,
        cache_position: torch.Tensor,
    ) -> torch.Tensor:
        """One decoding step over a fixed-room cache (`matbench.engine.decode.SlotLayer`): every
        argument already on the device, `key_coords`/`key_valid` `[B, R]` covering the whole room,
        nothing read back to the host, so that the step can be captured in a CUDA graph. Returns
        the last token's logits `[B, vocab]` in the model's dtype."""
        masks = self.build_masks(query_coords, key_coords, key_valid)
        return self._call(input_ids, position_ids, masks, cache, cache_position, 1, head_valid)[:, -1]

    def _call(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        masks: Any,
        cache: Any,
        cache_position: torch.Tensor,
        logits_to_keep: int,
        head_valid: torch.Tensor | None,
    ) -> torch.Tensor:
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "position_ids": position_ids,
            "attention_mask": masks,
            self._cache_kw: cache,
            "use_cache": True,
        }
        if self._pass_cache_position:
            kwargs["cache_position"] = cache_position
        if self._pass_logits_to_keep:
            kwargs["logits_to_keep"] = logits_to_keep
        state = None
        if head_valid is not None:
            state = self._heads_state()
            state["valid"] = head_valid
        try:
            out = self.model(**kwargs)
        finally:
            if state is not None:
                state["valid"] = None
        logits = out.logits
        if logits_to_keep and logits.shape[1] != logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return logits

    @torch.inference_mode()
    def plain_forward(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, chunk_size: int | None = None
    ) -> torch.Tensor:
        """Reference forward with the model's own masks (from a 2-D all-ones mask, which also
        stops transformers from reading a position gap as a packed-sequence boundary).
        Used by the faithfulness gates only. Returns last-token logits `[B, vocab]`.

        No cache, unless `chunk_size` is shorter than the sequence: then the reference runs in
        chunks through the cache transformers builds from the model's config (what `generate`
        uses; sliding layers keep their window) with the model's own masks, so that a long dialog
        needs no `[heads, T, T]` score matrix (9 heads x 25k^2 floats = 22 GB under eager
        attention)."""
        length = input_ids.shape[1]
        chunk_size = chunk_size or self.prefill_chunk(input_ids.shape[0], length, 0)
        if not chunk_size or length <= chunk_size:
            return self._plain_chunk(input_ids, position_ids, 0, length, None)
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for start in range(0, length, chunk_size):
            logits = self._plain_chunk(input_ids, position_ids, start, min(start + chunk_size, length), cache)
        return logits

    def plain_greedy(self, ids: list[int], max_new_tokens: int, stop_ids: set[int]) -> list[int]:
        """Greedy continuation of one plain prompt through the model's own cache and masks (the
        paper's `_greedy(DynamicCache(), 0, ids, n)`): a judge's verdict, nothing served sparsely."""
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        tokens = torch.tensor([ids], dtype=torch.long)
        out: list[int] = []
        start = 0
        for _ in range(max_new_tokens):
            end = tokens.shape[1]
            positions = torch.arange(end, dtype=torch.long)[None]
            token = int(self._plain_chunk(tokens, positions, start, end, cache).argmax(-1))
            if token in stop_ids:
                break
            out.append(token)
            tokens, start = torch.cat([tokens, torch.tensor([[token]])], dim=1), end
        return out

    def _plain_chunk(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, start: int, end: int, cache: Any
    ) -> torch.Tensor:
        kwargs: dict[str, Any] = {
            "input_ids": input_ids[:, start:end].to(self.device),
            "position_ids": position_ids[:, start:end].to(self.device),
            "attention_mask": torch.ones(input_ids.shape[0], end, dtype=torch.long, device=self.device),
            "use_cache": cache is not None,
        }
        if cache is not None:
            kwargs[self._cache_kw] = cache
            if self._pass_cache_position:
                kwargs["cache_position"] = torch.arange(start, end, device=self.device)
        if self._pass_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        return self.model(**kwargs).logits[:, -1].float()
