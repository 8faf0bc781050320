"""How many rows of a member's prefill a scoring policy keeps."""

from __future__ import annotations

from dataclasses import dataclass

from matbench.errors import MatbenchError


@dataclass(frozen=True)
class Budget:
    """`ratio`: the fraction of rows removed, as kvpress counts its `compression_ratio` (0.5 keeps
    half, 0.875 an eighth); or `tokens`: an absolute number of rows kept. Counted over the whole
    prefill of a member, header included (the header is always kept and spends budget)."""

    ratio: float | None = None
    tokens: int | None = None

    def __post_init__(self) -> None:
        if (self.ratio is None) == (self.tokens is None):
            raise MatbenchError("a budget is a removed fraction (0.5) or a kept token count (256), not both")
        if self.ratio is not None and not 0 <= self.ratio < 1:
            raise MatbenchError(f"a budget ratio is the fraction removed, in [0, 1) (got {self.ratio})")
        if self.tokens is not None and self.tokens < 1:
            raise MatbenchError(f"a token budget keeps at least one row (got {self.tokens})")

    @classmethod
    def parse(cls, text: str) -> Budget:
        """`0.5` (a ratio: has a decimal point) or `256` (a token count)."""
        text = text.strip()
        try:
            return cls(ratio=float(text)) if "." in text else cls(tokens=int(text))
        except ValueError:
            raise MatbenchError(
                f"budget {text!r} is neither a removed fraction such as 0.5 nor a token count such as 256"
            ) from None

    def n_kept(self, total: int) -> int:
        """Rows kept of `total`: kvpress's `compute_n_kept` (at least one) for a ratio."""
        if self.ratio is not None:
            return max(1, int(total * (1 - self.ratio)))
        return min(self.tokens or 0, total)

    @property
    def spec(self) -> str:
        """The text `parse` reads back: a ratio always has a decimal point (0.0, not 0)."""
        if self.ratio is None:
            return str(self.tokens)
        text = f"{self.ratio:g}"
        return text if "." in text else f"{text}.0"


def parse_budgets(text: str) -> tuple[Budget, ...]:
    """`0.25,0.5,256` -> budgets, in the order given, without repeats."""
    out: list[Budget] = []
    for part in text.split(","):
        budget = Budget.parse(part)
        if budget not in out:
            out.append(budget)
    return tuple(out)
