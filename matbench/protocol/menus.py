"""Menu words in generated text (SPEC 2.5 parse hazards): pure text, no model."""

from __future__ import annotations

import re


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
        before = text[: match.start()].rstrip()
        if re.search(r"\bregisters?$", before, re.IGNORECASE):
            continue
        if match.group(1).upper() in {r.upper() for r in registers} and re.match(
            r"\s+(mirrors|is|was|copied|tracks|holds)\b", text[match.end() :], re.IGNORECASE
        ):
            continue
        word = match.group(1)
        found.append(lookup[word] if word in lookup else lookup[word.upper()])
    return found
