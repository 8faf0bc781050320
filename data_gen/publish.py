"""Write suites as a Hugging Face dataset repository (parquet + dataset card), and publish it.

Layout: `data/<config>/test-00000-of-00001.parquet` per suite and a README.md whose YAML
`configs:` block makes `datasets.load_dataset(DIR, "<config>")` work offline. Everything is a
function of (suite, version, seed, n_items) and the generator revision, so two runs give
byte-identical files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from matbench.data_gen.base import SUITES, Suite

PARQUET = "data/{config}/test-00000-of-00001.parquet"


@dataclass(frozen=True)
class ConfigSummary:
    name: str
    version: str
    rows: int
    content_hash: str
    summary: str = ""  # what the config measures (Suite.summary)
    contract: bool = True  # part of the memory contract (`matbench eval --suite all`)

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.name, "version": self.version, "rows": self.rows, "content_hash": self.content_hash}


def write_config(out: Path, suite: Suite, rows: list[dict[str, Any]]) -> Path:
    import datasets
    from datasets import Dataset

    datasets.disable_progress_bars()
    path = out / PARQUET.format(config=suite.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(rows, features=suite.features()).to_parquet(str(path))
    return path


def config_hash(rows: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row["content_hash"].encode())
    return digest.hexdigest()


def write_repo(
    out: Path, suites: list[str], seed: int, n: int | None, revision: str | None, sources: Any = None
) -> list[ConfigSummary]:
    """Generate every named suite into `out` and write its dataset card (`sources`: the user's
    dialog copies, for the harvest suite)."""
    summaries = []
    for name in suites:
        suite = SUITES.get(name)
        rows = suite.dataset_rows(seed, n, sources)
        write_config(out, suite, rows)
        summaries.append(
            ConfigSummary(name, suite.version, len(rows), config_hash(rows), suite.summary, suite.contract)
        )
    (out / "README.md").write_text(dataset_card(summaries, seed, revision))
    benchmark = eval_yaml([s.name for s in summaries])
    if benchmark:
        (out / "eval.yaml").write_text(benchmark)
    return summaries


def eval_yaml(configs: list[str]) -> str | None:
    """The Hub's benchmark registration (`eval.yaml` at the repo root: name, description, framework,
    tasks with config and split) for the declared tasks whose suite the repository holds."""
    import yaml

    from matbench.protocol.hub_tasks import FRAMEWORK, HUB_TASKS

    tasks = [t for t in HUB_TASKS if t.suite in configs]
    if not tasks:
        return None
    description = (
        "matbench: semantic materialization in sparse KV-cache serving. Donor pairs differ in one "
        "evicted source event; the model is served the same kept cache rows in both and asked about "
        "the source. Tasks: " + "; ".join(f"{t.id} = {t.what}" for t in tasks) + "."
    )
    return yaml.safe_dump(
        {
            "name": "matbench",
            "description": description,
            "evaluation_framework": FRAMEWORK,
            "tasks": [t.as_eval_yaml() for t in tasks],
        },
        sort_keys=False,
        width=100,
    )


def dataset_card(summaries: list[ConfigSummary], seed: int, revision: str | None) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(
        license="mit",
        pretty_name="matbench donor-pair suites",
        task_categories=["text-generation"],
        tags=["kv-cache", "kv-eviction", "materialization", "donor-pairs", "matbench"],
        configs=[
            {"config_name": s.name, "data_files": [{"split": "test", "path": PARQUET.format(config=s.name)}]}
            for s in summaries
        ],
    )
    table = "\n".join(
        f"| {s.name} | {s.summary} | {'yes' if s.contract else 'no'} | {s.version} | {s.rows} | `{s.content_hash}` |"
        for s in summaries
    )
    # Configs of references to the user's dialogs (harvest, harvest_freeform) describe their own
    # fields in a section of their own; the donor-pair configs share one field table.
    sections = {s.name: getattr(SUITES.get(s.name), "card_section", None) for s in summaries}
    donor_configs = [name for name, section in sections.items() if section is None]
    fields = field_table(SUITES.get(donor_configs[0] if donor_configs else "discovery"))
    harvest = "".join(section() for section in sections.values() if section is not None)
    template = resources.files("matbench.data_gen").joinpath("templates", "dataset_card.md").read_text()
    return str(
        DatasetCard.from_template(
            data,
            template_str=template,
            example_config=summaries[0].name if summaries else "discovery",
            seed=seed,
            revision=revision or "unknown",
            table=table,
            fields=fields,
            harvest=harvest,
        )
    )


def feature_type(feature: Any) -> str:
    """A `datasets` feature as a short type name: string, int64, list<string>, list<struct{...}>."""
    from datasets import Sequence, Value

    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, Sequence):
        inner = feature_type(feature.feature)
        return f"list<{inner}>" if feature.length == -1 else f"list<{inner}>[{feature.length}]"
    if isinstance(feature, list):
        return f"list<{feature_type(feature[0])}>"
    if isinstance(feature, dict):
        return "struct{" + ", ".join(f"{k}: {feature_type(v)}" for k, v in feature.items()) + "}"
    return type(feature).__name__


def field_table(suite: Suite) -> str:
    features = suite.features()
    return "\n".join(f"| `{k}` | `{feature_type(features[k])}` | {doc} |" for k, doc in suite.field_docs().items())


def push_to_hub(out: Path, repo_id: str, revision: str | None = None, api: Any = None) -> str:
    """Upload the repository folder to a Hub dataset repo; tag it when `revision` is given."""
    from huggingface_hub import HfApi

    api = api or HfApi()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(out),
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"matbench suites {revision or ''}".strip(),
    )
    if revision:
        api.create_tag(repo_id, tag=revision, repo_type="dataset", tag_message=f"matbench suites {revision}")
    return str(getattr(commit, "commit_url", commit))
