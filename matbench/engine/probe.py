"""The probe readout's scorer (SPEC 2.5): candidate log-probabilities from next-token logits."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from matbench.errors import MatbenchError


@dataclass(frozen=True)
class ProbeScorer:
    """Scores each candidate W by log(p(first token of " W") + p(first token of "W"))."""

    menu: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...]  # per candidate, its distinct first-token ids

    @classmethod
    def for_menu(cls, menu: tuple[str, ...], encode) -> ProbeScorer:
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


def first_token_ids(menu: tuple[str, ...], encode) -> tuple[tuple[int, ...], ...]:
    """Per candidate, the token ids the logit readout scores: the first token of " W" (kv_harvnative
    `ab_logit`); where two candidates share it (" 857" and " 217" both start with " " in Gemma's
    tokenizer), each candidate's own first tokens of " W" and "W", as the probe chooses them
    (refused in one line when a candidate has none)."""
    spaced = [encode(" " + word)[0] for word in menu]
    if len(set(spaced)) == len(spaced):
        return tuple((t,) for t in spaced)
    return ProbeScorer.for_menu(menu, encode).token_ids


def first_token_answers(logits: torch.Tensor, menu: tuple[str, ...], ids: tuple[tuple[int, ...], ...]) -> list[str]:
    """`[B, vocab]` logits -> per row the candidate with the highest raw logit among its `ids`
    (`first_token_ids`)."""
    scores = torch.stack([logits.float()[:, list(own)].max(-1).values for own in ids], dim=-1)
    return [menu[i] for i in scores.argmax(-1).tolist()]
