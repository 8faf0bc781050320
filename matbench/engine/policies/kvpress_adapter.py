"""Any kvpress `ScorerPress` as a matbench policy: `--policy 'kvpress:SnapKVPress(window_size=32)@0.5'`.

kvpress cannot report the rows a press keeps and its hooks read forward keywords transformers 5.17
no longer passes; but a scorer's `score(module, hidden_states, keys, values, attentions, kwargs)`
needs only the layer's attention input and rotary embeddings, which matbench's observation
forward hands every layer (`observe`). So matbench calls `score` from its own hook and keeps the
top rows itself. Importing the `kvpress` package patches every transformers attention function
(`kvpress/__init__.py`): only the press modules are imported here, under a bare package entry, so
that patch never runs in matbench's process. Install kvpress with `pip install --no-deps kvpress`
(its metadata pins transformers<5.3; its scorers run on 5.17-5.24 when driven this way).

`question=True` in the call is matbench's, not the press's (kvpress makes a press question-aware
by compressing a context that ends with the question, in its pipeline): the arm's question is
appended for scoring only, as for the built-in policies (`ScoredPolicy`), and the spec records it:
`kvpress:SnapKVPress(window_size=32, question=True)@0.5`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

import ast
import importlib
import importlib.util
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.budget import Budget
from matbench.engine.policies.scored import ScoredPolicy
from matbench.errors import MatbenchError

CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def find_press(name: str) -> type:
    """kvpress's press class `name` (e.g. `SnapKVPress`), without running `kvpress/__init__.py`."""
    if "kvpress" not in sys.modules:
        spec = importlib.util.find_spec("kvpress")
        if spec is None or not spec.submodule_search_locations:
            raise MatbenchError("the kvpress policy needs kvpress: pip install --no-deps kvpress")
        package = types.ModuleType("kvpress")  # a bare entry: the submodules load, __init__ never runs
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["kvpress"] = package
    # kvpress's module names do not follow its class names (LeverageScorePress lives in
    # leverage_press.py): find the file that defines the class.
    folder = Path(sys.modules["kvpress"].__path__[0]) / "presses"
    defining = [f.stem for f in sorted(folder.glob("*_press*.py")) if f"class {name}(" in f.read_text()]
    if not defining:
        raise MatbenchError(f"kvpress has no press {name!r}; name a class such as SnapKVPress or KnormPress")
    return getattr(importlib.import_module(f"kvpress.presses.{defining[0]}"), name)


def press_class(name: str) -> type:
    """kvpress's scorer press `name`: one whose `score` matbench can call."""
    cls = find_press(name)
    scorer = importlib.import_module("kvpress.presses.scorer_press").ScorerPress
    if not issubclass(cls, scorer):
        raise MatbenchError(
            f"{name} is not a kvpress ScorerPress (it chooses rows in its own compress); "
            "matbench drives scorer presses only"
        )
    return cls


@POLICIES.register("kvpress")
@dataclass(frozen=True)
class KVPress(ScoredPolicy):
    """A kvpress scorer press, its `score` called on every layer with the attention input of every
    prefill token (kvpress scores a whole context). Its `compression_ratio` is the budget unless
    `--budget` or `@BUDGET` gives one; `question=True` scores with the arm's question appended."""

    press: str = ""
    kwargs: tuple[tuple[str, Any], ...] = field(default=())
    observe = 1 << 30
    name = "kvpress"
    usage = "kvpress:PRESS(key=value,...,question=False)"

    @classmethod
    def from_args(cls, args: str | None) -> KVPress:
        match = CALL.match(args or "")
        if not match:
            raise MatbenchError(
                f"policy kvpress takes a press call, as kvpress:SnapKVPress(window_size=32) (got {args!r})"
            )
        try:
            call = ast.parse(f"f({match.group(2) or ''})", mode="eval").body
            kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in call.keywords)  # type: ignore[attr-defined]
            if call.args or any(k is None for k, _ in kwargs):  # type: ignore[attr-defined]
                raise ValueError
        except (SyntaxError, ValueError):
            raise MatbenchError(
                f"kvpress press arguments must be keyword literals, as SnapKVPress(window_size=32) (got {args!r})"
            ) from None
        press_class(match.group(1))  # a missing kvpress or an unknown press fails here, in one line
        given = dict(kwargs)
        ratio = given.pop("compression_ratio", None)
        question = given.pop("question", False)
        if not isinstance(question, bool):
            raise MatbenchError(f"kvpress question= takes True or False (got {question!r})")
        return cls(
            budget=Budget(ratio=float(ratio)) if ratio is not None else None,
            question=question,
            press=match.group(1),
            kwargs=tuple(sorted(given.items())),
        )

    def arguments(self) -> dict[str, Any]:
        return {"press": self.press, **dict(self.kwargs), **({"question": True} if self.question else {})}

    @property
    def spec(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments().items() if k != "press")
        return f"kvpress:{self.press}({args})@{self.budget.spec if self.budget else '?'}"

    def build(self, total: int) -> Any:
        """The press, its `compression_ratio` the budget's over `total` rows (StreamingLLM's score
        reads it)."""
        budget = self.budget or Budget(ratio=0.0)
        ratio = budget.ratio if budget.ratio is not None else 1 - budget.n_kept(total) / total
        return press_class(self.press)(compression_ratio=ratio, **dict(self.kwargs))

    def score(self, view) -> torch.Tensor:
        press = self.build(view.keys.shape[1])
        module = view.module
        # kvpress sets `module.rotary_emb` in its context manager (Expected Attention reads it); set
        # as a plain instance attribute, never a registered submodule, and removed after the call.
        object.__setattr__(module, "rotary_emb", _RotaryShim(view))
        try:
            kwargs = {"position_embeddings": (view.rotary[0][None], view.rotary[1][None])}
            return press.score(module, view.hidden[None], view.keys[None], view.values[None], None, kwargs)[0]
        except AssertionError as err:
            raise MatbenchError(
                f"kvpress {self.press} refused this layer ({err}); presses that need eager "
                "attention weights (ObservedAttentionPress) have a matbench policy (h2o)"
            ) from None
        finally:
            object.__delattr__(module, "rotary_emb")


@dataclass
class _RotaryShim:
    """`module.rotary_emb(x, position_ids)` as kvpress calls it, from the layer's own rotary."""

    view: Any

    def __call__(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.view.rotary_at(position_ids[0])
        return cos[None], sin[None]
