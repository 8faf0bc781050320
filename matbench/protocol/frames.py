"""The texts of SPEC 2.1, before any tokenizer: HDR, events, dialog turns, the question.

A `Frame` says how one pair's header and events read; `matbench.engine.render.Renderer` turns
these texts into token ids for one model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


# kv_phantom.py's header: the same instruction for a deployment-tools trajectory.
DEPLOY_HDR = (
    "You are reviewing a completed agent trajectory. Use it to answer the question precisely.\n\n"
    "Task: operate the deployment tools and report system state faithfully.\n\nTrajectory:\n"
)


# The update suite's semantics block, appended after HDR (kv_coherence2.py SEM, verbatim): version
# tags, `mirrors` as a live derived view, and what a `memory_patch()` step means.
SEM = (
    "Semantics of this log. Steps are in chronological order. Every observation of a register "
    "is tagged with that register's version number: `[Kappa version 2]` marks Kappa's SECOND "
    "recorded state, which supersedes version 1 from that step onward; version 1 remains the "
    "correct answer for any question asked about an earlier step. Registers connected by "
    "`mirrors` are LIVE DERIVED VIEWS: if register X mirrors register Y, then X's current "
    "state is always Y's latest state, and X's state at any earlier step is Y's state as of "
    "that step. A `memory_patch()` step delivers an out-of-band correction with the same "
    "authority as a regular observation; `supersedes=1` means it replaces version 1 going "
    "forward without erasing it from the record.\n"
)


TOOL_SEPARATOR = " => "


def tool_step_text(index: int, body: str) -> str:
    """A step whose body names its own tool call, "save_checkpoint() => checkpoint saved ..." (the
    paper's kv_refcarrier.py gives each step its action); a body without one is a reg_op() step."""
    action, sep, observation = body.partition(TOOL_SEPARATOR)
    if not sep:
        action, observation = "reg_op()", body
    return f"<step {index + 1}>\naction: {action}\nobservation: {observation}\n"


def entry_text(index: int, body: str) -> str:
    """Event `index` under the paper's untuned PARA surface (kv_frozen.py `wrap`, "para")."""
    return f"<entry {index + 1}>\nevent: system_poll()\nresult: {body}\n"


def patch_step_text(index: int, body: str) -> str:
    """An out-of-band patch appended at query time (kv_coherence2.py `pstep`)."""
    return f"<step {index + 1}>\naction: memory_patch()\nobservation: {body}\n"


def turn_text(index: int, body: str) -> str:
    """A dialog turn (SPEC 3.6): the body is already "[session n date] speaker: text"."""
    return f"{body}\n"


@dataclass(frozen=True)
class Frame:
    """How a pair's events are rendered: the instruction after the chat head, and one event."""

    name: str
    header: str
    render_event: Callable[[int, str], str]
    # An event appended at query time (a served patch); None: rendered like any other event.
    render_appended: Callable[[int, str], str] | None = None

    def appended_text(self, index: int, body: str) -> str:
        return (self.render_appended or self.render_event)(index, body)


FRAMES = {
    "trajectory": Frame("trajectory", HDR, event_text),  # synthetic agent trajectories (SPEC 2.1)
    "dialog": Frame("dialog", DIALOG_HDR, turn_text),  # real multi-session dialogs (harvest)
    # The update suite (kv_coherence2.py): HDR + SEM; a patch step reads `memory_patch()`.
    "versioned": Frame("versioned", HDR + SEM, event_text, patch_step_text),
    # Steps that name their own tool call (kv_refcarrier.py: read_sensor(), update_flag(), ...).
    "tool_steps": Frame("tool_steps", HDR, tool_step_text),
    # kv_phantom.py's deployment-tools trajectories (its own header; steps name their tool calls).
    "deploy_tools": Frame("deploy_tools", DEPLOY_HDR, tool_step_text),
    # The untuned surface of the paper's robustness check (kv_frozen.py PARA; `--template para`).
    "entry": Frame("entry", HDR, entry_text),
}


def question_text(question: str, suffix: str = "") -> str:
    # The paper's separator (every kvmemory script): the question opens with a blank line and is
    # tokenized as its own piece, positions continuing after the last kept row. After an event's
    # final "\n" a one-shot tokenization would merge the newlines, so the query is never checked
    # against one; header and events are (matbench.engine.layout).
    return f"\n\nQuestion: {question}{suffix}"
