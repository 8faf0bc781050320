"""tools/chunks.py: folders cut into checked chunks and joined back, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).parents[1] / "tools" / "chunks.py"


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], check=False, capture_output=True, text=True)


def test_split_and_join_round_trip_and_name_a_damaged_chunk(tmp_path):
    src = tmp_path / "model"
    (src / "sub").mkdir(parents=True)
    payload = bytes(range(256)) * 1200  # 300 KiB: four chunks of 0.1 MB
    (src / "sub" / "weights.bin").write_bytes(payload)
    (src / "README").write_text("hello")
    split = _run("split", "--max-mb", 0.1, "--out", tmp_path / "chunks", src)
    assert split.returncode == 0 and split.stdout.startswith("4 chunks")
    joined = _run("join", tmp_path / "chunks", tmp_path / "far")
    assert joined.returncode == 0, joined.stderr
    assert (tmp_path / "far" / "model" / "sub" / "weights.bin").read_bytes() == payload
    assert (tmp_path / "far" / "model" / "README").read_text() == "hello"
    chunk = tmp_path / "chunks" / "chunk-002"
    chunk.write_bytes(chunk.read_bytes()[:-1] + b"?")
    (tmp_path / "chunks" / "chunk-003").unlink()
    broken = _run("join", tmp_path / "chunks", tmp_path / "again")
    assert broken.returncode == 1
    assert broken.stderr.strip() == "chunks missing: ['chunk-003']; damaged: ['chunk-002']: send them again"
    assert not (tmp_path / "again").exists()
