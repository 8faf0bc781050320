"""The committed default release under suites/: loadable offline and equal to what the generator makes."""

from __future__ import annotations

import re
from pathlib import Path

from matbench.data_gen import SUITES
from matbench.data_gen.publish import config_hash, feature_type
from tests.helpers import dialog_sources

RELEASE = Path(__file__).resolve().parents[1] / "suites"


def card_table() -> dict[str, tuple[str, bool, str, int, str]]:
    card = (RELEASE / "README.md").read_text()
    rows = re.findall(r"^\| (\w+) \| ([^|]+) \| (yes|no) \| (\w+) \| (\d+) \| `([0-9a-f]{64})` \|$", card, re.MULTILINE)
    return {
        name: (summary, contract == "yes", version, int(n), digest)
        for name, summary, contract, version, n, digest in rows
    }


def test_the_release_holds_every_suite_as_generated_now(tmp_path):
    from datasets import load_dataset

    table = card_table()
    assert sorted(table) == SUITES.names()
    assert "Generated with seed 0 " in (RELEASE / "README.md").read_text()
    for name, (summary, contract, version, n, digest) in table.items():
        suite = SUITES.get(name)
        rows = suite.dataset_rows(0, None, dialog_sources())
        assert (summary, contract) == (suite.summary, suite.contract) and summary
        assert (version, n, digest) == (suite.version, len(rows), config_hash(rows)), (
            f"suites/ is stale for {name}: regenerate it with the command in docs/datasets.md"
        )
        ds = load_dataset(str(RELEASE), name, split="test", cache_dir=str(tmp_path))
        assert ds.num_rows == n and ds.features == suite.features()
        assert [r["content_hash"] for r in ds] == [r["content_hash"] for r in rows]
        card = (RELEASE / "README.md").read_text()
        for field, feature in ds.features.items():  # the card documents the type that loads
            assert f"| `{field}` | `{feature_type(feature)}` |" in card, (name, field)


def test_the_readme_suite_table_gives_the_rows_each_default_release_has():
    """The docs' suite table states each config's default row count: it is the release's."""
    readme = (RELEASE.parent / "docs" / "datasets.md").read_text()
    stated = {
        m.group(1): int(m.group(2).replace(",", ""))
        for m in re.finditer(r"^\| (\w+) \| ([\d,]+)\b", readme, re.MULTILINE)
    }
    assert {name: stated.get(name) for name in SUITES.names()} == {name: row[3] for name, row in card_table().items()}
