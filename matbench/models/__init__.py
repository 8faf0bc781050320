"""Loading checkpoints (Hub id, directory, GGUF, offline alias), refusals of what cannot be served
sparsely, random models of real shapes, and the layers' sliding windows.

May import: `matbench.kernels`, `matbench.errors`, torch, transformers.
"""
