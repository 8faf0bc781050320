"""The serving engine: one global prefill per donor pair, compact and native serving of kept rows,
readout scoring, the faithfulness gates, and memory-aware batching.

May import: `matbench.models`, `matbench.kernels`, `matbench.protocol`, torch, transformers.
"""
