"""`--judge MODEL`: a local causal LM grades each free answer against the gold (kv_harvest3.py).

The prompt and the verdict are the paper's (`kvmemory/cross_judge.py` `judge`): the grading request
inside the judge's own chat turn, 6 greedy tokens, yes when the stripped, lower-cased text starts with
"y". The paper judged with the answering checkpoint itself and saved every answer for a re-judge by
another family; here the judge is whatever model the user names (the evaluated one included), it is
recorded in the results config, and the per-item log keeps both the answers and the verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from matbench.errors import MatbenchError
from matbench.protocol.pairs import DonorPair
from matbench.protocol.records import PairRecord

JUDGE_TOKENS = 6  # cross_judge.judge: `_greedy(..., 6)`


def judge_request(question: str, reference: str, answer: str) -> str:
    """cross_judge.judge's user message, verbatim."""
    return (
        f"You are grading an answer to a question about an agent trajectory.\n"
        f"Question: {question}\nReference answer: {reference}\nCandidate answer: {answer}\n\n"
        "Is the candidate correct and consistent with the reference answer? "
        "Reply with exactly one word: yes or no."
    )


def verdict(text: str) -> bool:
    return text.strip().lower().startswith("y")


@dataclass
class Judge:
    """A loaded judge model; `grade` answers are cached, so identical texts (the two members of an
    unpaired item, the same answer under several readouts) are judged once."""

    loaded: Any  # matbench.models.loading.LoadedModel
    verdicts: dict[tuple[str, str, str], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from matbench.engine.render import Renderer
        from matbench.engine.runtime import ModelRunner

        self.runner = ModelRunner(self.loaded.model, self.loaded.text_config)
        self.renderer = Renderer(self.loaded.tokenizer)
        eos = self.loaded.tokenizer.eos_token_id
        gen_eos = getattr(getattr(self.loaded.model, "generation_config", None), "eos_token_id", None)
        self.stop_ids = {t for e in (eos, gen_eos) for t in (e if isinstance(e, list) else [e]) if t is not None}

    @property
    def name(self) -> str:
        return self.loaded.source.name

    def grade(self, question: str, reference: str, answer: str) -> bool:
        key = (question, reference, answer)
        if key not in self.verdicts:
            r = self.renderer
            ids = r.bos_ids + r.ids(r.head + judge_request(question, reference, answer) + r.tail)
            out = self.runner.plain_greedy(ids, JUDGE_TOKENS, self.stop_ids)
            self.verdicts[key] = verdict(self.loaded.tokenizer.decode(out, skip_special_tokens=True))
        return self.verdicts[key]

    def judge_record(self, pair: DonorPair, record: PairRecord, suite: Any) -> PairRecord:
        """`record` with every generated answer graded (`ArmRecord.judged`); arms without text
        (a readout that does not generate) are left as they are."""
        question, reference = suite.judge_prompt(pair)
        # the paper judges the decoded answer stripped (llm_hf `_greedy` returns `.strip()`)
        arms = {
            name: replace(
                arm,
                judged=(
                    self.grade(question, reference, arm.texts[0].strip()),
                    self.grade(question, reference, arm.texts[1].strip()),
                ),
            )
            if arm.texts is not None
            else arm
            for name, arm in record.arms.items()
        }
        return replace(record, arms=arms)


def check_judged(suite: Any, name: str) -> None:
    """Refuse --judge for a suite whose answers are not free text against a gold."""
    if not hasattr(suite, "judge_prompt"):
        raise MatbenchError(
            f"--judge grades free answers against a gold; suite {name} is read from its menu "
            "(harvest_freeform is the judged suite)"
        )
