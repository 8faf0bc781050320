"""Outcome classes of a donor pair (SPEC 2.6)."""

from __future__ import annotations

OUTCOMES = ("follow", "anti", "const", "other")


def outcome(answers: tuple[str | None, str | None], values: tuple[str, str]) -> str:
    """SPEC 2.6: follow / anti / const / other for one donor pair."""
    a, b = answers
    if a is None or b is None:
        return "other"
    if (a, b) == values:
        return "follow"
    if (b, a) == values:
        return "anti"
    if a == b:
        return "const"
    return "other"
