"""Generation-time checks (issue 3): a generated pair is refused unless it is causally clean.

Beyond `DonorPair.validate` (arms exclude the source, leak patterns): no served event other than
a declared decoy names a donor-specific word (the gold values and any operand that differs
between the members), whole-word and case-insensitive; a register name that is also a menu word
appears only as "register NAME", which the parse rules skip. Identity of served events across
members holds by construction: a row stores one shared event list and the two source bodies.
"""

from __future__ import annotations

import re

from matbench.errors import MatbenchError
from matbench.pairs import DonorPair


def donor_words(pair: DonorPair) -> set[str]:
    """Words that differ between the two source bodies (values, operands), upper-cased."""
    a, b = (set(re.findall(r"[A-Za-z0-9_.]+", body.upper())) for body in pair.source_bodies)
    return (a ^ b) | {v.upper() for v in pair.values}


def check_pair(pair: DonorPair) -> None:
    words = donor_words(pair)
    for arm in pair.arms:
        if arm.uses_source:
            continue
        for i in arm.served:
            if i in pair.decoys:
                continue
            for word in words:
                if re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", pair.events[i], re.IGNORECASE):
                    raise MatbenchError(
                        f"generation check refused {pair.item_id}: served event {i} of arm {arm.name} names "
                        f"the donor-specific word {word!r} ({pair.events[i]!r})"
                    )
    clashes = {r.upper() for r in pair.registers} & {m.upper() for m in pair.menu}
    for name in clashes:
        texts = list(pair.events) + [a.question for a in pair.arms]
        for text in texts:
            for match in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text, re.IGNORECASE):
                if not re.search(r"\bregisters?\s+$", text[:match.start()], re.IGNORECASE):
                    raise MatbenchError(
                        f"generation check refused {pair.item_id}: register {name} is also a menu word and "
                        f"appears without 'register' before it ({text!r}), where a reply could echo it"
                    )
