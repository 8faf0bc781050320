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
from matbench.protocol.menus import find_menu_words
from matbench.protocol.pairs import DonorPair


def donor_words(pair: DonorPair) -> set[str]:
    """Words that differ between the two members' donor-dependent bodies (values, operands) and
    every arm's donor values, upper-cased. Single letters are option labels (A/B), not content:
    the option texts they stand for are what could leak, and those differ in the bodies."""
    words: set[str] = set()
    for a_body, b_body in pair.varying().values():
        a, b = (set(re.findall(r"[A-Za-z0-9_.]+", body.upper())) for body in (a_body, b_body))
        words |= a ^ b
    values = {v.upper() for arm in pair.arms for v in pair.arm_values(arm)} | {v.upper() for v in pair.values}
    return words | {v for v in values if not (len(v) == 1 and v.isalpha())}


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
    menus = {m.upper() for arm in pair.arms for m in pair.arm_menu(arm)} | {m.upper() for m in pair.menu}
    clashes = {r.upper() for r in pair.registers} & menus
    for name in clashes:
        texts = list(pair.events) + [a.question for a in pair.arms]
        for text in texts:
            for match in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text, re.IGNORECASE):
                if not re.search(r"\bregisters?\s+$", text[: match.start()], re.IGNORECASE):
                    raise MatbenchError(
                        f"generation check refused {pair.item_id}: register {name} is also a menu word and "
                        f"appears without 'register' before it ({text!r}), where a reply could echo it"
                    )


def decoy_gold_table(pairs: list[DonorPair]) -> dict[tuple[str, str], int]:
    """Counts of (member A's donor value, decoy value) over pairs whose decoy names exactly one
    word of the menu (decoys without a value, e.g. a self-test, are not counted)."""
    counts: dict[tuple[str, str], int] = {}
    for pair in pairs:
        for i in pair.decoys:
            named = set(find_menu_words(pair.events[i], pair.menu, pair.registers))
            if len(named) == 1:
                key = (pair.values[0], named.pop())
                counts[key] = counts.get(key, 0) + 1
    return counts


def check_decoy_independence(pairs: list[DonorPair], suite: str, alpha: float = 1e-3) -> float | None:
    """Decoys must be drawn independently of the gold, never as its complement (SPEC 1), or decoy
    elimination passes for recall. Per menu (the items whose decoys could name the same words; a
    variant may carry the decoy's own state, as decoy_audit's "independent/ONLINE" does): a
    chi-square goodness-of-fit test that decoy values are uniform over the menu (as every matbench
    generator draws them), and, where member A's donor value varies, a chi-square test of
    independence between it and the decoy. Refused when either p < `alpha`; returns the smallest
    p (None: nothing to test)."""
    from scipy.stats import chi2_contingency, chisquare

    smallest = None
    for menu in sorted({p.menu for p in pairs}):
        subset = [p for p in pairs if p.menu == menu]
        counts = decoy_gold_table(subset)
        if sum(counts.values()) < 20:
            continue  # too few decoys with a value to test anything
        golds = sorted({g for g, _ in counts})
        observed = [sum(c for (_, d), c in counts.items() if d == word) for word in menu]
        tests = [("are not drawn uniformly from the menu", float(chisquare(observed).pvalue))]
        if len(golds) > 1:
            table = [[counts.get((g, d), 0) for d in menu] for g in golds]
            table = [[row[j] for j in range(len(menu)) if any(r[j] for r in table)] for row in table]
            tests.append(("depend on the gold", float(chi2_contingency(table).pvalue)))
        for what, p in tests:
            smallest = p if smallest is None else min(smallest, p)
            if p < alpha:
                raise MatbenchError(
                    f"generation check refused suite {suite}: decoy values {what} for the menu {', '.join(menu)} "
                    f"(chi-square p = {p:.2g} over {sum(counts.values())} pairs); draw decoys from the menu "
                    "independently of the gold, never as its complement"
                )
    return smallest
