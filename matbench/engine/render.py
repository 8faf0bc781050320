"""Rendering for one tokenizer (SPEC 2.1): chat head + header, events, question, chat tail; token
ids per piece.

Pieces are tokenized without special tokens; BOS is placed once, by hand, at the start of the
header when the tokenizer would add one and the chat head does not already carry it.
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, field
from typing import Any

from matbench.errors import MatbenchError
from matbench.protocol.frames import BASE_ANSWER_PREFIX, FRAMES, HDR, question_text
from matbench.protocol.pairs import Arm, DonorPair
from matbench.protocol.readouts import Readout

_SENTINEL = "MATBENCHUSERCONTENTSENTINEL"
# Distinct piece texts a renderer remembers the ids of: a long dialog's events recur in every
# pair over it (harvest: ~400 events x 1,123 pairs over 20 dialogs), so each is tokenized once.
MEMO_ENTRIES = 1 << 16


def _chat_frame(tokenizer: Any) -> tuple[str, str] | None:
    """(head, tail) around the user message, or None for a base model without a template."""
    if not getattr(tokenizer, "chat_template", None):
        return None
    messages = [{"role": "user", "content": _SENTINEL}]
    try:
        text = tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
    except Exception as exc:  # a template that rejects the extra switch or a lone user turn
        raise MatbenchError(f"the model's chat template could not render a user turn: {exc}") from None
    if text.count(_SENTINEL) != 1:
        raise MatbenchError("the model's chat template does not reproduce the user message verbatim")
    head, tail = text.split(_SENTINEL)
    return head, tail


@dataclass
class Renderer:
    """Turns texts into token ids for one tokenizer. `chat` is False for base models (plain text)."""

    tokenizer: Any
    head: str = field(init=False)
    tail: str = field(init=False)
    chat: bool = field(init=False)
    bos_ids: list[int] = field(init=False)
    # text -> its ids (see MEMO_ENTRIES); a tokenizer is a pure function of the text.
    _memo: dict[str, tuple[int, ...]] = field(init=False, default_factory=dict, repr=False)
    # Sequences that passed the piecewise check, by digest of (text, piece ids): the questions of
    # one long dialog render the same members, which need one one-shot tokenization, not one each.
    _checked: set[bytes] = field(init=False, default_factory=set, repr=False)

    def __post_init__(self) -> None:
        frame = _chat_frame(self.tokenizer)
        self.chat = frame is not None
        self.head, self.tail = frame if frame else ("", "\n")
        bos = getattr(self.tokenizer, "bos_token_id", None)
        adds_bos = bos is not None and self.tokenizer("a").input_ids[:1] == [bos]
        head_ids = self.ids(self.head)
        self.bos_ids = [bos] if bos is not None and adds_bos and head_ids[:1] != [bos] else []

    def ids(self, text: str) -> list[int]:
        return self.many_ids([text])[0]

    def many_ids(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text, as `ids` gives them: remembered texts from the memo, the rest in
        one call of the tokenizer (a fast tokenizer encodes a batch on several threads)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            if len(self._memo) + len(missing) > MEMO_ENTRIES:
                self._memo.clear()
            encoded = self.tokenizer(missing, add_special_tokens=False).input_ids
            self._memo.update(zip(missing, map(tuple, encoded)))
        return [list(self._memo[t]) for t in texts]

    def header_ids(self, header: str = HDR) -> list[int]:
        return self.bos_ids + self.ids(self.head + header)

    def query_text(self, question: str, suffix: str, assistant_prefix: str = "") -> str:
        # A base model has no assistant turn to open: every readout starts its answer after
        # "Answer:" (the probe's forced prefix), as lm-evaluation-harness frames base models.
        # Without it, base models continue the trajectory ("<step 25> ...") instead of answering.
        prefix = assistant_prefix if self.chat else BASE_ANSWER_PREFIX
        return question_text(question, suffix) + self.tail + prefix

    def arm_query(self, pair: DonorPair, arm: Arm, readout: Readout) -> str:
        """Everything fed after the kept rows for `arm` under `readout`: any events appended at
        query time (a served patch), the question with the readout's suffix, the chat tail and
        the assistant prefix. One piece, as the paper tokenizes `patch + question + tail`
        (kv_coherence2, kv_causal): the question's leading "\n\n" stays its own token after the
        last kept row's "\n"."""
        frame = FRAMES[pair.frame]
        # Events appended at query time continue the step numbering, in the frame's patch rendering.
        patch = "".join(frame.appended_text(len(pair.events) + k, body) for k, body in enumerate(arm.appended))
        suffix = "" if arm.open_question else readout.suffix(pair.arm_menu(arm), pair.arm_trace(arm))
        return patch + self.query_text(arm.question, suffix, readout.assistant_prefix)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def check_piecewise(self, pieces: list[str], piece_ids: list[list[int]], from_start: bool = True) -> None:
        """The concatenated piece ids must equal a one-shot tokenization of the whole text
        (`from_start`: the pieces open the sequence, so the hand-placed BOS is part of it)."""
        self.check_piecewise_many([(pieces, piece_ids)], from_start)

    def check_piecewise_many(
        self,
        sequences: list[tuple[list[str], list[list[int]]]],
        from_start: bool = True,
        names: list[str] | None = None,
    ) -> None:
        """`check_piecewise` of several sequences (the members of a batch of pairs), their one-shot
        tokenizations in one tokenizer call (a fast tokenizer encodes them on several threads);
        a sequence checked before (same text, same piece ids) is not tokenized again. `names` say
        which sequence failed."""
        joined = [[t for ids in piece_ids for t in ids] for _, piece_ids in sequences]
        texts = ["".join(pieces) for pieces, _ in sequences]
        digests = [_digest(text, ids, from_start) for text, ids in zip(texts, joined)]
        todo = [k for k, d in enumerate(digests) if d not in self._checked]
        unique = list(dict.fromkeys(texts[k] for k in todo))
        encoded = dict(zip(unique, self.tokenizer(unique, add_special_tokens=False).input_ids)) if unique else {}
        for k in todo:
            whole = (self.bos_ids if from_start else []) + encoded[texts[k]]
            if joined[k] != whole:
                at = next(
                    (i for i, (a, b) in enumerate(zip(joined[k], whole)) if a != b), min(len(joined[k]), len(whole))
                )
                where = f"{names[k]}: " if names else ""
                raise MatbenchError(
                    f"{where}piecewise tokenization differs from one-shot tokenization at token {at}: a BPE merge "
                    "crosses an event boundary for this tokenizer; events must end in a newline"
                )
            if len(self._checked) >= MEMO_ENTRIES:
                self._checked.clear()
            self._checked.add(digests[k])


def _digest(text: str, ids: list[int], from_start: bool) -> bytes:
    """A digest of a check: the text, its piece ids and whether a BOS opens it (sha256: a skipped
    check must not be a collision)."""
    return hashlib.sha256(b"%d\0" % from_start + text.encode() + b"\0" + array("q", ids).tobytes()).digest()
