"""The suite contract: deterministic donor pairs from (suite, version, seed, n_items)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matbench.data_gen.checks import check_decoy_independence, check_pair
from matbench.data_gen.rows import FIELD_DOCS, pair_to_row, row_to_pair
from matbench.data_gen.rows import features as row_features
from matbench.errors import MatbenchError
from matbench.protocol.pairs import DonorPair
from matbench.protocol.readouts import RELEVANT_TRACE
from matbench.registry import Registry

STATES = ("ONLINE", "OFFLINE")
REGISTER_POOL = ("ALPHA", "BETA", "GAMMA", "DELTA", "OMEGA", "SIGMA", "KAPPA", "THETA", "LAMBDA", "EPSILON")
N_EVENTS = 24


@dataclass(frozen=True)
class PaperDraws:
    """The paper script's own items for a seed: its `random.Random(seed)` consumed in the order the
    script draws (`matbench show --paper-seed`); `items(seed, n)` gives its first n donor pairs."""

    script: str  # kvmemory/<script>.py of the paper's code
    seed: int  # the script's default --seed
    items: Callable[[int, int], list[DonorPair]]


def interleaved(runs: list[list[DonorPair]], n: int) -> list[DonorPair]:
    """Item k of a suite whose item k takes condition k mod C, from the paper's C runs (or loops) of
    one condition each: runs[k % C][k // C], so a prefix of the suite's layout is a prefix of every
    run."""
    return [runs[k % len(runs)][k // len(runs)] for k in range(n)]


def condition_major(
    seed: int,
    n: int,
    conditions: int,
    per_condition: int,
    items: int | None,
    make: Callable[[random.Random, int, int], DonorPair],
) -> list[DonorPair]:
    """The first n pairs, in the suite's layout (`interleaved`), of a script whose one
    `random.Random(seed)` draws all `--items` items of a condition before the next; `make(rng,
    condition, k)` draws and builds item k of a condition. `--items` (`items`, else the script's
    default `per_condition`, or more where n asks for more) fixes where the later conditions' draws
    start in the stream."""
    per = items or max(per_condition, -(-n // conditions))
    rng = random.Random(seed)
    return interleaved([[make(rng, c, k) for k in range(per)] for c in range(conditions)], n)


@dataclass(frozen=True)
class Suite:
    """A named generator. `generate(seed, n)` must depend on nothing but its arguments."""

    name: str
    version: str
    default_n: int
    make_item: Callable[[random.Random, str, int], DonorPair]  # (rng, item_id, index) -> pair
    # Consecutive items of a group share every random draw and differ only in the condition their
    # index selects (e.g. the carrier construction): paired comparisons across conditions.
    group_size: int = 1
    # One line for the dataset card: what the suite measures, with the paper's script(s).
    summary: str = ""
    # Part of the memory contract (`matbench eval --suite all` and its scorecard); False for the
    # paper's further experiments, which a user runs by name.
    contract: bool = True
    # Whether `--template para` (kv_frozen's untuned surface, data_gen/paraphrase.py) may reword it.
    paraphrase: bool = True
    # The serving modes `--serving auto` runs (kv_swgate compares compact with native serving of
    # the same rows); empty: the model's own, native for sliding windows, else compact.
    servings: tuple[str, ...] = ()
    # The readouts this suite can be read by (empty: any); `--readout all` runs these alone.
    readouts: tuple[str, ...] = ()
    # The paper script's own draws, where matbench reproduces its random stream (None: its seeds
    # give other items than the paper's; the parity fixtures pin the renderings either way).
    paper: PaperDraws | None = None

    def item_rng(self, seed: int, index: int) -> random.Random:
        # String seeds are hashed with SHA-512 by `random`: stable across runs and platforms.
        group = index // self.group_size
        return random.Random(f"{self.name}/{self.version}/{seed}/{group if self.group_size > 1 else index}")

    def dataset_rows(self, seed: int, n: int | None, sources=None) -> list[dict[str, Any]]:
        """The suite's dataset rows (one per donor pair; `sources` is for suites read from files)."""
        return [pair_to_row(p, self.name, self.version, seed, i) for i, p in enumerate(self.generate(seed, n))]

    def features(self):
        return row_features()

    def field_docs(self) -> dict[str, str]:
        return FIELD_DOCS

    def pairs_from_rows(self, rows: list[dict[str, Any]], sources=None) -> list[DonorPair]:
        return [row_to_pair(row) for row in rows]

    def generate(self, seed: int = 0, n: int | None = None, sources=None) -> list[DonorPair]:
        n = self.default_n if n is None else n
        if n < 1:
            raise MatbenchError(f"--limit must be at least 1 (got {n}): a suite needs at least one item")
        pairs = []
        for index in range(n):
            pair = self.make_item(self.item_rng(seed, index), f"{self.name}-v{self.version}-s{seed}-{index:05d}", index)
            pair.validate()
            check_pair(pair)
            pairs.append(pair)
        check_decoy_independence(pairs, self.name)
        return pairs


SUITES: Registry[Suite] = Registry("suite")


def filler_body(rng: random.Random, taken: tuple[str, ...], avoid: frozenset[int] = frozenset()) -> str:
    """A filler observation about a register that is not one of the item's own, whose number is
    none of `avoid` (numbers that are donor values or operands of the item)."""
    name = rng.choice([r for r in REGISTER_POOL if r not in taken])
    number = rng.randint(100, 998)
    while number in avoid:
        number = rng.randint(100, 998)
    return f"register {name} refreshed to {number}"


def ask_state(register: str) -> str:
    return f"What state is register {register} in?"


def register_source_pair(
    item_id: str,
    events: list[str],
    source: int,
    source_reg: str,
    arms,
    registers: tuple[str, ...],
    trace: str = RELEVANT_TRACE,
) -> DonorPair:
    """A pair whose dropped source is "register S set to state v" (member A: ONLINE, B: OFFLINE)
    and whose event 0 is the served decoy, a register state drawn independently of the donor;
    `trace` is the trace readout's instruction (the paper's wording for the suite)."""
    return DonorPair(
        item_id=item_id,
        events=tuple(events),
        source=source,
        source_bodies=tuple(f"register {source_reg} set to state {v}" for v in STATES),
        values=STATES,
        menu=STATES,
        arms=tuple(arms),
        leak_patterns=(rf"\bregister {source_reg} set to\b",),
        registers=registers,
        decoys=(0,),
        trace=trace,
    )
