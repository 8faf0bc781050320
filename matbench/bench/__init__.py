"""`matbench bench`: performance measurements kept in benchmarks/, never timed tests.

Each benchmark is a function registered by name in `BENCHMARKS` (one module each: contract, discovery,
scaling, long_context, leaderboard, patch_cost, policies) that returns a JSON-able record with the machine and the
timings; `matbench bench NAME --output FILE` writes it with the command that made it. Shared
helpers live in `common`; importing this package registers every benchmark.
"""

from __future__ import annotations

from matbench.bench import contract, discovery, leaderboard, long_context, patch_cost, policies, scaling  # noqa: F401  (they register)
from matbench.bench.common import BENCHMARKS

__all__ = ["BENCHMARKS"]
