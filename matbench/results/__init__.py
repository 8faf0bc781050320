"""What a run leaves behind and what is built from it: the typed results-file schema, per-item
logs, content hashes, provenance, rescoring, the scorecard and the markdown report.

May import: `matbench.evaluators`, `matbench.protocol`, `matbench.stats`; never the engine or
torch (rescore, submit, scorecard and the leaderboard run without torch).
"""
