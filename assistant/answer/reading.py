"""Reading: a chat model says which sentences of the sources answer the question, or that none does, before anything is shown.

The model sees each source's sentences numbered ("2.3": sentence 3 of source
2) and replies with a short JSON verdict whose shape the server enforces
(`response_format`, which OpenAI, vLLM and llama.cpp honour). Nothing in it is
taken on trust: a sentence it points to must be one it was shown, so every
quote is verbatim; its short answer passes the fact gate (each number and name
in a cited abstract); a verdict that points to no sentence confirms nothing.
The answer, `partial`, `abstained` and the confidence follow from what is left
after those checks. A server that cannot keep to a schema gets the plain
written answer instead (`ChatAnswerer`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assistant.answer import extractive
from assistant.answer.answerers import (
    Chat,
    ChatAnswerer,
    ExtractiveAnswerer,
    evidence_order,
    missing_text,
    no_answer_text,
    removed_notice,
)
from assistant.answer.citations import CitationTracker, continue_numbering
from assistant.answer.context import source_block
from assistant.answer.fact_gate import FactGate
from assistant.answer.prompts import render, template
from assistant.answer.record import Draft, QuestionRecord
from assistant.answer.result import MARKER
from assistant.errors import ModelError
from assistant.ingest.chunking import count_tokens
from assistant.models.sentence_vectors import SentenceVectors
from assistant.text import details
from assistant.text.questions import Message
from assistant.text.sentences import split_sentences

log = logging.getLogger(__name__)

VERDICTS = ("answers", "lacks_detail", "not_covered")
_FIELDS = {
    "sentences": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
    "verdict": {"type": "string", "enum": list(VERDICTS)},
    "missing": {"type": "string"},
    "answer": {"type": "string"},
}


def schema(writes: bool) -> dict:
    """The reply's JSON schema; without `writes`, the model only points to sentences (no "answer")."""
    fields = {name: value for name, value in _FIELDS.items() if writes or name != "answer"}
    return {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False}

_ID = re.compile(r"\[?\s*(\d{1,2})\s*\.\s*(\d{1,3})\s*\]?")
_REJECTED = (400, 422)  # a server that does not take `response_format` says so with one of these
_MAX_MISSING = 120
_END_MARK = re.compile(r"\s*([.!?]?)\s*$")  # where a sentence's marker goes: before its closing full stop
_MARKUP = re.compile(r"[<>\[\]`*_#|]")  # the reader's "missing" is shown as plain words


@dataclass
class Sources:
    """What the model was shown: `papers[n - 1]` is source n (an index into the record's papers), with its sentence positions."""

    papers: list[int] = field(default_factory=list)
    shown: dict[int, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Reading:
    """The model's verdict after the checks: the sentences are (paper index, position) pairs it was shown."""

    verdict: str
    sentences: list[tuple[int, int]]
    missing: str
    answer: str


def reading_prompt(
    record: QuestionRecord, sentences: SentenceVectors, budget: int, prompts_dir: Path | None, per_source: int, writes: bool = True,
) -> tuple[list[Message], Sources]:
    """The system prompt and the numbered sources that fit `budget` tokens, the question's subject first.

    `per_source`: how many of each source's sentences to show (its best for the question, plus the
    subject's sentences stating what is asked), twice as many for the subject; 0 shows every sentence.
    `writes`: the model also writes a short answer (else it only points to sentences).
    """
    answer_field = template("read_answer_field", prompts_dir).rstrip() if writes else ""
    system = render("read_system", prompts_dir, answer=answer_field).strip()
    earlier = [m["content"] for m in record.turns if m["role"] == "user"][-1:]
    conversation = render("read_conversation", prompts_dir, earlier=earlier[0]) if earlier else ""
    fixed = count_tokens(system) + count_tokens(render("read", prompts_dir, sources="", conversation=conversation, question=record.question))
    remaining = budget - fixed
    order = list(dict.fromkeys([record.subject, *range(len(record.papers))])) if record.papers else []
    sources = Sources()
    blocks: list[str] = []
    for index in order:
        paper = record.papers[index]
        texts = sentences.get(paper.abstract)[0]
        positions = _positions(record, index, texts, sentences, per_source)
        number = len(sources.papers) + 1
        while positions:
            block = source_block(number, paper, "\n".join(f"{number}.{p + 1} {texts[p]}" for p in positions), prompts_dir)
            if count_tokens(block) + 2 <= remaining or not sources.papers and len(positions) == 1:
                break
            positions = positions[:-1] if sources.papers else _without_weakest(positions, record, index)
        if not positions:
            break
        blocks.append(block)
        sources.papers.append(index)
        sources.shown[index] = positions
        remaining -= count_tokens(block) + 2
    user = render("read", prompts_dir, sources="\n\n".join(blocks), conversation=conversation, question=record.question)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], sources


def _positions(record: QuestionRecord, index: int, texts: tuple[str, ...] | list[str], sentences: SentenceVectors, per_source: int) -> list[int]:
    """The positions among paper `index`'s sentences `texts` to show, in reading order."""
    if not per_source:
        return list(range(len(texts)))
    wanted = 2 * per_source if index == record.subject else per_source
    best = [q.position for q in extractive.select(record.asked, [record.papers[index]], sentences, wanted, lead=wanted)]
    stated = record.detail_sentences if index == record.subject else []
    return sorted(set(best) | set(stated))


def _without_weakest(positions: list[int], record: QuestionRecord, index: int) -> list[int]:
    """The subject's positions less one, keeping those that state what is asked."""
    keep = set(record.detail_sentences) if index == record.subject else set()
    droppable = [p for p in reversed(positions) if p not in keep] or list(reversed(positions))
    return [p for p in positions if p != droppable[0]]


def parse(reply: str, sources: Sources) -> Reading:
    """The model's reply as a `Reading`, keeping only sentence ids it was shown; `ModelError` when it is not the JSON asked for."""
    try:
        data = json.loads(reply)
    except json.JSONDecodeError as exc:
        raise ReadingUnavailable("the model's reading was not JSON") from exc
    if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
        raise ReadingUnavailable("the model's reading had no verdict")
    found: list[tuple[int, int]] = []
    for item in data.get("sentences") or []:
        match = _ID.fullmatch(str(item).strip())
        if not match:
            continue
        number, position = int(match.group(1)), int(match.group(2)) - 1
        if 1 <= number <= len(sources.papers) and position in sources.shown[sources.papers[number - 1]]:
            found.append((sources.papers[number - 1], position))
    missing = _MARKUP.sub("", str(data.get("missing") or "")).strip().rstrip(".")[:_MAX_MISSING]
    return Reading(data["verdict"], list(dict.fromkeys(found)), missing, str(data.get("answer") or "").strip())


def _attributed(answer: str, source: int) -> str:
    """`answer` with each sentence that cites nothing marked [source]: what it states is checked against that abstract."""
    return " ".join(s if MARKER.search(s) else _END_MARK.sub(f" [{source}]\\1", s, count=1) for s in split_sentences(answer)) if answer else ""


class ReadingUnavailable(ModelError):
    """The model could not give a reading in the schema (its server ignores or refuses `response_format`)."""


class ReadingAnswerer:
    """The model reads first; the answer is its checked verdict: cited sentences, a partial answer, or a decline.

    `writes`: the model adds a short answer of its own to the sentences it points to (a weak model that
    invents is better left pointing). `quoter`: for a weak reader (the embedded 1.5B model points to the
    sentence that holds the asked fact less often than the extractive choice does), its sentences are added to
    the extractive quotes instead of replacing them. `writer` answers instead when the server cannot keep to
    the schema. Raises `ModelError` (so the extractive fallback answers) when the model declines although
    retrieval is sure the sources match, or when its verdict says it answers but points to no sentence and
    states nothing that survives the checks.
    """

    def __init__(
        self, chat: Chat, writer: ChatAnswerer, sentences: SentenceVectors, prompts_dir: Path | None, confident_relevance: float,
        per_source: int = 0, writes: bool = True, quoter: ExtractiveAnswerer | None = None,
    ) -> None:
        self.chat = chat
        self.writer = writer
        self.sentences = sentences
        self.prompts_dir = prompts_dir
        self.confident_relevance = confident_relevance
        self.per_source = per_source
        self.writes = writes
        self.quoter = quoter

    def answer(self, record: QuestionRecord) -> Iterator[str | Draft]:
        messages, sources = reading_prompt(record, self.sentences, self.chat.context_tokens, self.prompts_dir, self.per_source, self.writes)
        started = time.perf_counter()
        try:
            reading = parse("".join(self.chat.stream(messages, record.deadline, schema=schema(self.writes))), sources)
        except ModelError as exc:
            if not isinstance(exc, ReadingUnavailable) and getattr(exc.__cause__, "status_code", None) not in _REJECTED:
                raise
            log.info("no structured reading (%s); the model writes the answer instead", exc.reason)
            yield from self.writer.answer(record)
            return
        record.timings["reading"] = time.perf_counter() - started
        draft = self._draft(record, sources, reading)
        record.mark("first_token")
        yield draft.text + "\n\n"
        yield draft

    def _draft(self, record: QuestionRecord, sources: Sources, reading: Reading) -> Draft:
        """The answer that `reading` supports, after the checks that need no model."""
        verdict = reading.verdict
        if verdict != "answers" and record.detail_sentences and not record.missing:
            verdict = "answers"  # the subject's abstract states what is asked: the sentences saying so answer it
            reading = Reading(verdict, [(record.subject, p) for p in record.detail_sentences], "", "")
        elif verdict == "answers" and record.missing and not self._states_missing(record, reading):
            verdict = "lacks_detail"  # the subject's abstract lacks the asked number or name, and no sentence pointed to states it
            reading = Reading(verdict, [(i, p) for i, p in reading.sentences if i == record.subject], "", "")
        if verdict == "not_covered":
            return self._declined(record)
        if verdict == "lacks_detail":
            return self._partial(record, reading)
        if self.quoter is not None:
            return self._added(record, reading)
        return self._answered(record, sources, reading)

    def _states_missing(self, record: QuestionRecord, reading: Reading) -> bool:
        """Whether a sentence the model points to states something the subject's abstract lacks (`_speaks_for`)."""
        pointed = [self.sentences.get(record.papers[i].abstract)[0][p] for i, p in reading.sentences if _speaks_for(record, i)]
        return bool(pointed) and bool(details.check(record.question, record.missing, pointed).stated)

    def _added(self, record: QuestionRecord, reading: Reading) -> Draft:
        """The extractive quotes, then the sentences the model pointed to that they lack, numbered on from them."""
        assert self.quoter is not None
        base = record.evidence or self.quoter.quotes(record)
        have = {text for passage in base.passages for text in passage}
        extra: dict[int, list[str]] = {}
        for index, position in sorted(reading.sentences):
            text = self.sentences.get(record.papers[index].abstract)[0][position]
            if text not in have and _speaks_for(record, index):
                extra.setdefault(index, []).append(text)
        if not extra and not base.text:
            raise ModelError("the model said the sources answer, but pointed to no sentence of them")
        papers = [record.papers[i] for i in extra]
        cited = {c.paper_id for c in base.citations}  # their titles are already above
        added = "\n\n".join(
            extractive.paragraph(" ".join(f"{t} [{n}]" for t in texts), None if paper.paper_id in cited else paper.title)
            for n, (paper, texts) in enumerate(zip(papers, extra.values()), start=1)
        )
        added, citations = continue_numbering(added, papers, base.citations)
        ids = [c.paper_id for c in citations]
        passages = [list(p) for p in base.passages] + [[] for _ in citations[len(base.citations):]]
        for paper, texts in zip(papers, extra.values()):
            passages[ids.index(paper.paper_id)].extend(texts)
        text = "\n\n".join(part for part in (base.text.strip(), added) if part)
        # a weak reader says "answers" to neighbouring topics too: its pointing adds quotes, not confidence; and quotes
        # that open by saying their paper lacks the asked fact stay a partial answer, whatever it adds after them
        return Draft(text=text, model=self.chat.name, citations=citations, passages=passages, confidence=base.confidence,
                     partial=base.partial, missing=base.missing)

    def _declined(self, record: QuestionRecord) -> Draft:
        checked = not self.chat.refusals_final
        if record.named or (record.verdict is not None and record.verdict.confident(self.confident_relevance, checked=checked)):
            raise ModelError("the model found no answer in the sources, but the question names their paper or uses their words")
        body = no_answer_text(record.papers, self.prompts_dir)
        return Draft(text=body, model=self.chat.name, abstained=True, confidence="low")

    def _partial(self, record: QuestionRecord, reading: Reading) -> Draft:
        """Which paper is about it and what its abstract does not state, with its sentences that come closest."""
        subject = reading.sentences[0][0] if reading.sentences else record.subject
        paper = record.papers[subject]
        missing = reading.missing or missing_text(record) or "what is asked"
        quotes = [p for s, p in reading.sentences if s == subject] or [
            q.position for q in extractive.select(record.asked, [paper], self.sentences, 2)
        ]
        texts = self.sentences.get(paper.abstract)[0]
        lead = render("partial", self.prompts_dir, paper=paper.title or paper.label, missing=missing)
        text = lead + "\n\n" + " ".join(f"{texts[p]} [1]" for p in sorted(quotes))
        return Draft(text=text, model=self.chat.name, citations=[paper], partial=True, confidence="medium", missing=[missing],
                     passages=[[texts[p] for p in sorted(quotes)]])

    def _answered(self, record: QuestionRecord, sources: Sources, reading: Reading) -> Draft:
        """The model's short answer, where its facts are in the abstracts it cites, then the sentences it read them from."""
        papers = [record.papers[i] for i in sources.papers]
        tracker = CitationTracker(len(papers))
        tracker.order = evidence_order(record, papers)  # the quotes already shown numbered some papers: keep their numbers
        gate = FactGate(papers)
        quoted = [(sources.papers.index(i), p) for i, p in reading.sentences]
        claimed = _attributed(reading.answer, quoted[0][0] + 1 if quoted else 1)
        said = tracker.feed(gate.feed(claimed + " ")) + tracker.feed(gate.flush()) if claimed else ""
        if not quoted and not said.strip():
            raise ModelError("the model said the sources answer, but pointed to no sentence of them")
        lines = []
        for number in dict.fromkeys(n for n, _ in quoted):
            texts = self.sentences.get(papers[number].abstract)[0]
            sentences = " ".join(f"{texts[p]} [{number + 1}]" for n, p in sorted(quoted) if n == number)
            lines.append(extractive.paragraph(sentences, papers[number].title))
        quotes = tracker.feed("\n\n".join(lines) + " ") + tracker.flush() if lines else tracker.flush()
        text = "\n\n".join(part.strip() for part in (said, quotes) if part.strip())
        unsupported = [d.as_unsupported() for d in gate.dropped]
        confident = bool(quoted) and not gate.dropped
        return Draft(
            text=text, model=self.chat.name, citations=[papers[i] for i in tracker.order], unsupported=unsupported,
            invalid_citations=tracker.invalid, confidence="high" if confident else "medium",
            notice=removed_notice(gate.dropped),
        )


def _speaks_for(record: QuestionRecord, index: int) -> bool:
    """Whether a sentence of source `index` may answer the question: any source's may, unless the question names its
    paper ("What BLEU score does PinNet reach?", "What do the authors of "No Wrong Turns" find?"), when only the named
    papers' sentences do: a weak reader also points to another paper's finding."""
    named = record.named
    return not named or record.subject not in named or index in named
