"""Rendering of SPEC 2.1: chat head + HDR, events, question, chat tail; token ids per piece.

Pieces are tokenized without special tokens; BOS is placed once, by hand, at the start of the
header when the tokenizer would add one and the chat head does not already carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from matbench.errors import MatbenchError

HDR = (
    "You are reviewing a completed agent trajectory. Use it to answer the question precisely.\n\n"
    "Task: run register maintenance and report values faithfully.\n\nTrajectory:\n"
)
_SENTINEL = "MATBENCHUSERCONTENTSENTINEL"
BASE_ANSWER_PREFIX = "Answer:"


DIALOG_HDR = (
    "You are reading a long conversation between two people. Use it to answer the question precisely.\n\n"
    "Conversation:\n"
)


def event_text(index: int, body: str) -> str:
    """Event `index` (0-based) as it appears in the trajectory."""
    return f"<step {index + 1}>\naction: reg_op()\nobservation: {body}\n"


def turn_text(index: int, body: str) -> str:
    """A dialog turn (SPEC 3.6): the body is already "[session n date] speaker: text"."""
    return f"{body}\n"


@dataclass(frozen=True)
class Frame:
    """How a pair's events are rendered: the instruction after the chat head, and one event."""

    name: str
    header: str
    render_event: Callable[[int, str], str]


FRAMES = {
    "trajectory": Frame("trajectory", HDR, event_text),  # synthetic agent trajectories (SPEC 2.1)
    "dialog": Frame("dialog", DIALOG_HDR, turn_text),  # real multi-session dialogs (harvest)
}


def question_text(question: str, suffix: str = "") -> str:
    # SPEC 2.1 writes "\n\nQuestion: ..."; after an event's final "\n" that separator merges into
    # a "\n\n" token in the SmolLM2 and Gemma tokenizers (piecewise != one-shot), and "\nQuestion"
    # still merges in Gemma's. With no separator every boundary is clean, which the piecewise check
    # asserts for every query (see README, "Protocol notes").
    return f"Question: {question}{suffix}"


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

    def __post_init__(self) -> None:
        frame = _chat_frame(self.tokenizer)
        self.chat = frame is not None
        self.head, self.tail = frame if frame else ("", "\n")
        bos = getattr(self.tokenizer, "bos_token_id", None)
        adds_bos = bos is not None and self.tokenizer("a").input_ids[:1] == [bos]
        head_ids = self.ids(self.head)
        self.bos_ids = [bos] if adds_bos and head_ids[:1] != [bos] else []

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def header_ids(self, header: str = HDR) -> list[int]:
        return self.bos_ids + self.ids(self.head + header)

    def query_text(self, question: str, suffix: str, assistant_prefix: str = "") -> str:
        # A base model has no assistant turn to open: every readout starts its answer after
        # "Answer:" (the probe's forced prefix), as lm-evaluation-harness frames base models.
        # Without it, base models continue the trajectory ("<step 25> ...") instead of answering.
        prefix = assistant_prefix if self.chat else BASE_ANSWER_PREFIX
        return question_text(question, suffix) + self.tail + prefix

    def query_ids(self, question: str, suffix: str, assistant_prefix: str = "") -> list[int]:
        return self.ids(self.query_text(question, suffix, assistant_prefix))

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def check_piecewise(self, pieces: list[str], piece_ids: list[list[int]], from_start: bool = True) -> None:
        """The concatenated piece ids must equal a one-shot tokenization of the whole text
        (`from_start`: the pieces open the sequence, so the hand-placed BOS is part of it)."""
        joined = [t for ids in piece_ids for t in ids]
        whole = (self.bos_ids if from_start else []) + self.ids("".join(pieces))
        if joined != whole:
            at = next((i for i, (a, b) in enumerate(zip(joined, whole)) if a != b), min(len(joined), len(whole)))
            raise MatbenchError(
                f"piecewise tokenization differs from one-shot tokenization at token {at}: a BPE merge "
                "crosses an event boundary for this tokenizer; events must end in a newline"
            )
