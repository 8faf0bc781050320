"""The serving-policy contract (a kvpress-style press: a dataclass, one method to override)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from matbench.engine.policies.budget import Budget
from matbench.errors import MatbenchError
from matbench.protocol.runspec import split_budget
from matbench.registry import Registry

if TYPE_CHECKING:
    from matbench.engine.cache import EventCache
    from matbench.engine.layout import MemberLayout
    from matbench.engine.runtime import ModelRunner
    from matbench.protocol.pairs import Arm


@dataclass(frozen=True)
class KeptRows:
    """A selection that differs by layer and KV head: `slots` as `keep` returns them (every row any
    head keeps), and `heads[l, h, i]` whether layer l's KV head h keeps `slots[i]` (bool array
    `[layers, kv_heads, len(slots)]`; header rows must be kept by every head)."""

    slots: tuple[int, ...]
    heads: Any  # numpy bool array [L, H_kv, len(slots)]


@dataclass
class SelectionContext:
    """What a policy may use beside one member's rows: the model (`runner`, for policies that
    observe queries), the slots it must not keep (`banned`: the source's rows in source-evicted
    mode, where the policy spends its budget on the rest), the arm's question (token ids, read
    only by a question-aware policy) and a memo the arms of one pair share (a question-agnostic
    policy scores a member once, however many arms it governs)."""

    runner: ModelRunner | None = None
    banned: frozenset[int] = frozenset()
    memo: dict = field(default_factory=dict)
    question: tuple[int, ...] = ()


@dataclass(frozen=True)
class ServingPolicy:
    """Chooses the rows of one prefilled member that a serving system keeps for one arm.

    `keep(arm, member, cache, context)` returns token slots of the member's global prefill, sorted and
    without repeats, the header's slots included (they precede every event and are served
    always), kept in every layer and KV head; or a `KeptRows` when the choice differs by layer
    and KV head (SnapKV-style per-head selection). `member` gives each slot's token id and original position (`input_ids`,
    `positions`, `header_span`, `event_spans`); `cache` its K/V rows, one tensor per layer of
    shape `[1, kv_heads, T, head_dim]`, for policies that score rows. The engine calls `keep` on
    both donor members and serves both the same kept set (see `matbench.engine.selection`).

    `name` is the registry name; `spec` the string that rebuilds the policy (`name:args`),
    recorded in results files and run specs.
    """

    name: ClassVar[str] = ""
    usage: ClassVar[str] = ""  # how `--policy` spells it, when not NAME:field=default,... (`matbench policies`)
    merges: ClassVar[bool] = False  # True where `merge` returns a cache (the engine skips the others)

    @classmethod
    def from_args(cls, args: str | None) -> ServingPolicy:
        """The policy from the text after `NAME:` (None when absent): `key=value` pairs separated
        by commas, one per dataclass field (`snapkv:window=32,kernel=7`)."""
        if not args:
            return cls()
        names = {f.name: f for f in argument_fields(cls)}
        # `snapkv:0.5`: a budget written where arguments go
        hint = f"; a budget follows @: did you mean {cls.name}@{args}?" if _is_number(args) else ""
        if not names:
            raise MatbenchError(f"policy {cls.name!r} takes no arguments (got {args!r}){hint}")
        values: dict[str, Any] = {}
        for part in args.split(","):
            key, eq, text = part.partition("=")
            if not eq or key.strip() not in names:
                raise MatbenchError(
                    f"policy {cls.name!r} takes {', '.join(f'{n}=' for n in names)} (got {part!r}){hint}"
                )
            values[key.strip()] = _convert(cls.name, names[key.strip()], text.strip())
        return cls(**values)

    def arguments(self) -> dict[str, Any]:
        """The policy's arguments as `from_args` reads them (every field but the budget)."""
        return {f.name: getattr(self, f.name) for f in argument_fields(type(self))}

    @property
    def spec(self) -> str:
        return self.name

    @property
    def is_oracle(self) -> bool:
        """True for the suite's own event selection (the paper's protocol)."""
        return False

    @property
    def budgeted(self) -> bool:
        """Whether the policy takes `--budget` (a scoring policy keeps a budget of rows)."""
        return False

    @property
    def question_aware(self) -> bool:
        """Whether `keep` reads the arm's question (`SelectionContext.question`): the engine then
        tokenizes it for each governed arm (a scoring policy's `question=true`)."""
        return False

    @property
    def honours_banned(self) -> bool:
        """Whether `keep` spends its budget around `SelectionContext.banned` (source mode
        `evicted` needs it); a policy that cannot steer its own choice drops them after it."""
        return True

    def with_budget(self, budget: Budget) -> ServingPolicy:
        raise MatbenchError(f"policy {self.name!r} takes no budget")

    def merge(self, cache: EventCache, kept: Any) -> EventCache | None:
        """A copy of `cache` whose kept rows absorbed the dropped ones (a merging policy, which sets
        `merges`), given `kept` `[L, H_kv, T]` bool, the rows each head serves; None (the
        default): rows are only dropped."""
        return None

    def keep(
        self, arm: Arm, member: MemberLayout, cache: EventCache, context: SelectionContext
    ) -> tuple[int, ...] | KeptRows:
        raise NotImplementedError


def argument_fields(cls: type) -> list[dataclasses.Field]:
    """The fields `NAME:key=value` sets: every init field but the budget, the policy's own first and
    the question-aware switch every scoring policy inherits last."""
    fields = [f for f in dataclasses.fields(cls) if f.init and f.name != "budget"]
    return sorted(fields, key=lambda f: f.name == "question")


def _convert(policy: str, spec: dataclasses.Field, text: str) -> Any:
    """`text` as the field's type (int, float, bool or str), or a one-line error."""
    kind = spec.type if isinstance(spec.type, str) else getattr(spec.type, "__name__", str(spec.type))
    try:
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("float"):
            return float(text)
        if kind.startswith("bool"):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
    except ValueError:
        raise MatbenchError(f"policy {policy!r}: {spec.name} must be {kind.split(' ')[0]} (got {text!r})") from None
    return text


POLICIES: Registry[type[ServingPolicy]] = Registry("serving policy")


def parse_policy(spec: str, budget: Budget | None = None) -> ServingPolicy:
    """`NAME`, `NAME:ARGS`, `NAME@BUDGET` or `NAME:ARGS@BUDGET` -> a policy; `budget` applies when
    the spec names none. An unknown name, bad arguments, a budget for a policy that takes none or
    none for one that needs it: one line each."""
    head, budget_text = split_budget(spec)
    name, _, args = head.partition(":")
    policy = POLICIES.get(name).from_args(args or None)
    if budget_text is not None:
        budget = Budget.parse(budget_text)
    if budget is None:
        if policy.budgeted and getattr(policy, "budget", None) is None:
            raise MatbenchError(
                f"policy {name!r} needs a budget: --budget 0.5 (fraction removed) or 256 (tokens kept), or {name}@0.5"
            )
        return policy
    if not policy.budgeted:
        raise MatbenchError(f"policy {name!r} keeps what it declares and takes no budget (got {budget.spec})")
    return policy.with_budget(budget)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
