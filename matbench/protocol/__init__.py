"""The protocol's nouns, torch-free: donor pairs and their texts, readouts and menu parsing,
outcome classes, the donor margin shift, typed per-item records.

May import: `matbench.errors`, `matbench.registry`, numpy. Never torch or transformers: the
evaluators, rescoring, submission checks and the leaderboard work from these alone.
"""
