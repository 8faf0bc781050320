"""stage.py CHUNK...: on the lent machine, append the carried chunks to /tmp/stream.bin (once each),
cut out every manifest file now complete (sha256 checked), install the wheels, unpack tokenizers
and data, and start the cells of every model whose GGUF and tokenizer are in (a setsid daemon, so
the runs outlive the call)."""
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

BIN = Path(__file__).resolve().parent
T = Path(os.environ.get("STAGE_DIR", "/tmp/stage")); T.mkdir(exist_ok=True)
ROOT = Path(os.environ.get("STAGE_ROOT", "/tmp"))  # where res/ (the partial logs) lands
DRY = bool(os.environ.get("STAGE_DRY"))  # cut files out only: no install, no runs (a rehearsal here)
stream, done = T / "stream.bin", T / "appended.txt"
seen = set(done.read_text().split()) if done.exists() else set()
with stream.open("ab") as out:
    for chunk in sys.argv[1:]:
        name = Path(chunk).name
        if name not in seen:
            out.write(Path(chunk).read_bytes()); seen.add(name)
done.write_text("\n".join(sorted(seen)))
have, offset = stream.stat().st_size, 0
ready = set()
with stream.open("rb") as f:
    for entry in json.loads((BIN / "manifest.json").read_text()):
        name, size = entry["name"], entry["size"]
        if offset + size <= have:
            target = T / name
            if not target.exists():
                f.seek(offset); data = f.read(size)
                if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                    sys.exit(f"{name}: sha256 mismatch")
                target.write_bytes(data)
                if name.endswith(".tgz") and name != "partial.tgz":
                    tarfile.open(target).extractall(T)
            ready.add(name)
        offset += size
print("have", have, "bytes; ready:", sorted(ready))
if "partial.tgz" in ready and not (T / "partial.ok").exists():  # before any cell starts
    tarfile.open(T / "partial.tgz").extractall(ROOT)
    (T / "partial.ok").touch()
if DRY:
    sys.exit(0)
if "wheels.tgz" in ready and not (T / "wheels.ok").exists():
    subprocess.run(f"{sys.executable} -m pip install -q --no-index --no-deps {T}/wheels/*.whl",
                   shell=True, check=True)
    (T / "wheels.ok").touch()
MODELS = {"smollm2-135m": ("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2"),
          "gemma3-270m": ("gemma-3-270m-q4_k_m.gguf", "gemma3"),
          "qwen2.5-coder-0.5b": ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "coder")}
need_data = "data.tgz" in ready
# A hold file (a benchmark that wants the GPU idle, e.g. .gpu/bin/bench.sh) keeps every cell
# waiting; the next call after it is gone launches them.
if (T / "hold").exists():
    print("held:", (T / "hold").read_text().strip())
    sys.exit(0)
for alias, (gguf, tok) in MODELS.items():
    flag = T / f"{alias}.launched"
    if gguf in ready and f"tok_{tok}.tgz" in ready and need_data and not flag.exists():
        flag.touch()
        subprocess.Popen(["setsid", "nohup", "bash", str(BIN / "cells.sh"), alias, gguf, tok],
                         stdout=open(T / f"{alias}.cells.log", "w"), stderr=subprocess.STDOUT,
                         cwd="/tmp", start_new_session=True)
        print("launched", alias)
