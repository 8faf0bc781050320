"""Write suites as a Hugging Face dataset repository (parquet + dataset card), and publish it.

Layout: `data/<config>/test-00000-of-00001.parquet` per suite and a README.md whose YAML
`configs:` block makes `datasets.load_dataset(DIR, "<config>")` work offline. Everything is a
function of (suite, version, seed, n_items) and the generator revision, so two runs give
byte-identical files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.data_gen.base import SUITES, Suite
from matbench.data_gen.rows import ROW_FIELDS, features, pair_to_row

PARQUET = "data/{config}/test-00000-of-00001.parquet"

FIELD_DOCS = {
    "item_id": "unique id `<suite>-v<version>-s<seed>-<index>`",
    "suite": "suite (= config) name",
    "version": "generator version of the suite",
    "seed": "suite seed the row was generated from",
    "index": "item index within the seed",
    "events": "observation bodies of the trajectory's events; the source slot holds a placeholder",
    "source": "index of the dropped source event",
    "source_bodies": "source body of member A and member B (the only difference between them)",
    "values": "donor values of member A and member B (the gold answers)",
    "menu": "answer menu of the readouts (candidates of the probe)",
    "arms": "serving arms: name, served event indices (the header is always served), question, uses_source "
            "(serves donor-dependent text), query_at_end (compact serving asks at L), appended (events appended at "
            "query time, e.g. a patch), expected (the answer the arm should give when it is not the donor value), "
            "encoding (joint: rows of the global prefill; isolated: each served event encoded alone after the header at "
            "its original positions; text: header and served events re-prefilled as text), menu and values (this arm's "
            "own menu and donor values when it asks another question of the same rows; empty = the row's), "
            "open_question (the question carries its own answer instruction; no menu is appended)",
    "leak_patterns": "regular expressions no served event may match",
    "registers": "the item's own register names (echoes of these are not answers)",
    "decoys": "events drawn independently of the donor (they may name a menu value)",
    "donor_events": "further donor-dependent events (index, body in A, body in B), served only by donor-visible arms",
    "variant": "sub-condition of the item within its suite (e.g. carrier kind and template)",
    "slot_alternatives": "event slots whose position budget covers every listed alternative body (fixed later positions)",
    "content_hash": "sha256 of the row's canonical JSON without this field",
}


@dataclass(frozen=True)
class ConfigSummary:
    name: str
    version: str
    rows: int
    content_hash: str

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.name, "version": self.version, "rows": self.rows, "content_hash": self.content_hash}


def suite_rows(suite: Suite, seed: int, n: int | None) -> list[dict[str, Any]]:
    pairs = suite.generate(seed, n)
    return [pair_to_row(p, suite.name, suite.version, seed, i) for i, p in enumerate(pairs)]


def write_config(out: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    import datasets
    from datasets import Dataset

    datasets.disable_progress_bars()
    path = out / PARQUET.format(config=name)
    path.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(rows, features=features()).to_parquet(str(path))
    return path


def config_hash(rows: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row["content_hash"].encode())
    return digest.hexdigest()


def write_repo(out: Path, suites: list[str], seed: int, n: int | None, revision: str | None) -> list[ConfigSummary]:
    """Generate every named suite into `out` and write its dataset card."""
    summaries = []
    for name in suites:
        suite = SUITES.get(name)
        rows = suite_rows(suite, seed, n)
        write_config(out, name, rows)
        summaries.append(ConfigSummary(name, suite.version, len(rows), config_hash(rows)))
    (out / "README.md").write_text(dataset_card(summaries, seed, revision))
    return summaries


def dataset_card(summaries: list[ConfigSummary], seed: int, revision: str | None) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(
        license="mit",
        pretty_name="matbench donor-pair suites",
        task_categories=["text-generation"],
        tags=["kv-cache", "kv-eviction", "materialization", "donor-pairs", "matbench"],
        configs=[{"config_name": s.name, "data_files": [{"split": "test", "path": PARQUET.format(config=s.name)}]}
                 for s in summaries],
    )
    table = "\n".join(f"| {s.name} | {s.version} | {s.rows} | `{s.content_hash}` |" for s in summaries)
    fields = "\n".join(f"| `{k}` | {FIELD_DOCS[k]} |" for k in ROW_FIELDS)
    body = f"""
# matbench donor-pair suites

Donor-pair suites of matbench for measuring semantic materialization in
sparse KV-cache serving. Each row is one item with both donor members: two renderings of an agent
trajectory that differ only in the value written by a source event that every materialization arm
drops. Every served token is identical in both members, so an answer that tracks the dropped value
is causal evidence that the kept rows carry it.

```python
from datasets import load_dataset
suite = load_dataset("<this repository or a local copy>", "{summaries[0].name if summaries else 'discovery'}", split="test")
```

Evaluate a checkpoint with `matbench eval --model MODEL --suite NAME --dataset <repository>`.

## Configs

Generated with seed {seed} by matbench generator revision `{revision or "unknown"}`.

| config | version | rows | content hash (sha256 over the rows' hashes) |
|---|---|---|---|
{table}

## Fields

| field | meaning |
|---|---|
{fields}

## Protocol

Each event renders as `<step i>\\naction: reg_op()\\nobservation: <body>\\n` after a header (chat
head + fixed instruction). Both members are prefilled globally with explicit position ids; the
source slot gets a position budget (the longer member's length) so that every later token has the
same position in both. An arm serves the header and its `served` events (compact or native
serving) and asks its question; the outcome per pair is follow / anti / const / other, reported
with an exact sign test and the donor margin shift.

## License

MIT. The suites are synthetic (generated text only).
"""
    return str(DatasetCard.from_template(data, template_str="---\n{{ card_data }}\n---\n" + body))


def push_to_hub(out: Path, repo_id: str, revision: str | None = None, api: Any = None) -> str:
    """Upload the repository folder to a Hub dataset repo; tag it when `revision` is given."""
    from huggingface_hub import HfApi

    api = api or HfApi()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    commit = api.upload_folder(folder_path=str(out), repo_id=repo_id, repo_type="dataset",
                               commit_message=f"matbench suites {revision or ''}".strip())
    if revision:
        api.create_tag(repo_id, tag=revision, repo_type="dataset", tag_message=f"matbench suites {revision}")
    return str(getattr(commit, "commit_url", commit))
