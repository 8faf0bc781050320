"""Prefilled members kept for reuse: a member whose first tokens another member already prefilled
(the questions of one long dialog, a dialog with one turn appended) computes only what follows.

Attention is causal, so the rows of a sequence's first n tokens depend on those tokens alone: a
member that shares its first n token ids and positions with a prefilled one takes that member's
first n rows and prefills only its own suffix after them (`prefill.prefill_pairs`). The rows are
the same computation; on a GPU they can differ from a one-shot prefill of the whole member at the
rounding level (other kernel shapes, as batching and chunking already do), which the gates bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matbench.engine.prefill import Rows

# A shared prefix is reused when it is at least this many tokens and half of the member: shorter
# ones (a common preamble) would save little and cost the suffix path's explicit mask.
MIN_SHARED_TOKENS = 256


@dataclass(frozen=True)
class Prefilled:
    """One prefilled member: its token ids and positions, and its rows (`prefill.Rows`)."""

    ids: np.ndarray  # [T] int64
    positions: np.ndarray  # [T] int64
    rows: Rows


def token_arrays(ids: tuple[int, ...], positions: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A member's token ids and positions as the arrays `shared_length` compares."""
    return np.asarray(ids, dtype=np.int64), np.asarray(positions, dtype=np.int64)


def shared_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """How many leading tokens two (ids, positions) sequences have in common."""
    n = min(len(a[0]), len(b[0]))
    differs = (a[0][:n] != b[0][:n]) | (a[1][:n] != b[1][:n])
    return int(differs.argmax()) if differs.any() else n


def worth_reusing(shared: int, length: int) -> bool:
    return shared >= MIN_SHARED_TOKENS and 2 * shared >= length


@dataclass
class PrefixStore:
    """The members prefilled last, searched for the longest prefix a new member shares with one.

    Bounded by `keep` entries (the caller trims after each batch; `prefill.prefill_pairs` adds
    pair by pair, so the last pair's two members stay): the rows stay alive while stored, and
    those of the last pair are the ones the engine keeps anyway (`PairEngine._last_prefill`)."""

    keep: int = 2
    entries: list[Prefilled] = field(default_factory=list)

    def add(self, entry: Prefilled) -> None:
        self.entries.append(entry)

    def trim(self) -> None:
        del self.entries[: max(0, len(self.entries) - self.keep)]

    def clear(self) -> None:
        self.entries.clear()

    def best(self, ids: np.ndarray, positions: np.ndarray) -> tuple[Prefilled | None, int]:
        """The stored member sharing the longest prefix worth reusing with `(ids, positions)`, and
        that prefix's length; (None, 0) when none is worth it."""
        found, longest = None, 0
        for entry in self.entries:
            shared = shared_length((entry.ids, entry.positions), (ids, positions))
            if shared > longest and worth_reusing(shared, len(ids)):
                found, longest = entry, shared
        return found, longest
