"""Suites as Hugging Face dataset repositories: write, load offline, round trip, determinism, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matbench.cli import main
from matbench.data_gen import SUITES
from matbench.data_gen.harvest import HARVEST_FIELDS
from matbench.data_gen.harvest_freeform import FREEFORM_FIELDS
from matbench.data_gen.loading import load_pairs
from matbench.data_gen.publish import PARQUET, push_to_hub, write_repo
from matbench.data_gen.rows import (
    ROW_FIELDS,
    pair_to_row,
    row_to_pair,
)
from matbench.errors import MatbenchError
from tests.helpers import dialog_sources


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suites")
    write_repo(out, SUITES.names(), seed=0, n=6, revision="test", sources=dialog_sources())
    return out


def test_load_dataset_reads_the_repository_offline(repo, tmp_path):
    from datasets import load_dataset

    assert SUITES.names() == [
        "access",
        "binding_capacity",
        "decoy_audit",
        "discovery",
        "edge_swap",
        "harvest",
        "harvest_freeform",
        "landing",
        "note_knob",
        "orthogonal_bits",
        "phantom_erase",
        "phantom_swap",
        "programming",
        "recompute_matrix",
        "reference_gradient",
        "sink_dependency",
        "sliding_window",
        "trigger",
        "update",
        "var_tracking",
    ]
    for name in SUITES.names():
        suite = SUITES.get(name)
        ds = load_dataset(str(repo), name, split="test", cache_dir=str(tmp_path))
        assert ds.num_rows == 6 and ds.features == suite.features()
        assert list(ds.features) == list(
            {"harvest": HARVEST_FIELDS, "harvest_freeform": FREEFORM_FIELDS}.get(name, ROW_FIELDS)
        )
        rows = [dict(r) for r in ds]
        assert rows == suite.dataset_rows(0, 6, dialog_sources())
        assert suite.pairs_from_rows(rows, dialog_sources()) == suite.generate(0, 6, dialog_sources())


def test_card_documents_configs_fields_and_hashes(repo):
    card = (repo / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: discovery" in card
    assert f"path: {PARQUET.format(config='discovery')}" in card
    for field in ROW_FIELDS + HARVEST_FIELDS:
        assert f"| `{field}` |" in card

    def row(name: str) -> str:  # the card's table row of a 6-row config: what it measures, contract, version
        suite = SUITES.get(name)
        return f"| {name} | {suite.summary} | {'yes' if suite.contract else 'no'} | {suite.version} | 6 |"

    assert "config_name: harvest" in card and row("harvest") in card
    _pairs, info = load_pairs(str(repo), "discovery")
    assert f"`{info['config_content_hash']}`" in card and row("discovery") in card
    assert "config_name: landing" in card and row("landing") in card
    assert "config_name: edge_swap" in card and "| edge_swap | does the served leaf edge select" in card
    assert row("edge_swap").endswith("| no | 1 | 6 |")


def test_generation_is_byte_identical_and_seeded(tmp_path):
    names, sources = SUITES.names(), dialog_sources()
    a, b, c = (write_repo(tmp_path / d, names, seed, 5, "r", sources) for d, seed in (("a", 0), ("b", 0), ("c", 1)))
    for name in names:
        path = PARQUET.format(config=name)
        assert (tmp_path / "a" / path).read_bytes() == (tmp_path / "b" / path).read_bytes(), name
        assert (tmp_path / "a" / path).read_bytes() != (tmp_path / "c" / path).read_bytes(), name
    assert (tmp_path / "a" / "README.md").read_bytes() == (tmp_path / "b" / "README.md").read_bytes()
    assert [s.content_hash for s in a] == [s.content_hash for s in b]
    assert all(x.content_hash != y.content_hash for x, y in zip(a, c))


def _row():
    pair = SUITES.get("discovery").generate(0, 1)[0]
    return pair_to_row(pair, "discovery", "1", 0, 0)


def test_malformed_rows_are_refused_in_one_line():
    row = _row()
    assert row_to_pair(row) == SUITES.get("discovery").generate(0, 1)[0]
    missing = dict(row)
    del missing["menu"]
    with pytest.raises(MatbenchError, match="missing field 'menu'"):
        row_to_pair(missing)
    edited = {**row, "values": ["OFFLINE", "ONLINE"]}
    with pytest.raises(MatbenchError, match="content_hash does not match"):
        row_to_pair(edited)


def test_a_row_whose_arm_serves_the_source_is_refused():
    from matbench.data_gen.rows import content_hash

    row = _row()
    row["arms"][0]["served"].append(row["source"])
    row["content_hash"] = content_hash(row)
    with pytest.raises(MatbenchError, match="serves the source"):
        row_to_pair(row)


def test_push_to_hub_uploads_and_tags(repo):
    calls = []

    class FakeApi:
        def create_repo(self, repo_id, **kw):
            calls.append(("create_repo", repo_id, kw))

        def upload_folder(self, **kw):
            calls.append(("upload_folder", kw))
            return "https://hub/commit/1"

        def create_tag(self, repo_id, **kw):
            calls.append(("create_tag", repo_id, kw))

    assert push_to_hub(repo, "org/matbench-suites", "v1", api=FakeApi()) == "https://hub/commit/1"
    assert calls[0] == ("create_repo", "org/matbench-suites", {"repo_type": "dataset", "exist_ok": True})
    assert calls[1][1]["folder_path"] == str(repo) and calls[1][1]["repo_type"] == "dataset"
    assert calls[2][0] == "create_tag" and calls[2][2]["tag"] == "v1"


def test_generate_cli_and_bad_dataset(tmp_path, capsys):
    assert main(["generate", "--suite", "discovery", "--n-items", "3", "--out", str(tmp_path / "r")]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[0])
    assert summary["config"] == "discovery" and summary["rows"] == 3
    assert main(["generate", "--suite", "discovry", "--out", str(tmp_path / "x")]) == 2
    assert "Did you mean 'discovery'" in capsys.readouterr().err
    with pytest.raises(MatbenchError, match="could not load config 'discovery' of dataset"):
        load_pairs(str(tmp_path / "nowhere"), "discovery")


def test_a_regenerated_local_repository_is_never_read_from_a_stale_cache(tmp_path):
    for seed in (0, 1):  # same folder name, different content
        out = tmp_path / f"run{seed}" / "suites"
        write_repo(out, ["discovery"], seed=seed, n=2, revision="t")
        pairs, info = load_pairs(str(out), "discovery")
        assert info["seed"] == seed and pairs == SUITES.get("discovery").generate(seed, 2)


def test_the_docs_load_dataset_example_works_from_any_directory(repo, tmp_path):
    """docs/datasets.md's example, its path pointed at a written repository, run from elsewhere."""
    import os
    import re
    import subprocess
    import sys

    docs = (Path(__file__).resolve().parent.parent / "docs" / "datasets.md").read_text()
    example = re.findall(r"```python\n(.*?)```", docs, flags=re.DOTALL)[0]
    assert '"~/matbench/suites"' in example
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", example.replace('"~/matbench/suites"', repr(str(repo)))],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert done.stdout.split() == ["6", "trigger-v2-s0-00000"]
