"""Compute kernels a loaded model may run with: grouped-query SDPA (`attention`) and compiled
RMSNorm/MLP forwards (`fused`).

May import: torch, transformers' attention interfaces, `matbench.errors`.
"""
