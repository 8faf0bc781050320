"""kvpress presses as `--policy` spells them: `SnapKVPress(window_size=32)`, wrappers with their
inner press, `AdaKVPress(press=KnormPress(), alpha_safeguard=0.1)`, and lists of presses,
`ComposedPress(presses=[StreamingLLMPress(), KnormPress()])`.

`PressCall` is the parsed call (frozen, so a policy that holds one stays hashable and its spec
rebuilds it); `REFUSED` declares each kvpress press matbench does not drive and why, checked when
the policy is parsed, before any model loads. How a supported press is driven is the adapter's
(`kvpress_adapter`): a plain scorer through its `score`, every other press through its own
`forward_hook` (`kvpress_driver`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matbench.errors import MatbenchError

# Press -> why matbench does not drive it (one line each, as the refusal prints it).
REFUSED: dict[str, str] = {
    "ObservedAttentionPress": "it scores rows by the eager kernel's attention weights, which matbench's observation "
    "forward does not materialise; the built-in policy h2o is the same score (tested against this press)",
    "QFilterPress": "it downloads per-model filters from the Hub when it attaches to a model",
    "KVzapPress": "it downloads a per-model scorer from the Hub when it attaches to a model",
    "ExpectedAttentionStatsPress": "it downloads per-model query statistics from the Hub when it attaches to a model",
    "DuoAttentionPress": "it downloads per-model head patterns (or scores heads on a dataset) when it attaches",
    "LUKVPress": "it downloads per-model budget curves when it attaches to a model",
    "RestoreKVPress": "it loads a PEFT adapter into the model and appends learned rows to the cache",
    "FastKVzipPress": "it downloads per-model gates and scores rows in its own context manager",
    "KVzipPress": "it scores rows by replaying the context in extra forward passes after the prefill "
    "(its own context manager), which matbench's single observation forward does not run",
    "KVgradPress": "it scores rows by backward passes over the context (its own context manager)",
    "KVComposePress": "it runs the prompt a second time with eager attention (its own context manager)",
    "FinchPress": "it needs the question after a delimiter token in the same prefill, resizes the model's "
    "embeddings and re-rotates the kept keys",
    "KeyRerotationPress": "it re-rotates the kept keys to new positions, so its rows are not the prefill's; "
    "audit its inner press by name",
    "MergingPress": "it folds dropped values into kept rows, so its rows are not the prefill's; matbench's "
    "policy merging is that positive control",
    "CAMPress": "it merges values into kept rows while decoding",
    "ThinKPress": "it zeroes key channels instead of choosing rows",
    "DecodingPress": "it compresses while decoding (every N generated tokens) and keeps every row of the "
    "prefill; audit its base_press by name",
    "CompressionRatioDecodingPress": "it compresses while decoding and keeps every row of the prefill; "
    "audit its base_press by name",
    "PrefillDecodingPress": "its decoding press changes the rows while the answer is generated; audit its "
    "prefilling_press by name",
}

# Presses whose own arguments decide how many rows they keep: a matbench budget does not apply.
OWN_BUDGET: dict[str, str] = {
    "ComposedPress": "each press of presses=[...] keeps its own compression_ratio",
    "PerLayerCompressionPress": "compression_ratios=[...] gives every layer its own",
    "DMSPress": "threshold= decides which rows it masks",
    "SimLayerKVPress": "lazy_threshold= decides which layers it compresses",
}


def kvpress_package() -> types.ModuleType:
    """kvpress as a bare package entry: its submodules import, its `__init__` never runs (it
    patches every transformers attention function and imports presses with extra dependencies)."""
    if "kvpress" not in sys.modules:
        import importlib.util

        spec = importlib.util.find_spec("kvpress")
        if spec is None or not spec.submodule_search_locations:
            raise MatbenchError("the kvpress policy needs kvpress: pip install --no-deps kvpress")
        package = types.ModuleType("kvpress")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["kvpress"] = package
    return sys.modules["kvpress"]


def find_press(name: str) -> type:
    """kvpress's press class `name` (e.g. `SnapKVPress`), whether or not matbench drives it."""
    module = _press_modules(kvpress_package().__path__[0]).get(name) if name.endswith("Press") else None
    if module is None:
        raise MatbenchError(f"kvpress has no press {name!r}; name a class such as SnapKVPress or KnormPress")
    try:
        return getattr(importlib.import_module(f"kvpress.presses.{module}"), name)
    except ImportError as err:
        raise MatbenchError(
            f"kvpress {name} needs {err.name}, which is not installed: pip install {err.name}"
        ) from None


@functools.cache
def _press_modules(package: str) -> dict[str, str]:
    """Press class name -> the module of `package`/presses that defines it, read once a process:
    kvpress's module names do not follow its class names (LeverageScorePress lives in
    leverage_press.py), and a policy asks for its class on every member it scores."""
    found: dict[str, str] = {}
    for path in sorted((Path(package) / "presses").glob("*.py")):
        for name in re.findall(r"^class (\w+Press)\(", path.read_text(), re.MULTILINE):
            found.setdefault(name, path.stem)
    return found


def supported_press(name: str) -> type:
    """kvpress's press class `name`, one matbench drives, or a one-line refusal saying why not."""
    if name in REFUSED:
        raise MatbenchError(f"matbench does not audit kvpress {name}: {REFUSED[name]}")
    if name in ("BasePress", "ScorerPress"):
        raise MatbenchError(f"{name} is kvpress's base class; name a press such as SnapKVPress or AdaKVPress")
    return find_press(name)


def plain_scorer_class(cls: type) -> bool:
    """Whether `cls` chooses rows as kvpress's `ScorerPress` does: the top rows of its `score`."""
    scorer = importlib.import_module("kvpress.presses.scorer_press").ScorerPress
    return issubclass(cls, scorer) and getattr(cls, "compress", None) is scorer.compress


@dataclass(frozen=True)
class PressCall:
    """`name(key=value, ...)`: one press and its keyword arguments, sorted by key; a value is a
    literal, a `PressCall` (a wrapper's inner press) or a tuple of them (a list in the text)."""

    name: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str) -> PressCall:
        """The call `text` spells, or a one-line error naming what is wrong."""
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            raise MatbenchError(
                f"policy kvpress takes a press call, as kvpress:SnapKVPress(window_size=32) (got {text!r})"
            ) from None
        if isinstance(node, ast.Name):  # `KnormPress` without parentheses
            node = ast.Call(func=node, args=[], keywords=[])
        value = _value(node, text)
        if not isinstance(value, PressCall):
            raise MatbenchError(f"policy kvpress takes a press call, as kvpress:SnapKVPress() (got {text!r})")
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.kwargs).get(key, default)

    def without(self, *keys: str) -> PressCall:
        return PressCall(self.name, tuple((k, v) for k, v in self.kwargs if k not in keys))

    def render(self) -> str:
        """The text `parse` reads back: `Name(key=value, ...)`."""
        return f"{self.name}({', '.join(f'{k}={_render(v)}' for k, v in self.kwargs)})"

    def calls(self) -> list[PressCall]:
        """This call and every press nested in its arguments, outermost first."""
        out = [self]
        for _, value in self.kwargs:
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, PressCall):
                    out += item.calls()
        return out

    def press_class(self) -> type:
        return supported_press(self.name)

    def build(self) -> Any:
        """A fresh press object (nested presses built first, lists as lists)."""
        kwargs = {k: _built(v) for k, v in self.kwargs}
        try:
            return self.press_class()(**kwargs)
        except (TypeError, AssertionError, ValueError) as err:
            raise MatbenchError(f"kvpress {self.render()} cannot be built: {err or type(err).__name__}") from None


def _value(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.args or any(k.arg is None for k in node.keywords):
            raise MatbenchError(
                f"kvpress press arguments are keywords, as SnapKVPress(window_size=32) or "
                f"AdaKVPress(press=KnormPress()) (got {text!r})"
            )
        kwargs = {k.arg: _value(k.value, text) for k in node.keywords if k.arg is not None}
        return PressCall(node.func.id, tuple(sorted(kwargs.items())))
    if isinstance(node, (ast.List, ast.Tuple)):
        return tuple(_value(item, text) for item in node.elts)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise MatbenchError(
            f"kvpress press arguments must be literals or presses, as SnapKVPress(window_size=32) (got {text!r})"
        ) from None


def _render(value: Any) -> str:
    if isinstance(value, PressCall):
        return value.render()
    if isinstance(value, tuple):
        return f"[{', '.join(_render(v) for v in value)}]"
    return repr(value)


def _built(value: Any) -> Any:
    if isinstance(value, PressCall):
        return value.build()
    if isinstance(value, tuple):
        return [_built(v) for v in value]
    return value


@dataclass(frozen=True)
class PressSupport:
    """How matbench treats one press of the installed kvpress: `how` is "scored" (a plain
    scorer: its `score`, matbench's top rows), "hooked" (its own forward hook) or "refused";
    `note` the reason for a refusal, or what decides the budget of a press that keeps its own."""

    name: str
    how: str
    note: str = ""


def press_table() -> list[PressSupport]:
    """Every press class the installed kvpress defines, in name order, with how matbench drives it."""
    names = sorted(set(_press_modules(kvpress_package().__path__[0])) - {"BasePress", "ScorerPress"})
    out = []
    for name in names:
        if name in REFUSED:
            out.append(PressSupport(name, "refused", REFUSED[name]))
            continue
        how = "scored" if plain_scorer_class(find_press(name)) else "hooked"
        out.append(PressSupport(name, how, OWN_BUDGET.get(name, "")))
    return out
