"""Run one of the paper's scripts (`oklen/Compute-Globally-Materialize-Locally`, kvmemory/*.py)
without a model and record exactly what it would serve.

The paper's scripts interleave their random draws with model calls, so their stimuli can only be
seen by running them. `record` imports a script with its model replaced by a stand-in:

- the tokenizer is character-level (`CharTokenizer`: one id per character, a fixed chat
  template), so token counts, position budgets and positions are character counts;
- `encode_block` returns, in place of K/V rows, the token ids and original positions of every
  row, and `assemble` concatenates them the way the real one concatenates K/V;
- every readout (`_greedy_pos`, `_greedy`, `answer_with_probs`) records the served rows (their
  text and positions), the query text and the token budget, and answers with a fixed string.

So a recording is the paper's own rendering of its own draws: the served text of every arm, in
order, with its positions, and the question and readout suffix, byte for byte. matbench builds
the same draws with its generators and must render them identically (tests/test_parity.py).
Used only by `make_fixtures.py`; the tests read the committed fixtures, never the paper's code.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

CHAT_HEAD = "<|user|>\n"
CHAT_TAIL = "<|end|>\n<|assistant|>\n"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|user|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


class CharTokenizer:
    """One id per character (its code point): tokenization is exact and reversible, and any
    piece tokenizes the same alone or joined. Serves both the paper's code and matbench's
    `Renderer` (chat template, `bos_token_id`, `decode`)."""

    chat_template = CHAT_TEMPLATE
    bos_token_id = None
    eos_token_id = 0

    def __call__(self, text, add_special_tokens=False, return_tensors=None):
        if isinstance(text, list):  # a batch, as transformers' tokenizers take one
            return SimpleNamespace(input_ids=[[ord(c) for c in t] for t in text])
        ids = [ord(c) for c in text]
        return SimpleNamespace(input_ids=torch.tensor([ids]) if return_tensors == "pt" else ids)

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False, **_):
        content = "".join(f"{CHAT_HEAD}{m['content']}<|end|>\n" for m in messages)
        return content + ("<|assistant|>\n" if add_generation_prompt else "")

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(int(i)) for i in ids)


def text_of(ids) -> str:
    return "".join(chr(int(i)) for i in ids)


@dataclass
class Serve:
    """One readout call of the paper's script: what was kept and what was asked."""

    call: str  # "greedy_pos" (served rows), "greedy" (plain text prompt) or "probe" (candidate logits)
    rows: list[tuple[str, list[int]]]  # kept rows as runs of (text, original positions)
    query: str
    max_tokens: int
    candidates: list[str] = field(default_factory=list)
    query_position: int | None = None  # the query's first position, where the script sets it (kv_harvnative)

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "rows": [[t, p] for t, p in self.rows],
            "query": self.query,
            "max_tokens": self.max_tokens,
            **({"candidates": self.candidates} if self.candidates else {}),
            **({"query_position": self.query_position} if self.query_position is not None else {}),
        }


def _runs(ids: list[int], positions: list[int]) -> list[tuple[str, list[int]]]:
    """Kept rows grouped into runs of consecutive positions: (text, [first, last])."""
    runs: list[tuple[str, list[int]]] = []
    start = 0
    for k in range(1, len(ids) + 1):
        if k == len(ids) or positions[k] != positions[k - 1] + 1:
            runs.append((text_of(ids[start:k]), [positions[start], positions[k - 1]]))
            start = k
    return runs


class FakeCache:
    def __init__(self, ids: list[int], positions: list[int]):
        self.ids, self.positions = ids, positions


class RecordingLLM:
    """The stand-in for kvmemory.llm_hf.HFBackend."""

    def __init__(self, answer: str = ""):
        self.tok = CharTokenizer()
        self.device = "cpu"
        self.model = None
        self.eos_ids = {0}
        self.answer = answer
        self.serves: list[Serve] = []
        self.encodes: list[list[tuple[str, list[int]]]] = []

    def warmup(self) -> None:
        pass

    def _ids(self, text: str) -> torch.Tensor:
        return self.tok(text, return_tensors="pt").input_ids

    def _greedy_pos(self, cache, kept_positions, new_ids, max_tokens):
        self.serves.append(
            Serve(
                "greedy_pos", _runs(cache.ids, [int(p) for p in kept_positions]), text_of(new_ids[0]), int(max_tokens)
            )
        )
        return self.answer, 0.0, 0.0

    def _greedy(self, cache, prefix_len, new_ids, max_tokens):
        rows = _runs(cache.ids, cache.positions) if isinstance(cache, FakeCache) else []
        self.serves.append(Serve("greedy", rows, text_of(new_ids[0]), int(max_tokens)))
        return self.answer, 0.0, 0.0


def fake_encode_block(llm, ids, positions, keep_a=None, keep_b=None):
    if isinstance(llm, RecordingLLM):  # every prefill, whole: the fillers no arm serves included
        llm.encodes.append(_runs([int(i) for i in ids], [int(p) for p in positions]))
    a = 0 if keep_a is None else keep_a
    b = len(ids) if keep_b is None else keep_b
    k = torch.tensor([int(i) for i in ids][a:b], dtype=torch.float64).view(1, 1, -1, 1)
    v = torch.tensor([int(p) for p in positions][a:b], dtype=torch.float64).view(1, 1, -1, 1)
    return [(k, v)]


def fake_assemble(llm, blocks):
    ids, positions = [], []
    for kv, pos in blocks:
        ids += [int(x) for x in kv[0][0].flatten().tolist()]
        positions += [int(x) for x in pos]
    return FakeCache(ids, positions), torch.tensor(positions, dtype=torch.long)


def fake_answer_with_probs(llm, cache, pos, qids, cand_words, ntok=16):
    llm.serves.append(
        Serve("probe", _runs(cache.ids, [int(p) for p in pos]), text_of(qids[0]), int(ntok), list(cand_words))
    )
    return llm.answer, {w: 1.0 / len(cand_words) for w in cand_words}


def fake_serve_native(llm, full_gpu, L, keep_pos, qids):
    """kv_harvnative.serve_native: the full prefill's rows at `keep_pos` (the rest masked), at
    their original positions, the query at L ("native"); zero logits (its readout reads " A"/" B")."""
    ids = [int(x) for x in full_gpu[0][0].flatten().tolist()]
    positions = [int(x) for x in full_gpu[0][1].flatten().tolist()]
    at = {p: k for k, p in enumerate(positions)}
    keep = sorted(int(p) for p in keep_pos)
    llm.serves.append(
        Serve("native", _runs([ids[at[p]] for p in keep], keep), text_of(qids[0]), 0, query_position=int(L))
    )
    return torch.zeros(256)


def fake_serve_compact(llm, blocks, qids, gen=0):
    """kv_harvnative.serve_compact: the blocks assembled, the query at max(position) + 1
    ("compact"); `gen` greedy tokens after the first-token logits."""
    cache, pos = fake_assemble(llm, blocks)
    positions = [int(p) for p in pos]
    llm.serves.append(
        Serve("compact", _runs(cache.ids, positions), text_of(qids[0]), int(gen), query_position=max(positions) + 1)
    )
    return torch.zeros(256), (llm.answer if gen else None)


def fake_swgate_native(llm, full_kv, L, retained_pos, qids, gen):
    """kv_swgate.serve_native: the full prefill's rows at `retained_pos` (every other row masked,
    the header too) at their original positions, the query at L; `gen` greedy tokens."""
    ids = [int(x) for x in full_kv[0][0].flatten().tolist()]
    keep = sorted(int(p) for p in retained_pos)  # full_kv is every row from position 0: index = position
    llm.serves.append(
        Serve("native", _runs([ids[p] for p in keep], keep), text_of(qids[0]), int(gen), query_position=int(L))
    )
    return torch.zeros(256), llm.answer


def fake_swgate_compact(llm, full_kv, spans, qids, gen):
    """kv_swgate.serve_compact: the retained spans assembled at contiguous slots, the query at
    max(position) + 1; `gen` greedy tokens."""
    ids = [int(x) for x in full_kv[0][0].flatten().tolist()]
    keep = [p for a, b in spans for p in range(a, b)]
    llm.serves.append(
        Serve("compact", _runs([ids[p] for p in keep], keep), text_of(qids[0]), int(gen), query_position=max(keep) + 1)
    )
    return torch.zeros(256), llm.answer


# Fakes for one script's own serving functions (other scripts may use the same names differently).
SCRIPT_FAKES = {
    "kv_harvnative": {"serve_native": fake_serve_native, "serve_compact": fake_serve_compact},
    "kv_swgate": {"serve_native": fake_swgate_native, "serve_compact": fake_swgate_compact},
}


def notice(script: str) -> str:
    """The MIT notice a fixture rendered by one of the paper's scripts carries."""
    return (
        f"Rendered by kvmemory/{script}.py of https://github.com/oklen/Compute-Globally-Materialize-Locally "
        "(commit d80ef7b) under tests/parity/recorder.py. MIT License, Copyright (c) 2026 Zefeng Cai, Zerui Cai; "
        "see tests/parity/fixtures/PAPER-LICENSE"
    )


@contextlib.contextmanager
def paper_on_path(paper_root: Path):
    sys.path.insert(0, str(paper_root))
    # The released kvmemory/__init__.py imports modules that are not in the release (.core):
    # a bare package object lets the scripts import each other without it.
    package = types.ModuleType("kvmemory")
    package.__path__ = [str(paper_root / "kvmemory")]
    sys.modules["kvmemory"] = package
    try:
        yield
    finally:
        sys.path.remove(str(paper_root))
        for name in [n for n in sys.modules if n == "kvmemory" or n.startswith("kvmemory.")]:
            del sys.modules[name]


def record(paper_root: Path, script: str, argv: list[str], answer: str = "") -> list[Serve]:
    """Run `kvmemory.<script>.main()` with `argv` under the stand-in model; its serves in order."""
    return record_run(paper_root, script, argv, answer).serves


def record_run(paper_root: Path, script: str, argv: list[str], answer: str = "") -> RecordingLLM:
    """Like `record`, returning the stand-in itself: `.serves`, and `.encodes` (every prefill's
    whole token sequence as runs of consecutive positions, in call order)."""
    llm = RecordingLLM(answer)
    with paper_on_path(paper_root):
        module = importlib.import_module(f"kvmemory.{script}")
        for loaded in [m for n, m in sys.modules.items() if n.startswith("kvmemory.")]:
            for name, fake in (
                ("encode_block", fake_encode_block),
                ("assemble", fake_assemble),
                ("answer_with_probs", fake_answer_with_probs),
            ):
                if hasattr(loaded, name):
                    setattr(loaded, name, fake)
            if hasattr(loaded, "HFBackend"):
                loaded.HFBackend = lambda *a, **k: llm
        for name, fake in SCRIPT_FAKES.get(script, {}).items():
            setattr(module, name, fake)
        saved = sys.argv
        sys.argv = [script, *argv]
        try:
            module.main()
        finally:
            sys.argv = saved
    return llm
