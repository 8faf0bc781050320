#!/usr/bin/env bash
# pack.sh (here, in the repo root, with the CPU install of the README): lay out what the lent GPU
# machine lacks (the gguf/pydantic wheels in .gpu/wheels, the tokenizers transformers 5.24 builds,
# the dialog data, the offline GGUF files the plan names) as one byte stream cut into .gpu/stream/partNN,
# each small enough to travel beside the tree in one call, SmolLM2 first so its runs can start
# while the rest arrives, with .gpu/bin/manifest.json (names, sizes, sha256).
set -euo pipefail
PY=${PY:-.venv/bin/python}; P=.gpu/pay; S=.gpu/stream; C=${MATBENCH_CACHE:-$HOME/.cache/matbench}
mkdir -p $P .gpu/bin; rm -rf $S; mkdir -p $S
cp results/device/stage.py results/device/cells.sh results/device/call.sh .gpu/bin/
# The cells to run: PLAN=FILE when given (a session's own grid), else the committed
# results/partial/plan.txt (the cells still owed), else none: every suite. Never a plan.txt left in
# .gpu/bin by an earlier session (stop 31 found a stale one overriding the committed plan).
rm -f .gpu/bin/plan.txt
if [ -n "${PLAN:-}" ]; then cp "$PLAN" .gpu/bin/plan.txt
elif [ -f results/partial/plan.txt ]; then cp results/partial/plan.txt .gpu/bin/plan.txt; fi
# The wheels the image lacks (gguf, pydantic and those of their needs it has too old or not at all),
# at the versions this install runs, for its Python 3.12; downloaded once into .gpu/wheels.
if ! ls .gpu/wheels/*.whl > /dev/null 2>&1; then
  $PY -c 'from importlib.metadata import version as v
for n in ("gguf", "pydantic", "pydantic_core", "annotated-types", "typing-inspection", "typing_extensions"):
    print(f"{n}=={v(n)}")' > .gpu/wheels.txt
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .gpu/wheels -r .gpu/wheels.txt
fi
tar -czf $P/wheels.tgz -C .gpu wheels
# The models: with .gpu/bin/plan.txt, those its lines still give suites (a finished model's GGUF
# would cost its chunks' calls for nothing); without one, all three. alias:tokenizer-tag (the tags
# stage.py's MODELS unpacks); the GGUF names come from matbench's sources.
MODELS=""
for m in smollm2-135m:smollm2 gemma3-270m:gemma3 qwen2.5-coder-0.5b:coder; do
  if [ ! -f .gpu/bin/plan.txt ] || grep -q "^${m%%:*}: *[a-z]" .gpu/bin/plan.txt; then MODELS="$MODELS $m"; fi
done
[ -n "$MODELS" ] || { echo "pack.sh: .gpu/bin/plan.txt gives no model a suite; nothing to run" >&2; exit 1; }
$PY - $P $C $MODELS <<'PY'
import shutil, sys, tarfile
from pathlib import Path
from matbench.models.sources import resolve_source
from matbench.models.gguf import convert_gguf
pay, cache = Path(sys.argv[1]), Path(sys.argv[2])
order = []  # per model, in the plan's order: its tokenizer, then its GGUF
for alias, tok in (m.split(":") for m in sys.argv[3:]):
    source = resolve_source(alias)
    order += [f"tok_{tok}.tgz", source.gguf_file]
    shutil.copy(Path(source.location) / source.gguf_file, pay / source.gguf_file)
    converted = convert_gguf(source, False)  # the tokenizer files transformers (5.24 here) builds
    with tarfile.open(pay / f"tok_{tok}.tgz", "w:gz") as tar:
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            if (converted / name).exists():
                tar.add(converted / name, f"{tok}/{name}")
(pay / "models.txt").write_text("\n".join(order) + "\n")
PY
D=${MATBENCH_SHARED_DATA:-../shared/data}
tar -czf $P/data.tgz -C $D --transform 's,^,data/,' locomo/locomo10.json realtalk
# Per-item logs of unfinished cells (results/partial/<model>/*.items.jsonl, committed: a new
# checkout holds only what is tracked, and stop 28's 15 logged pairs, kept outside the
# repository, were lost that way), if any, go first: the runs resume from them instead of starting over.
order=""
if [ -n "$(find results/partial -name '*.items.jsonl' 2>/dev/null)" ]; then
  (cd results/partial && find . -name '*.items.jsonl' | sort | tar -czf ../../$P/partial.tgz --transform 's,^[.],res,' -T -)
  order="partial.tgz "
fi
# The wheels, then each model's tokenizer and GGUF, the dialog data after the first (a model's
# cells start once its files and the data are in).
order="${order}wheels.tgz $(sed -n 1,2p $P/models.txt | tr '\n' ' ')data.tgz $(sed -n '3,$p' $P/models.txt | tr '\n' ' ')"
# A call carries the tracked tree beside one chunk, 64 MiB in all: the chunk is what the tree
# (which grows with every committed cell) leaves, less 4 MB of headroom.
TREE=$(git ls-files -z | xargs -0 stat -c %s | awk '{s+=$1} END {print s}')
$PY - $P $S $TREE $order <<'PY'
import hashlib, json, sys
from pathlib import Path
pay, out, tree, names = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
manifest = [{"name": n, "size": (pay / n).stat().st_size,
             "sha256": hashlib.sha256((pay / n).read_bytes()).hexdigest()} for n in names]
(out.parent / "bin" / "manifest.json").write_text(json.dumps(manifest, indent=1))
CHUNK, buf, k = 64 * 2**20 - tree - 4_000_000, b"", 0
for n in names:
    buf += (pay / n).read_bytes()
    while len(buf) >= CHUNK:
        (out / f"part{k:02d}").write_bytes(buf[:CHUNK]); buf = buf[CHUNK:]; k += 1
if buf:
    (out / f"part{k:02d}").write_bytes(buf); k += 1
print(k, "chunks")
PY
