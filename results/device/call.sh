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
# per model: how many files, and the fewest and most pairs any of its per-item logs holds
cat /tmp/res/times.txt 2>/dev/null
for d in /tmp/res/*/; do
  ls $d*.items.jsonl > /dev/null 2>&1 || continue
  wc -l $d*.items.jsonl | grep -v ' total$' | awk -v d=$(basename $d) '{n++; if (!m || $1 < m) m = $1; if ($1 > x) x = $1} END {print d, n " logs", m "-" x " pairs"}'
done
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
tar -czf $OUT/res.tgz -C /tmp res
