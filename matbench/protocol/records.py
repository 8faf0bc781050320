"""Typed per-item records: what the engine returns for one donor pair under one (readout, serving),
what the per-item log stores one JSON line per pair, and what evaluators read.

`to_json` writes exactly the keys earlier matbench versions wrote (optional ones only when set),
so logs of every release read back as records and rescore to the same metrics; `from_json`
checks a line's shape and names the first bad field in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matbench.errors import MatbenchError
from matbench.protocol.outcomes import OUTCOMES


def _require(data: Any, key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise MatbenchError(f"{where}: missing field {key!r}")
    value = data[key]
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):  # JSON true is no count
        raise MatbenchError(f"{where}: field {key!r} has type {type(value).__name__}")
    return value


def _optional(data: dict[str, Any], key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    return _require(data, key, kinds, where) if data.get(key) is not None else None


def _pair_of(value: list[Any], where: str, key: str) -> tuple[Any, Any]:
    if len(value) != 2:
        raise MatbenchError(f"{where}: field {key!r} must hold one entry per donor member (2), not {len(value)}")
    return value[0], value[1]


@dataclass(frozen=True)
class GateResult:
    """One faithfulness gate (SPEC 2.4) on one pair: passed, and the worst |dlogit| compared
    (None where the gate does not apply, e.g. gate B with sliding windows)."""

    name: str
    passed: bool
    max_abs_diff: float | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"gate": self.name, "passed": self.passed, "max_abs_diff": self.max_abs_diff, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Any, where: str) -> GateResult:
        return cls(
            _require(data, "gate", str, where),
            _require(data, "passed", bool, where),
            _optional(data, "max_abs_diff", (int, float), where),
            data.get("detail", ""),
        )


@dataclass(frozen=True)
class Selection:
    """What a serving policy other than the oracle kept for one arm of one pair.

    `kept_tokens`: rows served (per member, the same positions in both); `members_differ`:
    whether the policy's own picks differed between the donor members outside the donor-dependent
    events (a selection leak: rows after the source carried the donor into the choice);
    `donor_visible`: the served rows hold a donor-dependent token (then the arm sees the donor
    directly and its outcome is no evidence of materialization); `head_kept_share`: for a
    per-layer, per-KV-head choice, the mean share of the served rows each head keeps.
    Scoring policies add `overlap`, per layer the Jaccard overlap of the two members' picks
    (layer x KV head x position) outside the donor-dependent events; `source_kept`, per member
    whether its own pick kept any source row; `kept`, the served positions as ranges
    (`0-14,20,22-30`); `held_rows`, the rows a per-head cache would hold (sum over layers and KV
    heads); `heads`, the served member A's per-head choice, zlib-compressed bits in base64
    (`[layers, KV heads, kept_tokens]`, C order), absent when every head keeps every row.
    Schema 1.10 adds `picked`, the token rows of each member's own pick (A, B: they differ under a
    ratio budget when the donor values tokenize to different lengths); `members_differ_matched`,
    whether the picks still differ when B keeps as many rows as A (the leak a count difference
    cannot explain); `served_bytes`, the K/V bytes (and per-head mask) one member's served cache
    actually holds: every row any head keeps, in every head; and `needed_bytes`, what a cache
    holding only each head's own rows would need."""

    kept_tokens: int
    members_differ: bool
    donor_visible: bool
    head_kept_share: float | None = None
    overlap: tuple[float, ...] | None = None
    source_kept: tuple[bool, bool] | None = None
    kept: str | None = None
    held_rows: int | None = None
    heads: str | None = None
    picked: tuple[int, int] | None = None
    members_differ_matched: bool | None = None
    served_bytes: int | None = None
    needed_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kept_tokens": self.kept_tokens,
            "members_differ": self.members_differ,
            "donor_visible": self.donor_visible,
        }
        for name in (
            "head_kept_share",
            "overlap",
            "source_kept",
            "kept",
            "held_rows",
            "heads",
            "picked",
            "members_differ_matched",
            "served_bytes",
            "needed_bytes",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> Selection:
        overlap = _optional(data, "overlap", list, where)
        source_kept = _optional(data, "source_kept", list, where)
        picked = _optional(data, "picked", list, where)
        return cls(
            _require(data, "kept_tokens", int, where),
            _require(data, "members_differ", bool, where),
            _require(data, "donor_visible", bool, where),
            _optional(data, "head_kept_share", (int, float), where),
            tuple(float(x) for x in overlap) if overlap is not None else None,
            tuple(bool(x) for x in source_kept) if source_kept is not None else None,  # type: ignore[arg-type]
            _optional(data, "kept", str, where),
            _optional(data, "held_rows", int, where),
            _optional(data, "heads", str, where),
            tuple(int(x) for x in _pair_of(picked, where, "picked")) if picked is not None else None,  # type: ignore[arg-type]
            _optional(data, "members_differ_matched", bool, where),
            _optional(data, "served_bytes", int, where),
            _optional(data, "needed_bytes", int, where),
        )


@dataclass(frozen=True)
class ArmRecord:
    """One arm of one pair: each member's answer under the readout, its outcome class, and the
    probe's candidate log-probabilities and donor margin shift (SPEC 2.6, 2.7).

    `answers`, `probe_answers`, `probe_logp` and `texts` hold member A then member B. `menu` and
    `values` are set only where the arm asks its own question of the rows or reads another donor
    value than the pair's (edge swap: the chain its leaf references), else the pair's;
    `expected` only where the arm should give a non-donor answer (a served patch); `texts` only
    under a generating readout, with `paper_answers`: the same texts read by the paper's looser
    parse (upper-cased substrings, `matbench.protocol.readouts.paper_pick`), the comparable one;
    `selection` only where a serving policy other than the oracle chose the arm's rows; `judged`
    only where a judge model graded the texts (`--judge`: yes/no per member, kv_harvest3's
    cross_judge prompt)."""

    answers: tuple[str | None, str | None]
    outcome: str
    probe_answers: tuple[str, str]
    probe_logp: tuple[tuple[float, ...], tuple[float, ...]]
    shift: float
    menu: tuple[str, ...] | None = None
    values: tuple[str, str] | None = None
    expected: str | None = None
    texts: tuple[str, str] | None = None
    selection: Selection | None = None
    paper_answers: tuple[str | None, str | None] | None = None
    judged: tuple[bool, bool] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **({"expected": self.expected} if self.expected is not None else {}),
            **({"menu": list(self.menu)} if self.menu is not None else {}),
            **({"values": list(self.values)} if self.values is not None else {}),
            "answers": list(self.answers),
            "class": self.outcome,
            "probe_answers": list(self.probe_answers),
            "probe_logp": [list(row) for row in self.probe_logp],
            "shift": self.shift,
            **({"texts": list(self.texts)} if self.texts is not None else {}),
            **({"paper_answers": list(self.paper_answers)} if self.paper_answers is not None else {}),
            **({"selection": self.selection.to_json()} if self.selection is not None else {}),
            **({"judged": list(self.judged)} if self.judged is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> ArmRecord:
        outcome = _require(data, "class", str, where)
        unknown = sorted(set(data) - _ARM_FIELDS)
        if unknown:
            raise MatbenchError(f"{where}: unknown field {unknown[0]!r}")
        if outcome not in OUTCOMES:
            raise MatbenchError(f"{where}: class {outcome!r} is not one of {', '.join(OUTCOMES)}")
        menu = _optional(data, "menu", list, where)
        values = _optional(data, "values", list, where)
        texts = _optional(data, "texts", list, where)
        paper = _optional(data, "paper_answers", list, where)
        judged = _optional(data, "judged", list, where)
        if judged is not None and not all(isinstance(v, bool) for v in judged):
            raise MatbenchError(f"{where}: judged must hold two booleans (got {judged!r})")
        logp_a, logp_b = _pair_of(_require(data, "probe_logp", list, where), where, "probe_logp")
        return cls(
            answers=_pair_of(_require(data, "answers", list, where), where, "answers"),
            outcome=outcome,
            probe_answers=_pair_of(_require(data, "probe_answers", list, where), where, "probe_answers"),
            probe_logp=(tuple(logp_a), tuple(logp_b)),
            shift=_require(data, "shift", (int, float), where),
            menu=tuple(menu) if menu is not None else None,
            values=_pair_of(values, where, "values") if values is not None else None,
            expected=_optional(data, "expected", str, where),
            texts=_pair_of(texts, where, "texts") if texts is not None else None,
            selection=Selection.from_json(data["selection"], f"{where}, selection") if "selection" in data else None,
            paper_answers=_pair_of(paper, where, "paper_answers") if paper is not None else None,
            judged=_pair_of(judged, where, "judged") if judged is not None else None,
        )


@dataclass(frozen=True)
class PairRecord:
    """Everything one donor pair gave under one (readout, serving): per arm an `ArmRecord`; the
    pair's donor values and menu; its tokenization (source budget, trajectory length L, tokens
    per member); the gates when run with --check; and, once logged, the hashes tying it to its
    item and its run's config."""

    item_id: str
    variant: str | None  # None only in logs of schema 0.1, which had no variants
    values: tuple[str, str]
    menu: tuple[str, ...]
    budget: int
    length: int
    n_tokens: tuple[int, int]
    arms: Mapping[str, ArmRecord]
    gates: tuple[GateResult, ...] | None = None
    item_hash: str | None = None
    config_hash: str | None = None

    def arm_menu(self, arm: str) -> tuple[str, ...]:
        """The arm's own menu where it asks another question of the same rows, else the pair's."""
        return self.arms[arm].menu or self.menu

    def arm_values(self, arm: str) -> tuple[str, str]:
        return self.arms[arm].values or self.values

    def to_json(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            **({"variant": self.variant} if self.variant is not None else {}),
            "values": list(self.values),
            "menu": list(self.menu),
            "budget": self.budget,
            "length": self.length,
            "n_tokens": list(self.n_tokens),
            "arms": {name: arm.to_json() for name, arm in self.arms.items()},
            **({"gates": [g.to_json() for g in self.gates]} if self.gates is not None else {}),
            **({"item_hash": self.item_hash} if self.item_hash is not None else {}),
            **({"config_hash": self.config_hash} if self.config_hash is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "record") -> PairRecord:
        item_id = _require(data, "item_id", str, where)
        where = f"{where} (item {item_id})"
        arms = _require(data, "arms", dict, where)
        gates = _optional(data, "gates", list, where)
        unknown = sorted(set(data) - _PAIR_FIELDS)
        if unknown:
            raise MatbenchError(f"{where}: unknown field {unknown[0]!r}")
        return cls(
            item_id=item_id,
            variant=_optional(data, "variant", str, where),
            values=_pair_of(_require(data, "values", list, where), where, "values"),
            menu=tuple(_require(data, "menu", list, where)),
            budget=_require(data, "budget", int, where),
            length=_require(data, "length", int, where),
            n_tokens=_pair_of(_require(data, "n_tokens", list, where), where, "n_tokens"),
            arms={name: ArmRecord.from_json(arm, f"{where}, arm {name}") for name, arm in arms.items()},
            gates=tuple(GateResult.from_json(g, f"{where}, gates") for g in gates) if gates is not None else None,
            item_hash=_optional(data, "item_hash", str, where),
            config_hash=_optional(data, "config_hash", str, where),
        )


_ARM_FIELDS = {
    "answers",
    "class",
    "probe_answers",
    "probe_logp",
    "shift",
    "menu",
    "values",
    "expected",
    "texts",
    "selection",
    "paper_answers",
    "judged",
}
_PAIR_FIELDS = {
    "item_id",
    "variant",
    "values",
    "menu",
    "budget",
    "length",
    "n_tokens",
    "arms",
    "gates",
    "item_hash",
    "config_hash",
}
