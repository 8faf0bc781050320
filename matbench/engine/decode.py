"""Greedy decoding of a served batch: the short and trace readouts' continuation (SPEC 2.5).

Two loops, one result:

- `eager_decode`: one `ModelRunner.forward` per step, each appending the step's token to the cache
  and rebuilding the masks on the host's orders. Used on the CPU (and wherever a graph cannot be).
- `static_decode`: every step has the same shapes: the cache's room (`ReservedLayer`) is read whole,
  the next token is written at a slot held in a device tensor, unwritten slots are masked, and the
  chosen token, its position and coordinate never leave the device. So the step can be captured
  once per batch in a CUDA graph and replayed (`graphs=True`): a decoding step of an 8B model over
  256 served rows spends ~95 ms launching ~400 kernels from Python where the GPU needs ~15 ms
  (`../shared/reviews/serving-profile.md`); a replay launches them all at once. One host transfer at
  the end (and one stop check every `CHECK_EVERY` steps) replaces a sync per step.

Masked slots get exactly zero attention weight, so reading the whole room is the same attention
as reading the written rows; only the kernel's blocking over keys, hence float rounding, may
differ (`tests/test_decode.py` holds the two loops to the same tokens).
"""

from __future__ import annotations

import warnings

import torch
from transformers.cache_utils import DynamicLayer

from matbench.engine.runtime import ModelRunner, ReservedLayer, new_cache

CHECK_EVERY = 4  # steps between the host's looks at whether every row has stopped


def greedy_decode(
    runner: ModelRunner, batch, first_logits: torch.Tensor, max_new_tokens: int, stop_ids: set[int]
) -> list[list[int]]:
    """Greedy continuation of a served batch (`serving.ServedBatch`) from the query's last logits
    `[B, vocab]`: up to `max_new_tokens` per row, each row cut before its first stop token. Static
    steps replayed from a CUDA graph where the runner decodes with graphs
    (`ModelRunner.decode_graphs`: by default a model on one CUDA device), the eager loop elsewhere."""
    if runner.decode_graphs:
        out = static_decode(runner, batch, first_logits, max_new_tokens, stop_ids, graphs=first_logits.is_cuda)
        if out is not None:
            return out
    return eager_decode(runner, batch, first_logits, max_new_tokens, stop_ids)


def eager_decode(
    runner: ModelRunner, batch, first_logits: torch.Tensor, max_new_tokens: int, stop_ids: set[int]
) -> list[list[int]]:
    """Greedy continuation; every step continues each row's position and slot by one."""
    rows = first_logits.shape[0]
    out: list[list[int]] = [[] for _ in range(rows)]
    done = [False] * rows
    logits = first_logits
    ones = torch.ones(rows, dtype=torch.long)
    for step in range(max_new_tokens):
        token = logits.argmax(-1)
        for b, t in enumerate(token.tolist()):
            if not done[b]:
                if t in stop_ids:
                    done[b] = True
                else:
                    out[b].append(t)
        if all(done) or step == max_new_tokens - 1:
            break
        logits = batch.append(runner, token[:, None], ones)
    return out


class SlotLayer(DynamicLayer):
    """A cache layer of fixed room `[B, H, R, D]` that writes each new token at slot `write_at`
    (a one-element device tensor the decoding step advances) and hands attention the whole room."""

    keys: torch.Tensor  # the room, set on construction
    values: torch.Tensor

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, write_at: torch.Tensor, length: int):
        super().__init__()
        self.lazy_initialization(keys, values)
        self.keys, self.values, self.write_at, self.length = keys, values, write_at, length

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.keys.index_copy_(2, self.write_at, key_states)
        self.values.index_copy_(2, self.write_at, value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:  # the rows written before decoding (read by no mask: ours are explicit)
        return self.length


def static_decode(
    runner: ModelRunner,
    batch,
    first_logits: torch.Tensor,
    max_new_tokens: int,
    stop_ids: set[int],
    graphs: bool = False,
) -> list[list[int]] | None:
    """`eager_decode`'s tokens through fixed-shape steps, replayed from a CUDA graph when `graphs`.
    None when the served cache has no room for the steps (a layer outgrew its buffer)."""
    layers = batch.cache.layers
    rows, length = batch.key_coords.shape
    steps = max_new_tokens - 1  # the first token comes from the query's logits
    if not all(isinstance(layer, ReservedLayer) and layer.keys.shape[-2] == length for layer in layers):
        return None
    room = min(layer.room[0].shape[-2] for layer in layers)
    if length + steps > room:
        return None
    device = first_logits.device
    key_coords = torch.zeros(rows, room, dtype=torch.long, device=device)
    key_coords[:, :length] = batch.key_coords
    key_valid = torch.zeros(rows, room, dtype=torch.bool, device=device)
    key_valid[:, :length] = batch.key_valid
    head_valid = None
    if batch.head_valid is not None:  # appended tokens are kept by every head
        head_valid = batch.head_valid.new_ones(*batch.head_valid.shape[:3], room)
        head_valid[..., :length] = batch.head_valid
    for layer in layers:  # unwritten room is uninitialised memory: a NaN there would reach the
        for buffer in layer.room:  # output through a masked key (NaN x 0 weight is NaN)
            buffer[:, :, length:room].zero_()
    write_at = torch.tensor([length], device=device)
    cache = new_cache()
    cache.layers.extend(
        SlotLayer(layer.room[0][:, :, :room], layer.room[1][:, :, :room], write_at, length) for layer in layers
    )
    tokens = torch.zeros(rows, max_new_tokens, dtype=torch.long, device=device)
    tokens[:, 0] = first_logits.argmax(-1)
    column = torch.ones(1, dtype=torch.long, device=device)  # where the next step's token goes
    position, coord = batch.next_position.clone(), batch.next_coord.clone()
    stops = torch.tensor(sorted(stop_ids) or [-1], device=device)
    stopped = torch.isin(tokens[:, 0], stops)

    def step() -> None:
        token = tokens.index_select(1, column - 1)  # [B, 1]: the last chosen token
        key_coords.index_copy_(1, write_at, coord[:, None])
        key_valid.index_fill_(1, write_at, True)
        logits = runner.step_forward(
            token,
            position[:, None],
            cache,
            query_coords=coord[:, None],
            key_coords=key_coords,
            key_valid=key_valid,
            head_valid=head_valid,
            cache_position=write_at,
        )
        chosen = logits.argmax(-1)
        tokens.index_copy_(1, column, chosen[:, None])
        stopped.logical_or_(torch.isin(chosen, stops))
        for counter in (position, coord, write_at, column):
            counter.add_(1)

    done = 0
    with torch.inference_mode():
        if graphs and steps >= 2:
            with torch.cuda.device(device):  # streams and graphs of the model's GPU (--device cuda:1)
                done += _graphed(step, steps, stopped)
        while done < steps:
            if done % CHECK_EVERY == 0 and bool(stopped.all()):
                break
            step()
            done += 1
    return _cut(tokens.cpu(), stop_ids)


def _graphed(step, steps: int, stopped: torch.Tensor) -> int:
    """Run `step` once eagerly (warm-up: compiled kernels, cuBLAS handles), capture it, and replay
    it for the rest of `steps` (or until every row has `stopped`); returns how many steps are done
    (1 when the capture failed, with a warning: a model whose forward synchronizes with the host
    cannot be captured, and the remaining steps then run eagerly, with the same result)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            step()  # recorded, not run
    except RuntimeError as exc:
        warnings.warn(
            f"decoding steps could not be captured in a CUDA graph ({str(exc).splitlines()[0]}); decoding eagerly",
            stacklevel=3,
        )
        return 1
    for done in range(1, steps):
        if done % CHECK_EVERY == 0 and bool(stopped.all()):
            return steps  # every row has stopped: the rest would decode nothing kept
        graph.replay()
    return steps


def _cut(tokens: torch.Tensor, stop_ids: set[int]) -> list[list[int]]:
    """Each row's tokens up to its first stop token (as `eager_decode` keeps them)."""
    out = []
    for row in tokens.tolist():
        kept = []
        for t in row:
            if t in stop_ids:
                break
            kept.append(t)
        out.append(kept)
    return out
