"""Harvest suite (SPEC 3.6): does materialization happen in real multi-session dialogs?

Items over LoCoMo and REALTALK. A row stores references only (corpus, conversation, QA index,
turn ids, the sha256 of the source file) and is hydrated from the user's copy at eval time; a
copy whose hash differs is refused. REALTALK has no license: its text is never republished.

natural items (one per qualifying QA; unpaired: accuracy, not donor classes). QA categories 1-3
with a non-empty answer and resolvable evidence; carrier candidates are turns in sessions after
the last evidence session that share >= 2 content words with the question and whose text, and
whose +-1 neighbours', do not contain the gold; the top 4 are served (strong first: a shared word
in <= 2 sessions; then more shared words; then earlier). Arms: `harv` (carrier rows of the
full-history prefill), `iso` (the same turns each encoded alone at their positions), `text`
(carriers re-read as text), `none` (header only) and `goldev` (the evidence turns as text).
Readout: recognition between the gold and a hard negative (the answer of another QA of the same
conversation, same category first), the gold's option letter set by a hash of the question.

injected items (the positive control, <= 4 per conversation, QAs whose gold occurs verbatim in
an evidence turn): member A is the conversation, member B its counterfactual with the gold
replaced by the negative inside the evidence turns; a synthetic moderator turn appended at the
end refers to the question without the value. Arms `harv` and `iso` serve only that turn.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from matbench.data_gen.base import SUITES
from matbench.data_gen.dialogs import (
    Conversation,
    DialogSources,
    Turn,
    load_sources,
    resolve_evidence,
)
from matbench.errors import MatbenchError
from matbench.protocol.pairs import Arm, DonorPair

VERSION = "1"
CATEGORIES = (1, 2, 3)
N_CARRIERS = 4
N_INJECTED = 4
OPTIONS = ("A", "B")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset((
    "the a an to of and in is are was were on at for with as by it this that be been you your what which who "
    "how when where did does do i we they he she from about their his her have has had will would can could "
    "there not no yes but or if so its it's im i'm").split())


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def gold_answer(qa: dict[str, Any]) -> str:
    return " ".join(str(qa.get("answer", "")).split())


def gold_option(question: str) -> str:
    """Where the gold goes (SPEC 2.5): a hash of the question, so both orders occur."""
    return OPTIONS[int(hashlib.sha256(question.encode()).hexdigest(), 16) % 2]


@dataclass(frozen=True)
class Selected:
    qa_index: int
    category: int
    evidence: tuple[str, ...]
    carriers: tuple[str, ...]
    strong: bool


def select(conv: Conversation) -> list[Selected]:
    """The qualifying QAs of a conversation and their carriers (module docstring)."""
    known = conv.index_of()
    session_words: dict[int, set[str]] = defaultdict(set)
    for t in conv.turns:
        session_words[t.session] |= content_words(t.text)
    df = Counter(w for words in session_words.values() for w in words)
    out = []
    for q, qa in enumerate(conv.qa):
        gold = gold_answer(qa).lower()
        if qa.get("category") not in CATEGORIES or not gold:
            continue
        evidence = resolve_evidence(qa.get("evidence"), known)
        if not evidence:
            continue
        last = max(conv.turns[known[e]].session for e in evidence)
        asked = content_words(str(qa.get("question", "")))
        ranked = []
        for i, t in enumerate(conv.turns):
            if t.session <= last or t.dia_id in evidence:
                continue
            shared = asked & content_words(t.text)
            window = " ".join(u.text.lower() for u in conv.turns[max(0, i - 1):i + 2])
            if len(shared) < 2 or gold in window:
                continue
            strong = any(df[w] <= 2 for w in shared)
            ranked.append((not strong, -len(shared), t.session, i))
        if ranked:
            ranked.sort()
            chosen = sorted(r[3] for r in ranked[:N_CARRIERS])
            out.append(Selected(q, int(qa["category"]), tuple(evidence),
                                tuple(conv.turns[i].dia_id for i in chosen), not ranked[0][0]))
    return out


def hard_negative(conv: Conversation, selected: list[Selected], item: Selected) -> int | None:
    """QA index of the negative: the first (by question text) other selected QA with a different
    answer, of the same category where one exists."""
    gold = gold_answer(conv.qa[item.qa_index]).lower()
    others = [s for s in selected if gold_answer(conv.qa[s.qa_index]).lower() != gold]
    same = [s for s in others if s.category == item.category]
    pool = sorted(same or others, key=lambda s: (str(conv.qa[s.qa_index].get("question", "")), s.qa_index))
    return pool[0].qa_index if pool else None


def _row(conv: Conversation, kind: str, item: Selected, negative: int) -> dict[str, Any]:
    question = str(conv.qa[item.qa_index].get("question", ""))
    return {
        "corpus": conv.corpus, "source_file": conv.source_file, "source_sha256": conv.sha256,
        "conversation": conv.conversation, "kind": kind, "qa_index": item.qa_index, "category": item.category,
        "evidence": list(item.evidence), "carriers": list(item.carriers) if kind == "natural" else [],
        "negative_qa_index": negative, "strong": item.strong,
        "gold_option": gold_option(("inject:" if kind == "injected" else "") + question),
    }


def conversation_rows(conv: Conversation) -> list[dict[str, Any]]:
    selected = select(conv)
    rows = []
    injectable = []
    for item in selected:
        negative = hard_negative(conv, selected, item)
        if negative is None:
            continue
        rows.append(_row(conv, "natural", item, negative))
        gold = gold_answer(conv.qa[item.qa_index]).lower()
        neg = gold_answer(conv.qa[negative]).lower()
        known = conv.index_of()
        if (len(gold) >= 3 and gold not in neg and neg not in gold
                and any(gold in conv.turns[known[e]].text.lower() for e in item.evidence)):
            injectable.append((item, negative))
    injectable.sort(key=lambda x: (not x[0].strong, str(conv.qa[x[0].qa_index].get("question", ""))))
    # Every candidate, best first: the builder keeps the first N_INJECTED that pass the checks.
    rows += [_row(conv, "injected", item, negative) for item, negative in injectable]
    return rows


def injected_turn(conv: Conversation, question: str) -> Turn:
    last = conv.turns[-1].session
    return Turn(last + 1, "INJ", "moderator", "follow-up",
                f'for the record, the answer to "{question}" was determined earlier in this chat and noted accordingly')


def recognition_question(question: str, gold: str, negative: str, gold_letter: str) -> str:
    a, b = (gold, negative) if gold_letter == "A" else (negative, gold)
    return f"{question}\nOption A: {a}\nOption B: {b}\nWhich option is correct?"


def hydrate(row: dict[str, Any], conversations: dict[tuple[str, str], Conversation]) -> DonorPair:
    """The donor pair of a row, its text read from the user's copy of the corpus."""
    item = row["item_id"]
    conv = conversations.get((row["corpus"], row["conversation"]))
    if conv is None:
        flag = "--locomo PATH" if row["corpus"] == "locomo" else "--realtalk DIR"
        raise MatbenchError(f"harvest row {item} needs {row['corpus']} conversation {row['conversation']}; pass {flag}")
    if conv.sha256 != row["source_sha256"]:
        raise MatbenchError(
            f"harvest row {item}: your {conv.source_file} has sha256 {conv.sha256[:12]}…, the suite was generated "
            f"from {row['source_sha256'][:12]}…; use the same copy of {row['corpus']} or regenerate the suite"
        )
    known = conv.index_of()
    missing = [d for d in row["evidence"] + row["carriers"] if d not in known]
    if missing:
        raise MatbenchError(f"malformed harvest row {item}: turn {missing[0]} is not in {conv.source_file}")
    bad = [k for k in ("qa_index", "negative_qa_index") if not 0 <= row[k] < len(conv.qa)]
    if bad:
        raise MatbenchError(f"malformed harvest row {item}: {bad[0]} {row[bad[0]]} is not a QA of {conv.source_file}")
    qa = conv.qa[row["qa_index"]]
    question, gold = " ".join(str(qa.get("question", "")).split()), gold_answer(qa)
    negative = gold_answer(conv.qa[row["negative_qa_index"]])
    letter = row["gold_option"]
    other = OPTIONS[1 - OPTIONS.index(letter)]
    ask = recognition_question(question, gold, negative, letter)
    evidence = sorted(known[d] for d in row["evidence"])
    bodies = [t.body() for t in conv.turns]
    frame = {"frame": "dialog", "menu": OPTIONS, "item_id": item, "variant": f"{row['kind']}/{row['corpus']}/{conv.conversation}"}
    if row["kind"] == "natural":
        carriers = tuple(sorted(known[d] for d in row["carriers"]))
        arms = (
            Arm("harv", carriers, ask),
            Arm("iso", carriers, ask, encoding="isolated"),
            Arm("text", carriers, ask, encoding="text"),
            Arm("none", (), ask),
            Arm("goldev", tuple(evidence), ask, uses_source=True, encoding="text"),
        )
        return DonorPair(events=tuple(bodies), source=evidence[-1], source_bodies=(bodies[evidence[-1]],) * 2,
                         values=(letter, letter), arms=arms, leak_patterns=(re.escape(gold),),
                         donor_events=tuple((i, bodies[i], bodies[i]) for i in evidence[:-1]), paired=False,
                         **frame)  # type: ignore[arg-type]
    # injected: member B swaps the gold for the negative inside the evidence turns that name it
    pattern = re.compile(re.escape(gold), re.IGNORECASE)
    changed = [i for i in evidence if pattern.search(conv.turns[i].text)]
    counterfactual = {i: Turn(t.session, t.dia_id, t.speaker, t.date, pattern.sub(negative, t.text)).body()
                      for i in changed for t in [conv.turns[i]]}
    events = tuple(bodies) + (injected_turn(conv, question).body(),)
    inj = len(events) - 1
    arms = (Arm("harv", (inj,), ask), Arm("iso", (inj,), ask, encoding="isolated"))
    return DonorPair(events=events, source=changed[0], source_bodies=(bodies[changed[0]], counterfactual[changed[0]]),
                     values=(letter, other), arms=arms,
                     leak_patterns=(re.escape(gold), re.escape(negative)),
                     donor_events=tuple((i, bodies[i], counterfactual[i]) for i in changed[1:]),
                     **frame)  # type: ignore[arg-type]


HARVEST_FIELDS = ("item_id", "suite", "version", "seed", "index", "corpus", "source_file", "source_sha256",
                  "conversation", "kind", "qa_index", "category", "evidence", "carriers", "negative_qa_index",
                  "strong", "gold_option", "content_hash")
HARVEST_DOCS = {
    "item_id": "unique id `harvest-v<version>-s<seed>-<index>`",
    "suite": "suite (= config) name", "version": "generator version", "seed": "seed of the item order",
    "index": "position in the round-robin order over conversations",
    "corpus": "locomo or realtalk",
    "source_file": "file of the user's copy the row refers to (locomo10.json, Chat_<k>_<A>_<B>.json)",
    "source_sha256": "sha256 of that file; hydration refuses a copy with another hash",
    "conversation": "LoCoMo sample_id or REALTALK file stem",
    "kind": "natural (a QA over its natural carriers) or injected (the counterfactual positive control)",
    "qa_index": "index of the QA in the conversation's `qa` list",
    "category": "QA category (1-3)",
    "evidence": "resolved evidence dia_ids (malformed ids normalised, unresolvable ones dropped)",
    "carriers": "dia_ids of the served carrier turns (natural items)",
    "negative_qa_index": "QA whose answer is the hard negative option",
    "strong": "a carrier shares a word with the question that occurs in at most two sessions",
    "gold_option": "option letter of the gold answer (a hash of the question)",
    "content_hash": "sha256 of the row's canonical JSON without this field",
}


def row_hash(row: dict[str, Any]) -> str:
    body = {k: row[k] for k in HARVEST_FIELDS if k != "content_hash"}
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

    def build(self, seed: int, n: int | None, sources: DialogSources | None) -> tuple[list[dict], Counter]:
        if sources is None or not (sources.locomo or sources.realtalk):
            raise MatbenchError("the harvest suite is built from your copies of the dialogs: pass --locomo PATH "
                                "(locomo10.json) and/or --realtalk DIR (Chat_*.json)")
        if n is not None and n < 1:
            raise MatbenchError(f"--n-items must be at least 1 (got {n})")
        queues, refusals = [], Counter()
        for conv in load_sources(sources.locomo, sources.realtalk):
            rows = []
            for row in conversation_rows(conv):
                if row["kind"] == "injected" and sum(r["kind"] == "injected" for r in rows) == N_INJECTED:
                    continue
                try:
                    _checked(hydrate({**row, "item_id": f"{conv.conversation}/q{row['qa_index']}"},
                                     {(conv.corpus, conv.conversation): conv}))
                except MatbenchError as exc:
                    reason = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "…", str(exc).split(": ", 1)[-1].split(" (")[0])
                    refusals[f"{row['kind']}: {reason}"] += 1
                    continue
                rows.append(row)
            random.Random(f"{self.name}/{self.version}/{seed}/{conv.corpus}/{conv.conversation}").shuffle(rows)
            queues.append(rows)
        ordered = [q[k] for k in range(max(map(len, queues), default=0)) for q in queues if k < len(q)]
        ordered = ordered if n is None else ordered[:n]
        out = []
        for index, row in enumerate(ordered):
            row = {"item_id": f"{self.name}-v{self.version}-s{seed}-{index:05d}", "suite": self.name,
                   "version": self.version, "seed": seed, "index": index, **row}
            out.append({**row, "content_hash": row_hash({**row, "content_hash": ""})})
        return out, refusals

    def dataset_rows(self, seed: int, n: int | None, sources: DialogSources | None = None) -> list[dict[str, Any]]:
        return self.build(seed, n, sources)[0]

    def features(self):
        from datasets import Features, Sequence, Value

        kinds = {"int": Value("int64"), "str": Value("string"), "bool": Value("bool"), "list": Sequence(Value("string"))}
        types = dict.fromkeys(HARVEST_FIELDS, "str")
        types.update(seed="int", index="int", qa_index="int", category="int", negative_qa_index="int",
                     strong="bool", evidence="list", carriers="list")
        return Features({k: kinds[types[k]] for k in HARVEST_FIELDS})

    def field_docs(self) -> dict[str, str]:
        return HARVEST_DOCS

    def pairs_from_rows(self, rows: list[dict[str, Any]], sources: DialogSources | None = None) -> list[DonorPair]:
        for row in rows:
            missing = [k for k in HARVEST_FIELDS if k not in row]
            if missing:
                raise MatbenchError(f"malformed harvest row {row.get('item_id', '?')}: missing field {missing[0]!r}")
            if row["content_hash"] != row_hash(row):
                raise MatbenchError(f"malformed harvest row {row['item_id']}: content_hash does not match its fields")
        sources = sources or DialogSources()
        corpora = {row["corpus"] for row in rows}
        conversations = {(c.corpus, c.conversation): c for c in load_sources(
            sources.locomo if "locomo" in corpora else None, sources.realtalk if "realtalk" in corpora else None)}
        return [_checked(hydrate(row, conversations)) for row in rows]

    def generate(self, seed: int = 0, n: int | None = None, sources: DialogSources | None = None) -> list[DonorPair]:
        return self.pairs_from_rows(self.dataset_rows(seed, n, sources), sources)


def _checked(pair: DonorPair) -> DonorPair:
    from matbench.data_gen.checks import check_pair

    pair.validate()
    check_pair(pair)
    return pair


SUITE = SUITES.register("harvest")(HarvestSuite())
