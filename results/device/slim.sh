#!/usr/bin/env bash
# slim.sh on|off (here, in the repo root): every device call carries the tracked tree beside its
# chunk, 64 MiB in all, and the committed results (results/contract, results/experiments and their
# leaderboard copies)
# are most of that tree (40 of 43 MB after the fourth session), leaving 20 MB chunks: 30 calls for
# two models. `on` takes them out of the index and ignores them in .git/info/exclude, so they stay
# on disk but no longer travel (pack.sh, run after it, then cuts 60 MB chunks); `off` puts both back
# as they were. Between the two, commit nothing: the index would commit them as deleted (a session
# stopped in between leaves it on: `git status` lists the results as deleted; run `off`).
# While on, a pre-commit hook refuses every commit: stop 35 committed while on (a commit of other
# files commits the whole index) and deleted 3,738 result files from history until it was rewritten.
set -euo pipefail
EX=.git/info/exclude; PATHS="results/contract results/experiments results/audit leaderboard/submissions"
HOOK=.git/hooks/pre-commit; MARK="# matbench slim.sh guard"
case ${1:-} in
  on) if [ -z "$(git ls-files -- $PATHS)" ]; then echo "slim: already on"; exit 0; fi
      if ! git diff --quiet HEAD -- $PATHS || [ -n "$(git ls-files --others --exclude-standard -- $PATHS)" ]; then
        echo "slim.sh: $PATHS has uncommitted changes; commit them first" >&2
        exit 1
      fi
      for p in $PATHS; do grep -qxF "/$p/" $EX || echo "/$p/" >> $EX; done
      git rm -r -q --cached --ignore-unmatch -- $PATHS
      if [ ! -e $HOOK ]; then mkdir -p .git/hooks
        printf '#!/bin/sh\n%s\necho "results/device/slim.sh is on (the results are off the index): run bash results/device/slim.sh off before committing" >&2\nexit 1\n' "$MARK" > $HOOK
        chmod +x $HOOK; fi
      echo "slim: $(git ls-files -z | xargs -0 stat -c %s | awk '{s+=$1} END {print s}') bytes tracked";;
  off) for p in $PATHS; do grep -vxF "/$p/" $EX > $EX.tmp || true; mv $EX.tmp $EX; done
      git reset -q -- $PATHS
      if [ -f $HOOK ] && grep -qxF "$MARK" $HOOK; then rm -f $HOOK; fi
      git status --short -- $PATHS | head -3;;
  *) echo "usage: results/device/slim.sh on|off" >&2; exit 2;;
esac
