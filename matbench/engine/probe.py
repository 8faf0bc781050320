"""The probe readout's scorer (SPEC 2.5): candidate log-probabilities from next-token logits."""

from __future__ import annotations

import itertools
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
        for word, starts in zip(menu, firsts):
            for t in starts:
                owners.setdefault(t, []).append(word)
        ids: list[tuple[int, ...]] = []
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


def batched_log_probs(logits: torch.Tensor, scorers: list[ProbeScorer]) -> list[torch.Tensor]:
    """Row r of `[B, vocab]` logits scored by `scorers[r]` (`ProbeScorer.log_probs`), on the host:
    one log-softmax, one gather and one device-to-host copy for the whole batch, where a scorer
    per row would index with a fresh host tensor and read back once per row (measured: 0.2 s of
    host-bound work per 256-row batch on an H200)."""
    width = max(len(ids) for s in scorers for ids in s.token_ids)
    rows, columns, starts = [], [], [0]
    for r, scorer in enumerate(scorers):
        for ids in scorer.token_ids:  # padding repeats a token id; masked to -inf below
            rows.append([r] * width)
            columns.append(list(ids) + [ids[0]] * (width - len(ids)))
        starts.append(starts[-1] + len(scorer.token_ids))
    padded = torch.tensor([[k >= len(ids) for k in range(width)] for s in scorers for ids in s.token_ids])
    logp = torch.log_softmax(logits.float(), dim=-1)
    index = torch.tensor([rows, columns]).to(logp.device, non_blocking=True)
    picked = logp[index[0], index[1]]  # [candidates, width]
    picked = picked.masked_fill(padded.to(logp.device, non_blocking=True), float("-inf"))
    flat = torch.logsumexp(picked, dim=-1).cpu()
    return [flat[lo:hi] for lo, hi in itertools.pairwise(starts)]


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
