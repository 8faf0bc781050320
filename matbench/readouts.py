"""Readouts (SPEC 2.5): how an answer is read from a served cache, and the parse rules.

- probe: forced-position candidate logits after "Answer:" at the start of the assistant turn;
  no generation; also the source of the donor margin shift (SPEC 2.7) for every readout.
- short: menu in the question, up to 12 greedy tokens, the first menu word.
- trace: "locate the mirror statement" instruction, up to 160 greedy tokens, the last menu word.
- recognition: "Option A / Option B", the first standalone A or B.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from matbench.errors import MatbenchError
from matbench.registry import Registry

READOUTS: Registry["Readout"] = Registry("readout")


def menu_phrase(menu: tuple[str, ...]) -> str:
    return menu[0] if len(menu) == 1 else ", ".join(menu[:-1]) + " or " + menu[-1]


@dataclass(frozen=True)
class Readout:
    """One way of reading an answer. `generate` is 0 for the probe (no decoding)."""

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


def find_menu_words(text: str, menu: tuple[str, ...], registers: tuple[str, ...] = ()) -> list[str]:
    """Menu words in `text`, in order, matched as whole words (ABNORMAL is not NORMAL).

    Multi-letter words match case-insensitively, single letters exactly; an occurrence right after "register" or
    naming one of the item's `registers` in that role is an echoed register name, not an answer
    (ALPHA and DELTA are both register names and name8 menu words).
    """
    # Single letters (option A/B) match case-sensitively: the article "a" is not option A.
    letters = [w for w in menu if len(w) == 1]
    by_upper = {w.upper(): w for w in menu if len(w) > 1}
    alternatives = [f"(?i:{re.escape(w)})" for w in sorted(by_upper, key=len, reverse=True)]
    alternatives += [re.escape(w) for w in letters]
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(alternatives) + r")(?![A-Za-z0-9_])")
    lookup = {**by_upper, **{w: w for w in letters}}
    found = []
    for match in pattern.finditer(text):
        before = text[:match.start()].rstrip()
        if re.search(r"\bregisters?$", before, re.IGNORECASE):
            continue
        if match.group(1).upper() in {r.upper() for r in registers} and re.match(
            r"\s+(mirrors|is|was|copied|tracks|holds)\b", text[match.end():], re.IGNORECASE
        ):
            continue
        word = match.group(1)
        found.append(lookup[word] if word in lookup else lookup[word.upper()])
    return found


def parse_option(text: str, options: str = "AB") -> str | None:
    """First standalone option letter; case-sensitive on purpose (the article "a" is not option A)."""
    match = re.search(r"(?<![A-Za-z0-9])([" + options + r"])(?![A-Za-z0-9])", text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class ProbeScorer:
    """Scores each candidate W by log(p(first token of " W") + p(first token of "W"))."""

    menu: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...]  # per candidate, its distinct first-token ids

    @classmethod
    def for_menu(cls, menu: tuple[str, ...], encode) -> "ProbeScorer":
        """Each candidate is scored on the first tokens of " W" and "W" that no other candidate
        shares: a shared one says nothing about which candidate comes (digits after a space
        start with a bare " " token in many tokenizers; bare words often start with a piece like
        "s"). A candidate left with no token of its own cannot be probed."""
        firsts = [{encode(" " + word)[0], encode(word)[0]} for word in menu]
        owners: dict[int, list[str]] = {}
        for word, ids in zip(menu, firsts):
            for t in ids:
                owners.setdefault(t, []).append(word)
        ids = []
        for word, mine in zip(menu, firsts):
            own = tuple(sorted(t for t in mine if len(owners[t]) == 1))
            if not own:
                other = next(w for t in mine for w in owners[t] if w != word)
                raise MatbenchError(
                    f"probe readout: {other!r} and {word!r} start with the same token for this "
                    "tokenizer, so their first-token probabilities cannot be told apart; use --readout short"
                )
            ids.append(own)
        return cls(menu, tuple(ids))

    def log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """`[B, vocab]` logits -> `[B, len(menu)]` candidate log-probabilities."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        return torch.stack([torch.logsumexp(logp[:, list(ids)], dim=-1) for ids in self.token_ids], dim=-1)

    def answers(self, cand_logp: torch.Tensor) -> list[str]:
        return [self.menu[i] for i in cand_logp.argmax(-1).tolist()]


def donor_margin(cand_logp: torch.Tensor, menu: tuple[str, ...], value: str) -> torch.Tensor:
    """log p(value) - logsumexp(log p(others)); for a binary menu, log p(v) - log p(other)."""
    i = menu.index(value)
    others = torch.cat([cand_logp[..., :i], cand_logp[..., i + 1:]], dim=-1)
    return cand_logp[..., i] - torch.logsumexp(others, dim=-1)


def donor_shift(logp_a: torch.Tensor, logp_b: torch.Tensor, menu: tuple[str, ...], values: tuple[str, str]) -> float:
    """SPEC 2.7: how far the kept rows lean toward each member's dropped donor.

    With d_X(v) = donor_margin in member X: shift = ((d_A(vA) - d_B(vA)) + (d_B(vB) - d_A(vB))) / 2,
    which is exactly m_A - m_B (m = log p(vA) - log p(vB)) for a binary menu. > 0 leans toward the donor.
    """
    va, vb = values
    toward_a = donor_margin(logp_a, menu, va) - donor_margin(logp_b, menu, va)
    toward_b = donor_margin(logp_b, menu, vb) - donor_margin(logp_a, menu, vb)
    return float((toward_a + toward_b) / 2)
