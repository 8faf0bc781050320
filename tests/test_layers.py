"""The package's layers: every import of an installed module goes down (or stays in its layer),
never up, and the metric-side layers never import torch, not even lazily."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Where each top-level folder is installed (pyproject's package-dir).
FOLDERS = {
    "matbench": ROOT / "matbench",
    "matbench.data_gen": ROOT / "data_gen",
    "matbench.evaluators": ROOT / "evaluators",
    "matbench.leaderboard": ROOT / "leaderboard",
}
# Bottom to top, as docs/layout.md and CONTRIBUTING describe them.
LAYERS = [
    ("matbench.errors", "matbench.registry", "matbench.stats", "matbench.plugins", "matbench"),
    ("matbench.protocol",),
    ("matbench.data_gen", "matbench.evaluators"),
    ("matbench.results",),
    ("matbench.kernels",),
    ("matbench.models",),
    ("matbench.engine",),
    ("matbench.run",),
    ("matbench.leaderboard",),
    ("matbench.bench",),
    ("matbench.commands", "matbench.cli", "matbench.__main__"),
]
TORCH_FREE = (
    "matbench.errors",
    "matbench.registry",
    "matbench.stats",
    "matbench.plugins",
    "matbench.protocol",
    "matbench.data_gen",
    "matbench.evaluators",
    "matbench.results",
    "matbench.leaderboard",
)


def _layer(module: str) -> int:
    best = None
    for k, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (k, name)
    if best is None:
        raise AssertionError(f"{module} is in no layer; add it to LAYERS (and to docs/layout.md)")
    return best[0]


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            if package == "matbench" and any(path.is_relative_to(f) for f in FOLDERS.values() if f != folder):
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}  # `from matbench import stats`
    return out


MODULES = _modules()


def test_every_module_is_found():
    assert {
        "matbench.protocol.records",
        "matbench.engine.pair_engine",
        "matbench.data_gen.base",
        "matbench.evaluators.base",
        "matbench.leaderboard.site",
        "matbench.cli",
    } <= set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down(module):
    mine = _layer(module)
    for target in _imports(MODULES[module]):
        if target.split(".")[0] != "matbench" or target not in MODULES and target.rsplit(".", 1)[0] not in MODULES:
            continue
        assert _layer(target) <= mine, f"{module} (layer {mine}) imports {target} (layer {_layer(target)})"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(TORCH_FREE)))
def test_metric_side_modules_never_import_torch(module):
    heavy = {t for t in _imports(MODULES[module]) if t.split(".")[0] in ("torch", "transformers")}
    assert not heavy, f"{module} imports {sorted(heavy)}"


def test_every_package_folder_is_installed():
    """pyproject lists its packages by name: a folder with an `__init__.py` left out of that list
    works in the editable install and is missing from a built wheel (matbench.engine.policies was)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {name: ROOT / folder for name, folder in config["package-dir"].items()} == FOLDERS
    on_disk = set()
    for package, folder in FOLDERS.items():
        for init in folder.rglob("__init__.py"):
            if package == "matbench" and any(init.is_relative_to(f) for f in FOLDERS.values() if f != folder):
                continue
            on_disk.add(".".join((package, *init.parent.relative_to(folder).parts)))
    assert len(on_disk) == 13
    assert set(config["packages"]) == on_disk
