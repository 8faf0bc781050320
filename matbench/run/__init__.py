"""`matbench eval`: planning runs, batching pairs through the engine, sharding over processes,
and writing results files and per-item logs.

May import: every layer below it (`engine`, `data_gen`, `evaluators`, `results`, `protocol`).
"""
