#!/usr/bin/env bash
# contract.sh SECONDS N: the three offline models in parallel on the one GPU, every suite, N pairs,
# --check, every readout; results under /tmp/res, tarred into $OUT/res.tgz at the end or the deadline.
R=$(pwd); D=$1; N=$2
export PYTHONPATH=/tmp/pkg:/tmp/site MATBENCH_CACHE=/tmp/mbcache
mkdir -p /tmp/res; cd /tmp
for M in smollm2-135m gemma3-270m qwen2.5-coder-0.5b; do
  ( for S in discovery trigger landing access programming update harvest; do
      extra=""
      [ "$S" = harvest ] && extra="--chunk-size 4096 --locomo $R/.gpu/data/locomo/locomo10.json --realtalk $R/.gpu/data/realtalk"
      t0=$(date +%s)
      python -m matbench eval --model $M --suite $S --limit $N --readout all --check --dtype float32 --device cuda \
        --no-progress $extra --output /tmp/res/$M > /tmp/res/$M.$S.log 2>&1
      echo "$M $S rc=$? $(( $(date +%s) - t0 ))s" >> /tmp/res/times.txt
    done ) &
done
end=$(( $(date +%s) + D ))
while [ $(date +%s) -lt $end ] && [ -n "$(jobs -r)" ]; do sleep 5; done
cat /tmp/res/times.txt
tar -czf $OUT/res.tgz -C /tmp res
ls -la $OUT
