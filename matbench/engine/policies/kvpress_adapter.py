"""Any kvpress press as a matbench policy: `--policy 'kvpress:SnapKVPress(window_size=32)@0.5'`,
wrappers with their inner press (`'kvpress:AdaKVPress(press=KnormPress())@0.5'`), lists of presses
(`'kvpress:ComposedPress(presses=[StreamingLLMPress(compression_ratio=0.25), KnormPress(compression_ratio=0.5)])'`).

kvpress cannot report the rows a press keeps and its hooks read forward keywords transformers 5
no longer passes. matbench's observation forward hands every layer its attention input, keys,
values and rotary embeddings (`observe`), and drives the press from there in one of two ways:

- a plain scorer (a `ScorerPress` that keeps kvpress's top-k `compress`): its `score` is called
  and matbench keeps the top rows itself, so one scoring serves every budget of a run and source
  mode `evicted` spends the budget around the banned rows;
- every other press (per-head budgets as AdaKV, chunked or block selection, per-layer budgets as
  PyramidKV, masking presses as DMS, chains as ComposedPress): its own `forward_hook` runs on the
  layer (`kvpress_driver`) and the rows it left, or did not mask, are the rows served.

Presses matbench does not drive are refused by name with the reason (`kvpress_calls.REFUSED`).
Importing the `kvpress` package patches every transformers attention function
(`kvpress/__init__.py`): only the press modules are imported, under a bare package entry, so
that patch never runs in matbench's process. Install kvpress with `pip install --no-deps kvpress`
(its metadata pins transformers<5.3; its presses run on 5.17-5.25 when driven this way).

`question=True` in the call is matbench's, not the press's (kvpress makes a press question-aware
by compressing a context that ends with the question, in its pipeline): the arm's question is
appended for scoring only, as for the built-in policies (`ScoredPolicy`), and the spec records it:
`kvpress:SnapKVPress(window_size=32, question=True)@0.5`. A press driven through its hook may
keep some of the question's rows: they are not served (the question is asked again), so it
serves fewer of the member's rows than its budget.

A press's random draws (RandomPress without a seed, LeverageScorePress's sketch) are seeded with
the layer index on each call, so a run is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from matbench.engine.policies.base import POLICIES
from matbench.engine.policies.budget import Budget
from matbench.engine.policies.kvpress_calls import (  # noqa: F401  (find_press: the tests' raw lookup)
    OWN_BUDGET,
    PressCall,
    find_press,
    plain_scorer_class,
    supported_press,
)
from matbench.engine.policies.scored import ScoredPolicy
from matbench.errors import MatbenchError

if TYPE_CHECKING:
    import torch

    from matbench.engine.policies.base import SelectionContext

press_class = supported_press  # the name the tests and older callers use


@POLICIES.register("kvpress")
@dataclass(frozen=True)
class KVPress(ScoredPolicy):
    """A kvpress press, driven on every layer with the attention input of every prefill token
    (kvpress compresses a whole context): a plain scorer through its `score`, any other press
    (AdaKVPress(press=...), ChunkKVPress, BlockPress, PyramidKVPress, DMSPress, ComposedPress,
    ...) through its own forward hook. Its `compression_ratio` is the budget unless `--budget` or
    `@BUDGET` gives one; `question=True` scores with the arm's question appended. A press that
    changes rows, decodes, downloads or runs its own forward passes is refused, saying why."""

    call: PressCall = field(default_factory=lambda: PressCall(""))
    observe = 1 << 30
    name = "kvpress"
    usage = "kvpress:PRESS(key=value,...,press=INNER(...),question=False)"

    @classmethod
    def from_args(cls, args: str | None) -> KVPress:
        call = PressCall.parse(args or "")
        for inner in call.calls():  # a missing kvpress, an unknown or refused press: one line here
            press_class(inner.name)
        ratio, question = call.get("compression_ratio"), call.get("question", False)
        if not isinstance(question, bool):
            raise MatbenchError(f"kvpress question= takes True or False (got {question!r})")
        if ratio is not None and call.name in OWN_BUDGET:
            raise MatbenchError(f"kvpress {call.name} takes no compression_ratio: {OWN_BUDGET[call.name]}")
        if ratio is not None and not isinstance(ratio, (int, float)):
            raise MatbenchError(f"kvpress compression_ratio= takes a number (got {ratio!r})")
        policy = cls(
            budget=Budget(ratio=float(ratio)) if ratio is not None else None,
            question=question,
            call=call.without("compression_ratio", "question"),
        )
        policy._build(100)  # arguments the press does not take fail before any model loads
        return policy

    @property
    def scored(self) -> bool:
        """A plain scorer (its `score`, matbench's top rows); else the press runs through its hook."""
        return plain_scorer_class(press_class(self.call.name))

    @property
    def budgeted(self) -> bool:
        return self.call.name not in OWN_BUDGET

    @property
    def honours_banned(self) -> bool:
        return self.scored

    def arguments(self) -> dict[str, Any]:
        return {"press": self.call.render(), **({"question": True} if self.question else {})}

    @property
    def spec(self) -> str:
        inside = self.call.render()[:-1]  # `Name(k=v, ...` without its closing parenthesis
        question = f"{'' if inside.endswith('(') else ', '}question=True" if self.question else ""
        budget = f"@{self.budget.spec if self.budget else '?'}" if self.budgeted else ""
        return f"kvpress:{inside}{question}){budget}"

    def layer_budgets(self, total: int, layers: int) -> list[int]:
        if not self.budgeted or not self.scored:
            return [total] * layers  # the press decides; `allocate` reads its choice
        return super().layer_budgets(total, layers)

    def scores_key(self) -> ScoredPolicy:
        # A press run through its hook scores by choosing: its choice depends on the budget.
        return super().scores_key() if self.scored else self

    def allocate(self, scores: torch.Tensor, budgets: list[int]) -> torch.Tensor:
        if self.scored:
            return super().allocate(scores, budgets)
        return scores > 0  # the hook's choice, kept rows 1 (and the header, +inf)

    def _build(self, total: int) -> Any:
        """The press, its `compression_ratio` the budget's over `total` rows (StreamingLLM's score
        reads it); a press that keeps its own budget as built."""
        press = self.call.build()
        if not self.budgeted:
            return press
        budget = self.budget or Budget(ratio=0.0)
        ratio = budget.ratio if budget.ratio is not None else 1 - budget.n_kept(total) / total
        try:
            press.compression_ratio = ratio
        except AttributeError:
            raise MatbenchError(
                f"kvpress {self.call.name} takes no budget (its compression_ratio is read-only)"
            ) from None
        return press

    def layer_scorer(self, total: int, context: SelectionContext) -> Callable[[Any], torch.Tensor]:
        from matbench.engine.policies.kvpress_driver import run_hook

        press = self._build(total)
        if context.runner is not None:
            press.post_init_from_model(context.runner.model)
        plain = self.scored

        def scorer(view) -> torch.Tensor:
            import torch

            module = view.module
            # kvpress sets `module.rotary_emb` in its context manager (Expected Attention reads it);
            # set as a plain instance attribute, never a registered submodule, and removed after.
            object.__setattr__(module, "rotary_emb", _RotaryShim(view))
            devices = [view.keys.device] if view.keys.device.type == "cuda" else []
            try:
                with torch.random.fork_rng(devices=devices):
                    torch.manual_seed(view.layer)
                    if not plain:
                        return run_hook(press, view, self.call.name).to(torch.float32)
                    kwargs = {"position_embeddings": (view.rotary[0][None], view.rotary[1][None])}
                    return press.score(module, view.hidden[None], view.keys[None], view.values[None], None, kwargs)[0]
            except AssertionError as err:
                raise MatbenchError(f"kvpress {self.call.name} refused this layer ({err})") from None
            finally:
                object.__delattr__(module, "rotary_emb")

        return scorer


@dataclass
class _RotaryShim:
    """`module.rotary_emb(x, position_ids)` as kvpress calls it, from the layer's own rotary."""

    view: Any

    def __call__(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.view.rotary_at(position_ids[0])
        return cos[None], sin[None]
