"""Extensions from outside the package: readouts, suites (generator + evaluator) and serving
policies register themselves when their module is imported.

`matbench` imports, before it parses its arguments, every module named in the environment
variable MATBENCH_PLUGINS (separated by the path separator; a dotted module name or a path to a
.py file) and every module an installed distribution declares under the entry-point group
`matbench.plugins`. A plugin that cannot be imported is one line naming it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from importlib.metadata import entry_points
from pathlib import Path

from matbench.errors import MatbenchError, first_line

ENV = "MATBENCH_PLUGINS"
GROUP = "matbench.plugins"


def _import(spec: str) -> None:
    try:
        if spec.endswith(".py"):
            path = Path(spec)
            module_spec = importlib.util.spec_from_file_location(f"matbench_plugin_{path.stem}", path)
            if module_spec is None or not path.is_file():
                raise FileNotFoundError(f"no such file {path}")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            importlib.import_module(spec)
    except MatbenchError:
        raise
    except Exception as exc:  # a plugin's own import error, whatever it is, becomes one line
        raise MatbenchError(
            f"plugin {spec!r} from {ENV} or the {GROUP!r} entry points could not be imported "
            f"({type(exc).__name__}: {first_line(exc)})"
        ) from None


def load_plugins() -> list[str]:
    """Import every plugin once; returns what was imported."""
    specs = [s for s in os.environ.get(ENV, "").split(os.pathsep) if s.strip()]
    specs += [ep.value for ep in entry_points(group=GROUP)]
    for spec in specs:
        _import(spec)
    return specs
