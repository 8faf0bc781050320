"""The texts of SPEC 2.1, before any tokenizer: HDR, events, dialog turns, the question.

A `Frame` says how one pair's header and events read; `matbench.engine.render.Renderer` turns
these texts into token ids for one model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

HDR = (
    "You are reviewing a completed agent trajectory. Use it to answer the question precisely.\n\n"
    "Task: run register maintenance and report values faithfully.\n\nTrajectory:\n"
)
BASE_ANSWER_PREFIX = "Answer:"


# Real dialogs (harvest): the paper's header is the chat head alone, no instruction
# (kv_harvest4.py, kv_harvnative.py: H = head); the first turn follows it directly.
DIALOG_HDR = ""


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
    # The "isolated" encoding: True encodes each served event alone, with no header rows before it
    # (the paper's harvest `iso`, kv_harvest4.py); False after the header (access `sel_ikv`).
    isolated_alone: bool = False


FRAMES = {
    "trajectory": Frame("trajectory", HDR, event_text),  # synthetic agent trajectories (SPEC 2.1)
    "dialog": Frame("dialog", DIALOG_HDR, turn_text, isolated_alone=True),  # real multi-session dialogs (harvest)
}


def question_text(question: str, suffix: str = "") -> str:
    # The paper's separator (every kvmemory script): the question opens with a blank line and is
    # tokenized as its own piece, positions continuing after the last kept row. After an event's
    # final "\n" a one-shot tokenization would merge the newlines, so the query is never checked
    # against one; header and events are (matbench.engine.layout).
    return f"\n\nQuestion: {question}{suffix}"
