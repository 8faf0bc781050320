"""Move folders to a machine that takes at most N MB per transfer, in chunks that are checked.

    python tools/chunks.py split --max-mb 45 --out CHUNKS_DIR PATH [PATH ...]
    python tools/chunks.py join CHUNKS_DIR TARGET_DIR

`split` writes one tar stream of the PATHs (each stored under its own name) cut into
`chunk-NNN` files of at most `--max-mb` MB, and `manifest.json` with every chunk's sha256 and
the whole stream's. Send the chunks one per transfer, each into the same CHUNKS_DIR on the far
side, the manifest with the last; `join` checks every chunk and the stream against the manifest,
says which chunks are missing or damaged, and unpacks the stream into TARGET_DIR.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path


def split(paths: list[Path], out: Path, max_mb: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in paths:
            tar.add(path, arcname=path.name)
    stream, size = buffer.getvalue(), int(max_mb * 2**20)
    chunks = {}
    for k, start in enumerate(range(0, len(stream), size)):
        name = f"chunk-{k:03d}"
        (out / name).write_bytes(stream[start : start + size])
        chunks[name] = hashlib.sha256(stream[start : start + size]).hexdigest()
    manifest = {"stream_sha256": hashlib.sha256(stream).hexdigest(), "bytes": len(stream), "chunks": chunks}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(chunks)} chunks of at most {max_mb} MB ({len(stream) / 2**20:.1f} MB) in {out}")


def join(chunks_dir: Path, target: Path) -> None:
    manifest = json.loads((chunks_dir / "manifest.json").read_text())
    missing = [n for n in manifest["chunks"] if not (chunks_dir / n).is_file()]
    damaged = [
        n
        for n, digest in manifest["chunks"].items()
        if n not in missing and hashlib.sha256((chunks_dir / n).read_bytes()).hexdigest() != digest
    ]
    if missing or damaged:
        sys.exit(f"chunks missing: {missing or 'none'}; damaged: {damaged or 'none'}: send them again")
    stream = b"".join((chunks_dir / n).read_bytes() for n in sorted(manifest["chunks"]))
    if hashlib.sha256(stream).hexdigest() != manifest["stream_sha256"]:
        sys.exit("the joined stream does not match the manifest: split again")
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(stream)) as tar:
        tar.extractall(target, filter="data")
    print(f"{len(manifest['chunks'])} chunks checked, {manifest['bytes'] / 2**20:.1f} MB unpacked into {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split")
    s.add_argument("--max-mb", type=float, required=True)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("paths", type=Path, nargs="+")
    j = sub.add_parser("join")
    j.add_argument("chunks_dir", type=Path)
    j.add_argument("target", type=Path)
    args = parser.parse_args()
    if args.command == "split":
        split(args.paths, args.out, args.max_mb)
    else:
        join(args.chunks_dir, args.target)


if __name__ == "__main__":
    main()
