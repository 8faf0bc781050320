"""Harvest suite (SPEC 3.6): does materialization happen in real multi-session dialogs?

Items over LoCoMo and REALTALK, selected, rendered and asked exactly as the paper's recognition
runs (kv_harvest3.py `select_qa`, kv_harvest4.py, kv_harvnative.py). A row stores references
only (corpus, conversation, QA index, turn ids, the sha256 of the source file) and is hydrated
from the user's copy at eval time; a copy whose hash differs is refused. REALTALK has no
license: its text is never republished.

natural items (one per qualifying QA; unpaired: accuracy, not donor classes). QA categories 1-3
with a non-empty answer and at least one evidence dia_id that exists in the conversation (ids
as listed, unrepaired); carrier candidates are turns in sessions after the last evidence session,
not evidence turns, that share >= 2 content words with the question and whose text, and the text
of the turns around it (+-1), do not contain the gold (case-insensitive). Words and gold checks
read the turn as served ("[session n date] speaker: text"). The top 4 are served, ranked by
(strong first: a shared word in <= 2 sessions; more shared words; an earlier dialog session; dia_id as a
string). Arms: `harv` (carrier rows of the full-history prefill), `iso` (the same turns each
encoded alone, without any header, at their original positions), `text` (carriers re-read as
text after the header), `none` (the header alone, as text) and `goldev` (the evidence turns as
text). Readout: recognition between the gold and a hard negative (the answer of another
selected QA of the same conversation with a different answer, same category first, the first
by question text), the gold's letter set by sha1 of the question (even: A).

injected items (the positive control, the paper's first 4 per conversation: QAs of gold >= 3
characters that occurs in an evidence turn and that neither contains nor is contained in the
negative, strong first, then by question): member A is the conversation, member B its
counterfactual with the gold replaced by the negative (case-insensitive) inside the evidence
turns; a moderator turn appended as a new session refers to the question without the value.
Arms `harv` and `iso` serve only that turn; the letter is sha1("inj" + question).

The variant of a pair is `<kind>/<corpus>/<conversation>/<strong|weak>`: the evaluator clusters
by conversation (REALTALK: by participant component) and reports the strong stratum.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar

from matbench.data_gen.base import SUITES
from matbench.data_gen.dialogs import Conversation, DialogSources, Turn, load_sources
from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "2"
# kv_harvest4 reads recognition from 8 greedy tokens (pick_ab), whatever the readout's budget.
RECOGNITION_TOKENS = 8
CATEGORIES = (1, 2, 3)
N_CARRIERS = 4
N_INJECTED = 4
OPTIONS = ("A", "B")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "to",
        "of",
        "and",
        "in",
        "is",
        "are",
        "was",
        "were",
        "on",
        "at",
        "for",
        "with",
        "as",
        "by",
        "it",
        "this",
        "that",
        "be",
        "been",
        "you",
        "your",
        "what",
        "which",
        "who",
        "how",
        "when",
        "where",
        "did",
        "does",
        "do",
        "i",
        "we",
        "they",
        "he",
        "she",
        "from",
        "about",
        "their",
        "his",
        "her",
        "have",
        "has",
        "had",
        "will",
        "would",
        "can",
        "could",
        "there",
        "not",
        "no",
        "yes",
        "but",
        "or",
        "if",
        "so",
        "its",
        "it's",
        "im",
        "i'm",
    ]
)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def gold_answer(qa: dict[str, Any]) -> str:
    return str(qa.get("answer", "")).strip()


def question_of(qa: dict[str, Any]) -> str:
    return str(qa.get("question", ""))


def gold_option(question: str, injected: bool = False) -> str:
    """Where the gold goes (SPEC 2.5; kv_harvest4.py): A when sha1 of the question (of "inj" +
    the question for an injected item) is even, so both orders occur."""
    key = ("inj" if injected else "") + question
    return OPTIONS[int(hashlib.sha1(key.encode()).hexdigest(), 16) % 2]


@dataclass(frozen=True)
class Selected:
    qa_index: int
    category: int
    evidence: tuple[str, ...]  # the QA's evidence ids that exist, as listed (repeats kept)
    carriers: tuple[str, ...]  # dia_ids, in turn order
    strong: bool  # the top-ranked candidate shares a word that occurs in <= 2 sessions


def select(conv: Conversation) -> list[Selected]:
    """The qualifying QAs of a conversation and their carriers (module docstring;
    kv_harvest3.py `select_qa` rule for rule)."""
    bodies = [t.body().lower() for t in conv.turns]
    words = [content_words(body) for body in bodies]  # each turn's, once: every QA reads them
    known = conv.index_of()
    session_text: dict[int, list[str]] = defaultdict(list)
    for t, body in zip(conv.turns, bodies):
        session_text[t.session].append(body)
    df = Counter(w for texts in session_text.values() for w in content_words(" ".join(texts)))
    out = []
    for q, qa in enumerate(conv.qa):
        gold = gold_answer(qa).lower()
        if qa.get("category", 0) not in CATEGORIES or not gold:
            continue
        evidence = [e for e in (qa.get("evidence") or []) if e in known]
        if not evidence:
            continue
        last = max(conv.turns[known[e]].session for e in evidence)
        asked = content_words(question_of(qa))
        ranked = []
        for i, t in enumerate(conv.turns):
            if t.session <= last or t.dia_id in evidence:
                continue
            shared = asked & words[i]
            if len(shared) < 2 or gold in bodies[i]:
                continue
            if gold in " ".join(bodies[max(0, i - 1) : i + 2]):
                continue
            strong = any(df.get(w, 99) <= 2 for w in shared)
            ranked.append((not strong, -len(shared), t.session, t.dia_id, i))
        if ranked:
            ranked.sort()
            chosen = sorted(r[4] for r in ranked[:N_CARRIERS])
            out.append(
                Selected(
                    q,
                    int(qa["category"]),
                    tuple(evidence),
                    tuple(conv.turns[i].dia_id for i in chosen),
                    not ranked[0][0],
                )
            )
    return out


def hard_negative(conv: Conversation, selected: list[Selected], item: Selected) -> int | None:
    """QA index of the negative (kv_harvest4.py `hard_neg`): among the selected QAs whose answer
    differs (case-insensitive), those of the same category where any exist, the first by
    question text."""
    gold = gold_answer(conv.qa[item.qa_index]).lower()
    others = [s for s in selected if gold_answer(conv.qa[s.qa_index]).lower() != gold]
    same = [s for s in others if s.category == item.category]
    pool = sorted(same or others, key=lambda s: question_of(conv.qa[s.qa_index]))  # stable: QA order on ties
    return pool[0].qa_index if pool else None


def injectable(conv: Conversation, item: Selected, negative: int) -> bool:
    """kv_harvest4.py's positive-control screen: a gold of >= 3 characters that occurs in an
    evidence turn as served, and a negative that neither contains it nor is contained in it."""
    gold = gold_answer(conv.qa[item.qa_index]).lower()
    neg = gold_answer(conv.qa[negative]).lower()
    known = conv.index_of()
    return (
        len(gold) >= 3
        and any(gold in conv.turns[known[e]].body().lower() for e in item.evidence)
        and neg not in gold
        and gold not in neg
    )


def _row(conv: Conversation, kind: str, item: Selected, negative: int) -> dict[str, Any]:
    return {
        "corpus": conv.corpus,
        "source_file": conv.source_file,
        "source_sha256": conv.sha256,
        "conversation": conv.conversation,
        "kind": kind,
        "qa_index": item.qa_index,
        "category": item.category,
        "evidence": list(item.evidence),
        "carriers": list(item.carriers) if kind == "natural" else [],
        "negative_qa_index": negative,
        "strong": item.strong,
        "gold_option": gold_option(question_of(conv.qa[item.qa_index]), injected=kind == "injected"),
    }


def conversation_rows(conv: Conversation) -> list[dict[str, Any]]:
    """The natural rows of every selected QA with a negative, then the paper's injected rows
    (its first N_INJECTED candidates, strong first, then by question)."""
    selected = select(conv)
    rows, candidates = [], []
    for item in selected:
        negative = hard_negative(conv, selected, item)
        if negative is None:
            continue
        rows.append(_row(conv, "natural", item, negative))
        if injectable(conv, item, negative):
            candidates.append((item, negative))
    candidates.sort(key=lambda x: (not x[0].strong, question_of(conv.qa[x[0].qa_index])))
    return rows + [_row(conv, "injected", item, negative) for item, negative in candidates[:N_INJECTED]]


def injected_turn(conv: Conversation, question: str) -> Turn:
    last = conv.turns[-1].session
    return Turn(
        last + 1,
        "INJ",
        "moderator",
        "follow-up",
        f'for the record, the answer to "{question}" was determined earlier in this chat and noted accordingly',
    )


def recognition_question(question: str, gold: str, negative: str, gold_letter: str) -> str:
    """kv_harvest4.py `recog_q` after its "\n\nQuestion: " (which `question_text` adds): the
    options and the answer instruction, so the arms are open questions (no readout suffix)."""
    a, b = (gold, negative) if gold_letter == "A" else (negative, gold)
    return f"{question}\nOption A: {a}\nOption B: {b}\nWhich option is correct? Answer A or B."


@dataclass(frozen=True)
class HarvestDraw:
    """Everything a harvest pair is built from, explicit: the conversation's turns (as served),
    the QA's question, gold and negative, the evidence and carrier turn indices, the gold's
    letter, the kind and the variant."""

    kind: str  # natural | injected
    bodies: tuple[str, ...]
    question: str
    gold: str
    negative: str
    letter: str
    evidence: tuple[int, ...]  # sorted, distinct
    carriers: tuple[int, ...] = ()  # sorted (natural items)
    injected: str = ""  # the appended moderator turn's body (injected items)


def build(draw: HarvestDraw, item_id: str, variant: str) -> DonorPair:
    """The donor pair of a draw (rendered by the "dialog" frame: the chat head alone as header)."""
    ask = recognition_question(draw.question, draw.gold, draw.negative, draw.letter)
    bodies = list(draw.bodies)
    evidence = list(draw.evidence)
    frame = {"frame": "dialog", "menu": OPTIONS, "item_id": item_id, "variant": variant}
    if draw.kind == "natural":
        carriers = draw.carriers
        arms = (
            Arm("harv", carriers, ask, open_question=True, budget=RECOGNITION_TOKENS),
            Arm("iso", carriers, ask, encoding="headless", open_question=True, budget=RECOGNITION_TOKENS),
            Arm("text", carriers, ask, encoding="text", open_question=True, budget=RECOGNITION_TOKENS),
            Arm("none", (), ask, encoding="text", open_question=True, budget=RECOGNITION_TOKENS),
            Arm(
                "goldev",
                tuple(evidence),
                ask,
                uses_source=True,
                encoding="text",
                open_question=True,
                budget=RECOGNITION_TOKENS,
            ),
        )
        return DonorPair(
            events=tuple(bodies),
            source=evidence[-1],
            source_bodies=(bodies[evidence[-1]],) * 2,
            values=(draw.letter, draw.letter),
            arms=arms,
            leak_patterns=(re.escape(draw.gold),),
            donor_events=tuple((i, bodies[i], bodies[i]) for i in evidence[:-1]),
            paired=False,
            **frame,
        )  # type: ignore[arg-type]
    # injected: member B swaps the gold for the negative inside the evidence turns (kv_harvest4's
    # `pat.sub(neg, txt)` on the turn as served: a gold that is also a speaker's name swaps there too)
    pattern = re.compile(re.escape(draw.gold), re.IGNORECASE)
    try:
        counterfactual = {i: pattern.sub(draw.negative, bodies[i]) for i in evidence}
    except re.error as exc:
        raise MatbenchError(
            f"item {item_id}: the negative {draw.negative!r} is not a replacement text ({exc})"
        ) from None
    changed = [i for i in evidence if counterfactual[i] != bodies[i]]
    if not changed:
        raise MatbenchError(
            f"item {item_id}: no evidence turn names the gold, so the counterfactual equals the original"
        )
    events = tuple(bodies) + (draw.injected,)
    inj = len(events) - 1
    other = OPTIONS[1 - OPTIONS.index(draw.letter)]
    arms = (
        Arm("harv", (inj,), ask, open_question=True, budget=RECOGNITION_TOKENS),
        Arm("iso", (inj,), ask, encoding="headless", open_question=True, budget=RECOGNITION_TOKENS),
    )
    # The one served turn is a template over the question, identical in both members and drawn
    # without the donor: whatever it names (a question that names the gold, a negative made of
    # words such as "to" or "the") the query names too. So it is declared donor-independent
    # (a decoy) and carries no leak patterns; the paper serves these items as they are.
    return DonorPair(
        events=events,
        source=changed[0],
        source_bodies=(bodies[changed[0]], counterfactual[changed[0]]),
        values=(draw.letter, other),
        arms=arms,
        decoys=(inj,),
        donor_events=tuple((i, bodies[i], counterfactual[i]) for i in changed[1:]),
        **frame,
    )  # type: ignore[arg-type]


def draw_of(row: dict[str, Any], conv: Conversation) -> HarvestDraw:
    """The explicit draw of a (checked) row over its conversation."""
    known = conv.index_of()
    qa = conv.qa[row["qa_index"]]
    question = question_of(qa)
    injected = row["kind"] == "injected"
    return HarvestDraw(
        kind=row["kind"],
        bodies=conv.bodies(),
        question=question,
        gold=gold_answer(qa),
        negative=gold_answer(conv.qa[row["negative_qa_index"]]),
        letter=row["gold_option"],
        evidence=tuple(sorted({known[d] for d in row["evidence"]})),
        carriers=tuple(sorted(known[d] for d in row["carriers"])),
        injected=injected_turn(conv, question).body() if injected else "",
    )


def variant_of(row: dict[str, Any]) -> str:
    return f"{row['kind']}/{row['corpus']}/{row['conversation']}/{'strong' if row['strong'] else 'weak'}"


def conversation_of(row: dict[str, Any], conversations: dict[tuple[str, str], Conversation]) -> Conversation:
    """The row's conversation in the user's copy, refused when absent or of another hash."""
    item, suite = row["item_id"], row.get("suite", "harvest")
    conv = conversations.get((row["corpus"], row["conversation"]))
    if conv is None:
        flag = "--locomo PATH" if row["corpus"] == "locomo" else "--realtalk DIR"
        raise MatbenchError(f"{suite} row {item} needs {row['corpus']} conversation {row['conversation']}; pass {flag}")
    if conv.sha256 != row["source_sha256"]:
        raise MatbenchError(
            f"{suite} row {item}: your {conv.source_file} has sha256 {conv.sha256[:12]}…, the suite was generated "
            f"from {row['source_sha256'][:12]}…; use the same copy of {row['corpus']} or regenerate the suite"
        )
    return conv


def hydrate(row: dict[str, Any], conversations: dict[tuple[str, str], Conversation]) -> DonorPair:
    """The donor pair of a row, its text read from the user's copy of the corpus."""
    item = row["item_id"]
    conv = conversation_of(row, conversations)
    known = conv.index_of()
    missing = [d for d in row["evidence"] + row["carriers"] if d not in known]
    if missing or not row["evidence"]:
        what = f"turn {missing[0]} is not in {conv.source_file}" if missing else "it lists no evidence turn"
        raise MatbenchError(f"malformed harvest row {item}: {what}")
    bad = [k for k in ("qa_index", "negative_qa_index") if not 0 <= row[k] < len(conv.qa)]
    if bad:
        raise MatbenchError(f"malformed harvest row {item}: {bad[0]} {row[bad[0]]} is not a QA of {conv.source_file}")
    return build(draw_of(row, conv), item, variant_of(row))


HARVEST_FIELDS = (
    "item_id",
    "suite",
    "version",
    "seed",
    "index",
    "corpus",
    "source_file",
    "source_sha256",
    "conversation",
    "kind",
    "qa_index",
    "category",
    "evidence",
    "carriers",
    "negative_qa_index",
    "strong",
    "gold_option",
    "content_hash",
)
HARVEST_DOCS = {
    "item_id": "unique id `harvest-v<version>-s<seed>-<index>`",
    "suite": "suite (= config) name",
    "version": "generator version",
    "seed": "seed of the item order",
    "index": "position in the round-robin order over conversations",
    "corpus": "locomo or realtalk",
    "source_file": "file of the user's copy the row refers to (locomo10.json, Chat_<k>_<A>_<B>.json)",
    "source_sha256": "sha256 of that file; hydration refuses a copy with another hash",
    "conversation": "LoCoMo sample_id or REALTALK file stem",
    "kind": "natural (a QA over its natural carriers) or injected (the counterfactual positive control)",
    "qa_index": "index of the QA in the conversation's `qa` list",
    "category": "QA category (1-3)",
    "evidence": "the QA's evidence dia_ids that exist in the conversation, as listed (the paper's rule: malformed ids "
    "are not repaired)",
    "carriers": "dia_ids of the served carrier turns (natural items)",
    "negative_qa_index": "QA whose answer is the hard negative option",
    "strong": "the top-ranked carrier shares a word with the question that occurs in at most two sessions (the "
    "paper's strong stratum)",
    "gold_option": 'option letter of the gold answer (sha1 of the question, of "inj" + the question for injected '
    "items: even = A)",
    "content_hash": "sha256 of the row's canonical JSON without this field",
}


def row_hash(row: dict[str, Any], fields: tuple[str, ...] = HARVEST_FIELDS) -> str:
    body = {k: row[k] for k in fields if k != "content_hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class HarvestSuite:
    """The harvest suite: rows from the user's LoCoMo / REALTALK copies, hydrated at eval time.
    Items are ordered round-robin over conversations (each conversation's items shuffled by the
    seed), so the first n items of any seed spread over every conversation. Items whose
    hydrated pair fails a generation check are left out and counted in `refusals`."""

    name: str = "harvest"
    version: str = VERSION
    default_n: int | None = None  # every qualifying item
    summary: str = "do rows computed with the whole dialog carry more than the same turns encoded alone? (kv_harvest3/4, LoCoMo and REALTALK references)"
    contract: bool = True
    paraphrase: bool = False  # real dialogs: no synthetic statements to reword
    servings: tuple[str, ...] = ()  # `--serving auto`: the model's own
    readouts: tuple[str, ...] = ()  # any
    paper: None = None  # natural dialogs: no random stream of the paper's to reproduce

    def build(self, seed: int, n: int | None, sources: DialogSources | None) -> tuple[list[dict], Counter]:
        if sources is None or not (sources.locomo or sources.realtalk):
            raise MatbenchError(
                "the harvest suite is built from your copies of the dialogs: pass --locomo PATH "
                "(locomo10.json) and/or --realtalk DIR (Chat_*.json)"
            )
        if n is not None and n < 1:
            raise MatbenchError(f"--n-items must be at least 1 (got {n})")
        queues, refusals = [], Counter()
        for conv in load_sources(sources.locomo, sources.realtalk):
            rows = []
            for row in self.conversation_rows(conv):
                try:
                    _checked(
                        self.hydrate(
                            {**row, "item_id": f"{conv.conversation}/q{row['qa_index']}"},
                            {(conv.corpus, conv.conversation): conv},
                        )
                    )
                except MatbenchError as exc:
                    reason = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "…", str(exc).split(": ", 1)[-1].split(" (")[0])
                    refusals[f"{row['kind']}: {reason}"] += 1
                    continue
                rows.append(row)
            groups = self.group_rows(rows)
            random.Random(f"{self.name}/{self.version}/{seed}/{conv.corpus}/{conv.conversation}").shuffle(groups)
            queues.append(groups)
        dealt = [
            group for k in range(max(map(len, queues), default=0)) for q in queues if k < len(q) for group in [q[k]]
        ]
        ordered = [row for group in dealt for row in group]
        if n is not None and n < len(ordered):
            self.note_cut_group(dealt, n)
            ordered = ordered[:n]
        out = []
        for index, row in enumerate(ordered):
            row = {
                "item_id": f"{self.name}-v{self.version}-s{seed}-{index:05d}",
                "suite": self.name,
                "version": self.version,
                "seed": seed,
                "index": index,
                **row,
            }
            out.append({**row, "content_hash": self.row_hash({**row, "content_hash": ""})})
        return out, refusals

    def dataset_rows(self, seed: int, n: int | None, sources: DialogSources | None = None) -> list[dict[str, Any]]:
        return self.build(seed, n, sources)[0]

    def features(self):
        from datasets import Features, Sequence, Value

        kinds = {
            "int": Value("int64"),
            "str": Value("string"),
            "bool": Value("bool"),
            "list": Sequence(Value("string")),
        }
        types = dict.fromkeys(self.fields, "str")
        types.update(
            seed="int",
            index="int",
            qa_index="int",
            category="int",
            negative_qa_index="int",
            window="int",
            strong="bool",
            evidence="list",
            carriers="list",
            units="list",
        )
        return Features({k: kinds[types[k]] for k in self.fields})

    def field_docs(self) -> dict[str, str]:
        return {k: self.docs[k] for k in self.fields}

    # What a subclass over the same dialogs (harvest_freeform) replaces: its rows per
    # conversation, their fields, and how a row becomes a donor pair.
    fields: ClassVar[tuple[str, ...]] = HARVEST_FIELDS
    docs: ClassVar[dict[str, str]] = HARVEST_DOCS

    def conversation_rows(self, conv: Conversation) -> list[dict[str, Any]]:
        return conversation_rows(conv)

    def hydrate(self, row: dict[str, Any], conversations: dict[tuple[str, str], Conversation]) -> DonorPair:
        return hydrate(row, conversations)

    def group_rows(self, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """The units the seed shuffles and the order deals round-robin: one row each here."""
        return [[row] for row in rows]

    def note_cut_group(self, dealt: list[list[dict[str, Any]]], n: int) -> None:
        """Say so when the first `n` rows end inside a group (harvest_freeform: a QA's windows, whose
        dose then lacks the windows cut off), with the nearest counts that keep whole groups."""
        start = 0
        for group in dealt:
            if start < n < start + len(group):
                print(
                    f"note: the first {n} {self.name} rows end inside a QA's windows ({n - start} of its "
                    f"{len(group)} rows kept: its dose lacks the rest); {start} or {start + len(group)} rows keep "
                    "whole QAs",
                    file=sys.stderr,
                )
                return
            start += len(group)

    def row_hash(self, row: dict[str, Any]) -> str:
        return row_hash(row, self.fields)

    def card_section(self) -> str:
        """The dataset card's section on this config's fields (configs of references only)."""
        return f"""
## Fields (harvest config: references only)

Each row is one QA of a LoCoMo or REALTALK conversation. Turns render as `[session n date]
speaker: text`; the recognition readout asks the question with the gold and a hard negative as
options A and B.

| field | type | meaning |
|---|---|---|
{self._field_rows()}
"""

    def _field_rows(self) -> str:
        from matbench.data_gen.publish import field_table

        return field_table(self)

    def pairs_from_rows(self, rows: list[dict[str, Any]], sources: DialogSources | None = None) -> list[DonorPair]:
        for row in rows:
            missing = [k for k in self.fields if k not in row]
            if missing:
                raise MatbenchError(
                    f"malformed {self.name} row {row.get('item_id', '?')}: missing field {missing[0]!r}"
                )
            if row["content_hash"] != self.row_hash(row):
                raise MatbenchError(
                    f"malformed {self.name} row {row['item_id']}: content_hash does not match its fields"
                )
        sources = sources or DialogSources()
        corpora = {row["corpus"] for row in rows}
        conversations = {
            (c.corpus, c.conversation): c
            for c in load_sources(
                sources.locomo if "locomo" in corpora else None, sources.realtalk if "realtalk" in corpora else None
            )
        }
        return [_checked(self.hydrate(row, conversations)) for row in rows]

    def generate(self, seed: int = 0, n: int | None = None, sources: DialogSources | None = None) -> list[DonorPair]:
        return self.pairs_from_rows(self.dataset_rows(seed, n, sources), sources)


def _checked(pair: DonorPair) -> DonorPair:
    from matbench.data_gen.checks import check_pair

    pair.validate()
    check_pair(pair)
    return pair


SUITE = SUITES.register("harvest")(HarvestSuite())
