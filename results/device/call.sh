#!/usr/bin/env bash
# call.sh SECONDS CHUNK...: one device call (carry .gpu/bin and the chunks):
# copy matbench to /tmp/pkg once (so the runs never read the tree the next call replaces; its
# `git log` line says which commit the files are), stage the chunks (stage.py starts each model's
# cells once its files are in), then wait up to SECONDS for CELLS lines in times.txt and hand back
# everything so far as one tarball.
R=$(pwd); D=$1; shift
if [ ! -d /tmp/pkg/matbench ]; then
  mkdir -p /tmp/pkg; cp -r $R/matbench /tmp/pkg/matbench
  for d in data_gen evaluators leaderboard; do cp -r $R/$d /tmp/pkg/matbench/$d; done
  git -C $R log -1 --format='tree HEAD %h %s'; git -C $R status --porcelain --untracked-files=no | head -3
fi
mkdir -p /tmp/res; python $R/.gpu/bin/stage.py "$@" || exit 1
end=$(( $(date +%s) + D ))
while [ $(date +%s) -lt $end ] && [ $(cat /tmp/res/times.txt 2>/dev/null | wc -l) -lt ${CELLS:-21} ]; do sleep 5; done
cat /tmp/res/times.txt 2>/dev/null; wc -l /tmp/res/*/*_probe_*.items.jsonl 2>/dev/null
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
tar -czf $OUT/res.tgz -C /tmp res
