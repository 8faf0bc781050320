"""Readouts (SPEC 2.5): how an answer is read from a served cache, and the parse rules.

- probe: forced-position candidate logits after "Answer:" at the start of the assistant turn;
  no generation; also the source of the donor margin shift (SPEC 2.7) for every readout.
- short: menu in the question, up to 12 greedy tokens, the first menu word.
- trace: "locate the mirror statement" instruction, up to 160 greedy tokens, the last menu word.

Pure text: the probe's scorer, which needs logits, is `matbench.engine.probe.ProbeScorer`.
"""

from __future__ import annotations

from dataclasses import dataclass

from matbench.protocol.menus import find_menu_words
from matbench.registry import Registry

READOUTS: Registry["Readout"] = Registry("readout")


def menu_phrase(menu: tuple[str, ...]) -> str:
    return menu[0] if len(menu) == 1 else ", ".join(menu[:-1]) + " or " + menu[-1]


@dataclass(frozen=True)
class Readout:
    """One way of reading an answer. `max_new_tokens` is 0 for the probe (no decoding)."""

    name: str
    suffix_template: str  # appended to the question; may use {menu}
    assistant_prefix: str = ""
    max_new_tokens: int = 0
    pick: str = "first"  # which parsed menu word counts: "first" or "last"

    def suffix(self, menu: tuple[str, ...]) -> str:
        return self.suffix_template.format(menu=menu_phrase(menu))

    def parse(self, text: str, menu: tuple[str, ...], registers: tuple[str, ...] = ()) -> str | None:
        found = find_menu_words(text, menu, registers)
        if not found:
            return None
        return found[0] if self.pick == "first" else found[-1]


READOUTS.register("probe")(Readout("probe", " Answer {menu}:", assistant_prefix="Answer:"))
READOUTS.register("short")(Readout("short", " Answer {menu}:", max_new_tokens=12, pick="first"))
READOUTS.register("trace")(Readout(
    "trace",
    " Locate the mirror statement for that register, then end your answer with the final state word.",
    max_new_tokens=160,
    pick="last",
))
