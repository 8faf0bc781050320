#!/usr/bin/env bash
# call.sh SECONDS CHUNK...: one device call (carry .gpu/bin and the chunks):
# copy matbench to /tmp/pkg once (so the runs never read the tree the next call replaces; its
# `git log` line says which commit the files are), stage the chunks (stage.py starts each model's
# cells once its files are in), then wait up to SECONDS for CELLS lines in times.txt and (SECONDS
# > 0) hand back everything so far as res.txz.NN: one xz tarball cut into pieces the call returns (16 MB a file,
# 64 MiB a call: stop 34's 80 MB of logs came back only by hand), the first four; when there are
# more, `call.sh fetch 4` (a call of its own, nothing carried but .gpu/bin) returns the next four.
# `integrate.py` takes the pieces, in any folders, as one tarball.
R=$(pwd)
if [ "${1:-}" = fetch ]; then  # call.sh fetch FIRST: the pieces FIRST.. of the last hand-back
  for i in $(seq "$2" $(( $2 + 3 ))); do
    f=/tmp/out/res.txz.$(printf %02d "$i"); [ -f "$f" ] && cp "$f" "$OUT/"
  done
  ls /tmp/out; exit 0
fi
D=$1; shift
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
# A call that only stages (SECONDS 0) hands back nothing: 64 MB of pieces a call would slow every
# upload, and the counts above say how the runs go.
[ "$D" -gt 0 ] || exit 0
rm -rf /tmp/out; mkdir -p /tmp/out
tar -cf - -C /tmp res | xz -T0 -6 | split -b 15900000 -d - /tmp/out/res.txz.
cp $(ls /tmp/out/res.txz.* | head -4) "$OUT/"
n=$(ls /tmp/out | wc -l); [ "$n" -le 4 ] || echo "res.txz: $n pieces; the rest: call.sh fetch 4 (then 8, ...)"
