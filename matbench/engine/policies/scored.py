"""The scoring policy: kvpress's `ScorerPress` on matbench's seam.

A subclass overrides `score` (one layer's rows -> one score per KV head and row); the base keeps
the top of each layer's KV heads within the budget, never a banned row (the source's, in
source-evicted mode), always the header's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from matbench.engine.policies.base import KeptRows, SelectionContext, ServingPolicy
from matbench.engine.policies.budget import Budget
from matbench.errors import MatbenchError

if TYPE_CHECKING:
    import torch

    from matbench.engine.policies.observe import LayerView
    from matbench.engine.runtime import ModelRunner


# The attention inputs one shared observation may hold (layers x tokens x hidden); a longer one
# (a 32k-token member of a 12B model holds ~9 GB) is observed again by each policy instead.
MAX_SHARED_VIEW_BYTES = 1 << 31


@dataclass(frozen=True)
class ScoredPolicy(ServingPolicy):
    """Scores every row of a member's prefill per layer and KV head and keeps the highest
    `budget.n_kept(T)` in each (kvpress's `compute_n_kept` and per-head `topk`). The scores are
    question-agnostic: computed on the prefill alone, as kvpress compresses a context before the
    question comes.

    `observe` is how many of the prefill's last tokens' queries `score` reads (0: none, keys and
    values only; a large number: every token), recomputed by `matbench.engine.policies.observe`.

    `question=true` (a policy that observes queries only) is the question-aware mode: the arm's
    question is appended after the member's rows for scoring only (`observe.with_question`), so
    the observed tokens end with it, as when kvpress compresses a context that holds the question;
    the served rows are the member's, the question is asked again at serving. It is part of the
    spec (`snapkv:question=True@0.5`), so results files and leaderboard rows record it.
    """

    budget: Budget | None = None
    question: bool = False
    observe: ClassVar[int] = 0

    def __post_init__(self) -> None:
        if self.question and not self.observed_tokens():
            raise MatbenchError(
                f"policy {self.name!r} scores keys and values only: a question cannot change its "
                "picks; drop question=true (it applies to snapkv, tova, h2o, ...)"
            )

    @property
    def budgeted(self) -> bool:
        return True

    @property
    def question_aware(self) -> bool:
        return self.question

    def with_budget(self, budget: Budget) -> ScoredPolicy:
        return dataclasses.replace(self, budget=budget)

    @property
    def spec(self) -> str:
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        changed = [f"{k}={v}" for k, v in self.arguments().items() if v != defaults[k]]
        args = f":{','.join(changed)}" if changed else ""
        return f"{self.name}{args}@{self.budget.spec if self.budget else '?'}"

    def observed_tokens(self) -> int:
        """Trailing prefill tokens whose queries `score` reads (default: the class's `observe`)."""
        return self.observe

    def score(self, view: LayerView) -> torch.Tensor:
        """`[H_kv, T]`: higher keeps. `view.keys`/`view.values` are `[H_kv, T, D]`."""
        raise NotImplementedError

    def layer_scorer(self, total: int, context: SelectionContext) -> Callable[[LayerView], torch.Tensor]:
        """What scores each layer of one member of `total` rows (default: `score`); a policy that
        holds state across a member's layers makes it afresh here."""
        return self.score

    def observed_scores(
        self,
        runner: ModelRunner,
        cache,
        ids: tuple[int, ...],
        n: int,
        scorer: Callable[[LayerView], torch.Tensor],
        context: SelectionContext,
    ) -> list[torch.Tensor]:
        """`scorer` on every layer of one observation of the member's last `n` tokens (a forward
        of those tokens, `observe`). The observation's views live in the pair's memo: every
        policy and budget that observes as many tokens of this member scores the same forward
        (SnapKV, PyramidKV and AdaKV over SnapKV share one; every kvpress press shares one)."""
        import torch

        from matbench.engine.policies.observe import observe, observed_views

        observed = min(n, len(ids))
        config = runner.text_config
        held = config.num_hidden_layers * observed * config.hidden_size * cache.keys[0].element_size()
        if held > MAX_SHARED_VIEW_BYTES:  # a long context: each policy observes on its own
            return observe(runner, cache, ids, n, scorer)
        key = ("views", id(cache), observed)
        if key not in context.memo:
            context.memo[key] = observed_views(runner, cache, ids, n)
        with torch.inference_mode():  # as inside the observation forward, whose tensors these are
            return [scorer(view) for view in context.memo[key]]

    def scores_key(self) -> ScoredPolicy:
        """What a member's scores depend on, as a memo key: not the budget (one scoring serves
        every budget of a run), unless the policy's scores are its choice at that budget."""
        return dataclasses.replace(self, budget=None)

    def layer_budgets(self, total: int, layers: int) -> list[int]:
        """Rows each layer keeps per KV head (PyramidKV gives lower layers more)."""
        if self.budget is None:
            raise MatbenchError(
                f"policy {self.name!r} needs a budget: --budget 0.5 (fraction removed) or 256 "
                f"(tokens kept), or {self.name}@0.5"
            )
        return [self.budget.n_kept(total)] * layers

    def allocate(self, scores: torch.Tensor, budgets: list[int]) -> torch.Tensor:
        """`[L, H_kv, T]` bool: each layer's KV heads keep their own top `budgets[l]` rows."""
        import torch

        chosen = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device)
        for layer, n in enumerate(budgets):
            chosen[layer].scatter_(-1, scores[layer].topk(n, dim=-1).indices, True)
        return chosen

    def _runner(self, context: SelectionContext) -> ModelRunner:
        if context.runner is None:
            raise MatbenchError(
                f"policy {self.name!r} observes queries and needs the model (a SelectionContext runner)"
            )
        return context.runner

    def layer_scores(self, member, cache, context: SelectionContext) -> torch.Tensor:
        """`[L, H_kv, T]` scores of every layer, in at least float32."""
        import torch

        # observe reads the model (transformers): imported when a policy first scores, so that
        # naming a policy (`--policy`) costs no torch import
        from matbench.engine.policies.observe import views, with_question

        n = self.observed_tokens()
        total, ids = int(cache.positions.shape[0]), tuple(member.input_ids)
        runner = self._runner(context) if n else None
        if self.question:
            if not context.question:
                raise MatbenchError(f"policy {self.spec!r} is question-aware but was given no question to score with")
            key = ("with_question", id(cache), context.question)  # shared by the question-aware policies of a pair
            if key not in context.memo:
                context.memo[key] = with_question(self._runner(context), cache, context.question)
            cache, ids = context.memo[key], (*ids, *context.question)
        scorer = self.layer_scorer(total, context)
        if runner is not None:  # n > 0
            per_layer = self.observed_scores(runner, cache, ids, n, scorer, context)
        else:
            per_layer = [scorer(view) for view in views(cache)]
        stacked = torch.stack([s.reshape(s.shape[-2:]) for s in per_layer])[
            ..., :total
        ]  # the question's rows score nothing
        return stacked.to(torch.promote_types(stacked.dtype, torch.float32))

    def keep(self, arm, member, cache, context: SelectionContext | None = None) -> tuple[int, ...] | KeptRows:
        context = context if context is not None else SelectionContext()
        key = ("kept", self, id(cache), context.banned, context.question if self.question else ())
        if key not in context.memo:
            context.memo[key] = self._choose(member, cache, context)
        return context.memo[key]

    def _choose(self, member, cache, context: SelectionContext) -> tuple[int, ...] | KeptRows:
        # Scores do not depend on the budget or the banned rows: one scoring per member serves
        # every budget and source mode of a run.
        key = ("scores", self.scores_key(), id(cache), context.question if self.question else ())
        if key not in context.memo:
            context.memo[key] = self.layer_scores(member, cache, context)
        scores = context.memo[key].clone()
        layers, _, total = scores.shape
        header = list(range(*member.header_span))
        banned = sorted(context.banned)
        scores[:, :, header] = float("inf")
        scores[:, :, banned] = float("-inf")
        room = total - len(banned)
        budgets = [min(max(n, len(header)), room) for n in self.layer_budgets(total, layers)]
        chosen = self.allocate(scores, budgets)
        chosen[:, :, banned] = False
        chosen[:, :, header] = True
        slots = chosen.any(dim=(0, 1)).nonzero().flatten()
        heads = chosen[:, :, slots].cpu().numpy()
        slots_tuple = tuple(int(s) for s in slots)
        return slots_tuple if heads.all() else KeptRows(slots_tuple, np.asarray(heads, dtype=bool))
