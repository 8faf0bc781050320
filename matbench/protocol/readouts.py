"""Readouts (SPEC 2.5): how an answer is read from a served cache, and the parse rules.

The wording is the paper's (`kvmemory/*.py`, the reference for every suffix):

- probe: " Answer {menu}:" then "Answer:" at the start of the assistant turn; forced-position
  candidate logits, no generation; also the source of the donor margin shift (SPEC 2.7).
- short: " Answer {menu}:", up to 12 greedy tokens, the first menu word (kv_sweepmenu).
- trace: " Answer {menu}." then the pair's trace instruction (discovery: the mirror wording of
  kv_causal.py; other suites: "Locate the relevant statement ..."), up to 160 greedy tokens, the
  last menu word (kv_causal / kv_parabank).
- menu: " Answer with the single state word only ({menu}):", up to 160 greedy tokens, the last
  menu word: the paper's `--menu` readout (kv_causal2/3, kv_poscontrol), used for Gemma-4.
- logit: " Answer {menu}:" and no assistant prefix; the candidate whose first token of " W" has
  the highest raw next-token logit (kv_harvnative's native recognition readout, " A" vs " B").

Every generating readout also records the paper's own, looser parse (`paper_pick`: upper-cased
substring search), the one the paper's numbers were made with.

Pure text: the probe's scorer, which needs logits, is `matbench.engine.probe.ProbeScorer`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from matbench.protocol.menus import find_menu_words
from matbench.registry import Registry

READOUTS: Registry[Readout] = Registry("readout")

# The trace instructions of the paper's scripts, verbatim.
MIRROR_TRACE = " Locate the mirror statement for that register, then end your answer with the final state word."
RELEVANT_TRACE = " Locate the relevant statement, then end your answer with the final state word."
HOPS_TRACE = " Trace the mirror chain briefly (one line per hop), then end your answer with the final state word."


def menu_phrase(menu: tuple[str, ...]) -> str:
    """ "ONLINE or OFFLINE"; three or more words with the paper's serial comma: "A, B, or C"."""
    if len(menu) == 1:
        return menu[0]
    if len(menu) == 2:
        return f"{menu[0]} or {menu[1]}"
    return ", ".join(menu[:-1]) + ", or " + menu[-1]


def paper_pick(text: str, menu: tuple[str, ...], pick: str) -> str | None:
    """The paper's parse: search the upper-cased text for each menu word as a substring (so
    ABNORMAL contains NORMAL) and take the earliest (`pick_first`) or latest (`pick_last`) hit;
    single letters (options A/B) as a standalone letter, the first one (kv_harvest4 AB_RE)."""
    upper = text.upper()
    letters = [w for w in menu if len(w) == 1]
    if letters:
        found = re.search(r"\b(" + "|".join(re.escape(w) for w in letters) + r")\b", upper)
        return found.group(1) if found else None
    if pick == "first":
        hits = [(upper.find(w.upper()), w) for w in menu if upper.find(w.upper()) >= 0]
        return min(hits)[1] if hits else None
    hits = [(upper.rfind(w.upper()), w) for w in menu if upper.rfind(w.upper()) >= 0]
    return max(hits)[1] if hits else None


@dataclass(frozen=True)
class Readout:
    """One way of reading an answer. `max_new_tokens` is 0 for the probe (no decoding).
    `suffix_template` may use {menu} (the menu phrase) and {trace} (the pair's trace instruction)."""

    name: str
    suffix_template: str
    assistant_prefix: str = ""
    max_new_tokens: int = 0
    pick: str = "first"  # which parsed menu word counts: "first" or "last"
    # No generation: the answer is the candidate whose first token (of " W") has the highest raw
    # next-token logit right after the query (kv_harvnative's readout; no "Answer:" prefix).
    first_token: bool = False
    description: str = ""  # what it reads and where the paper uses it (docs/readouts.md is made from it)

    def suffix(self, menu: tuple[str, ...], trace: str = RELEVANT_TRACE) -> str:
        return self.suffix_template.format(menu=menu_phrase(menu), trace=trace)

    def parse(self, text: str, menu: tuple[str, ...], registers: tuple[str, ...] = ()) -> str | None:
        found = find_menu_words(text, menu, registers)
        if not found:
            return None
        return found[0] if self.pick == "first" else found[-1]

    def paper_parse(self, text: str, menu: tuple[str, ...]) -> str | None:
        return paper_pick(text, menu, self.pick)


READOUTS.register("probe")(
    Readout(
        "probe",
        " Answer {menu}:",
        assistant_prefix="Answer:",
        description="no decoding: each menu word's log-probability right after the assistant turn opens "
        "with 'Answer:'; the answer is the likeliest word. Works for every menu whose words differ in their "
        "first token, and is where the donor margin shift is read under every readout (SPEC 2.5, 2.7)",
    )
)
READOUTS.register("short")(
    Readout(
        "short",
        " Answer {menu}:",
        max_new_tokens=12,
        pick="first",
        description="12 greedy tokens; the first menu word of the answer (the paper's short answers)",
    )
)
READOUTS.register("trace")(
    Readout(
        "trace",
        " Answer {menu}.{trace}",
        max_new_tokens=160,
        pick="last",
        description="the suite's trace instruction after the menu (kv_causal: 'Locate the mirror statement "
        "for that register, then end your answer with the final state word.'); 160 greedy tokens; the last "
        "menu word (the paper's readout for Qwen3 and Ministral)",
    )
)
READOUTS.register("logit")(
    Readout(
        "logit",
        " Answer {menu}:",
        first_token=True,
        description="no decoding and no assistant prefix: the menu word whose first token has the highest raw "
        "next-token logit right after the query (kv_harvnative's readout)",
    )
)
READOUTS.register("menu")(
    Readout(
        "menu",
        " Answer with the single state word only ({menu}):",
        max_new_tokens=160,
        pick="last",
        description="160 greedy tokens; the last menu word (the paper's --menu readout, used for Gemma-4)",
    )
)


class _GeneratingReadouts(Sequence[str]):
    """The names of the readouts that generate text (and so carry the paper's parse beside
    matbench's), read from the registry when asked: a plugin's generating readout, registered
    after this module loaded, counts as well."""

    def _names(self) -> tuple[str, ...]:
        return tuple(name for name in READOUTS.names() if READOUTS.get(name).max_new_tokens)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"GENERATING_READOUTS{self._names()}"


GENERATING_READOUTS = _GeneratingReadouts()
