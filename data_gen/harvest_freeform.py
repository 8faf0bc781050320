"""Harvest, free-form (kv_harvest3.py): the real-dialog test with a short free answer, and its window dose.

The QAs and carriers are harvest's (kv_harvest3.py `select_qa`, the rule `matbench.data_gen.harvest.select`
implements), without harvest's need for a hard negative: every QA with a carrier qualifies. Each QA gives
one row per window w of WINDOWS (consecutive rows, the dose test's paired design): the served units are the
top-4 carriers (w = 0, the paper's default run) or every turn within +-w turns of a carrier that lies in a
session after the last evidence session, is not an evidence turn and does not contain the gold
(kv_harvest3.py `--win`: "the same session-after-evidence + leak screens applied per window turn").

Arms (kv_harvest3.py; the question and readout identical across them): `none` (the header and the question),
`text` (the units re-read as text), `iso` (the units' rows, each run of consecutive units encoded together
with nothing before it at its original positions: kv_harvest3's iso runs), `harv` (the units' rows of the
one full-dialog prefill) and `goldev` (the evidence turns as text). The readout is the paper's: the question,
then "Answer with as few words as possible (a name, a date, a short phrase).", and 24 greedy tokens. The
answer is scored by a judge model where the run names one (`matbench eval --judge MODEL`: the paper's
cross_judge prompt), and always by whether it names the gold (matbench's whole-phrase match and the
paper-style substring) and by token F1 against it.

Items are unpaired (both members are the dialog as it is): accuracy per arm, harv - iso clustered by
conversation, and the dose: harv - iso at each window against the same QA's at window 0. The variant
`natural/<corpus>/<conversation>/<strong|weak>/q<qa_index>/w<window>` carries what the evaluator
groups by.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from matbench.data_gen.base import SUITES
from matbench.data_gen.dialogs import Conversation
from matbench.data_gen.harvest import (
    HARVEST_DOCS,
    HarvestSuite,
    Selected,
    conversation_of,
    gold_answer,
    question_of,
    select,
)
from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
INSTRUCTION = "Answer with as few words as possible (a name, a date, a short phrase)."  # kv_harvest3.py INSTR
ANSWER_TOKENS = 24  # kv_harvest3.py: 24-token greedy
WINDOWS = (0, 1, 2)

FREEFORM_FIELDS = (
    "item_id",
    "suite",
    "version",
    "seed",
    "index",
    "corpus",
    "source_file",
    "source_sha256",
    "conversation",
    "qa_index",
    "category",
    "evidence",
    "carriers",
    "strong",
    "window",
    "units",
    "content_hash",
)
FREEFORM_DOCS = {
    **HARVEST_DOCS,
    "item_id": "unique id `harvest_freeform-v<version>-s<seed>-<index>`",
    "index": "position in the round-robin order over conversations (a QA's windows are consecutive)",
    "carriers": "dia_ids of the top-4 carrier turns (kv_harvest3's selection)",
    "window": f"the dose: served units are the turns within +-window of a carrier that pass the screens (one of "
    f"{', '.join(map(str, WINDOWS))}; 0 = the carriers)",
    "units": "dia_ids of the served turns, in turn order",
}


def window_units(conv: Conversation, item: Selected, window: int) -> tuple[int, ...]:
    """The served turn indices of `item` at `window` (module docstring; kv_harvest3.py `--win`)."""
    known = conv.index_of()
    carriers = sorted(known[d] for d in item.carriers)
    if not window:
        return tuple(carriers)
    gold = gold_answer(conv.qa[item.qa_index]).lower()
    last = max(conv.turns[known[e]].session for e in item.evidence)
    evidence = set(item.evidence)
    units = {
        j
        for i in carriers
        for j in range(i - window, i + window + 1)
        if 0 <= j < len(conv.turns)
        and conv.turns[j].session > last
        and conv.turns[j].dia_id not in evidence
        and gold not in conv.turns[j].body().lower()
    }
    return tuple(sorted(units))


def freeform_question(question: str) -> str:
    """kv_harvest3.py's query after its "\n\nQuestion: " (which `question_text` adds)."""
    return f"{question}\n{INSTRUCTION}"


def build(
    bodies: tuple[str, ...],
    question: str,
    gold: str,
    evidence: tuple[int, ...],
    units: tuple[int, ...],
    item_id: str,
    variant: str,
) -> DonorPair:
    """The (unpaired) pair of one QA at one window, rendered by the "dialog" frame."""
    ask = freeform_question(question)
    arm: dict[str, Any] = {"open_question": True, "budget": ANSWER_TOKENS}
    arms = (
        Arm("harv", units, ask, **arm),
        Arm("iso", units, ask, encoding="headless_runs", **arm),
        Arm("text", units, ask, encoding="text", **arm),
        Arm("none", (), ask, encoding="text", **arm),
        Arm("goldev", evidence, ask, uses_source=True, encoding="text", **arm),
    )
    return DonorPair(
        item_id=item_id,
        events=bodies,
        source=evidence[-1],
        source_bodies=(bodies[evidence[-1]],) * 2,
        values=(gold, gold),
        menu=(gold,),
        arms=arms,
        leak_patterns=(re.escape(gold),),
        donor_events=tuple((i, bodies[i], bodies[i]) for i in evidence[:-1]),
        paired=False,
        frame="dialog",
        variant=variant,
    )


class HarvestFreeformSuite(HarvestSuite):
    """harvest_freeform: harvest's dialogs and selection, every window of each QA, free answers.
    Read by generation alone: every arm is an open question with its own 24-token budget, so the
    generating readouts all decode the same text; `short` stands for them."""

    fields: ClassVar[tuple[str, ...]] = FREEFORM_FIELDS
    docs: ClassVar[dict[str, str]] = FREEFORM_DOCS

    def conversation_rows(self, conv: Conversation) -> list[dict[str, Any]]:
        rows = []
        for item in select(conv):
            for window in WINDOWS:
                units = window_units(conv, item, window)
                rows.append(
                    {
                        "corpus": conv.corpus,
                        "source_file": conv.source_file,
                        "source_sha256": conv.sha256,
                        "conversation": conv.conversation,
                        "qa_index": item.qa_index,
                        "category": item.category,
                        "evidence": list(item.evidence),
                        "carriers": list(item.carriers),
                        "strong": item.strong,
                        "window": window,
                        "units": [conv.turns[i].dia_id for i in units],
                    }
                )
        return rows

    def group_rows(self, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """A QA's windows stay together (and in order) when the seed shuffles a conversation's rows."""
        groups: dict[int, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(row["qa_index"], []).append(row)
        return list(groups.values())

    def hydrate(self, row: dict[str, Any], conversations: dict[tuple[str, str], Conversation]) -> DonorPair:
        item = row["item_id"]
        conv = conversation_of(row, conversations)
        known = conv.index_of()
        missing = [d for d in row["evidence"] + row["units"] if d not in known]
        if missing or not row["evidence"] or not row["units"]:
            what = (
                f"turn {missing[0]} is not in {conv.source_file}"
                if missing
                else f"it lists no {'evidence' if not row['evidence'] else 'served'} turn"
            )
            raise MatbenchError(f"malformed {self.name} row {item}: {what}")
        if not 0 <= row["qa_index"] < len(conv.qa):
            raise MatbenchError(
                f"malformed {self.name} row {item}: qa_index {row['qa_index']} is not a QA of {conv.source_file}"
            )
        if row["window"] not in WINDOWS:
            raise MatbenchError(f"malformed {self.name} row {item}: window {row['window']} is not one of {WINDOWS}")
        qa = conv.qa[row["qa_index"]]
        variant = (
            f"natural/{row['corpus']}/{row['conversation']}/{'strong' if row['strong'] else 'weak'}/"
            f"q{row['qa_index']}/w{row['window']}"
        )
        return build(
            conv.bodies(),
            question_of(qa),
            gold_answer(qa),
            tuple(sorted({known[d] for d in row["evidence"]})),
            tuple(sorted(known[d] for d in row["units"])),
            item,
            variant,
        )

    def judge_prompt(self, pair: DonorPair) -> tuple[str, str]:
        """(question, reference) the judge grades an answer of `pair` against: the QA's question
        without the answer instruction, and its gold (kv_harvest3: `qa["q"]`, `qa["gold"]`)."""
        return pair.arms[0].question.removesuffix("\n" + INSTRUCTION), pair.values[0]

    def card_section(self) -> str:
        return f"""
## Fields (harvest_freeform config: references only)

Each row is one QA of a LoCoMo or REALTALK conversation at one window of the dose test (a QA's
windows are consecutive rows). The question is asked openly ("Answer with as few words as
possible ...", 24 greedy tokens) and the answer is scored against the gold.

| field | type | meaning |
|---|---|---|
{self._field_rows()}
"""


SUITE = SUITES.register("harvest_freeform")(
    HarvestFreeformSuite(
        name="harvest_freeform",
        version=VERSION,
        contract=False,
        readouts=("short",),
        summary="free answers on real dialogs, judged, and the carrier-window dose (kv_harvest3, LoCoMo and REALTALK "
        "references)",
    )
)
