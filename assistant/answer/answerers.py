"""Answerers: what turns a question's retrieved papers into cited text, behind one small protocol.

`answer(record)` yields text pieces as they are produced, then one `Draft`.
`ExtractiveAnswerer` quotes abstracts; `ChatAnswerer` has a chat model write
from numbered sources and checks what it wrote; `WithFallback` runs one and,
when it raises `ModelError`, says why and runs the other. Chat models are
anything with the `Chat` shape (`chat.client.ChatModel`, or a fake in tests).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from assistant.answer import extractive
from assistant.answer.citations import SAYS_UNSTATED, CitationTracker, check_support, claims, continue_numbering
from assistant.answer.context import build_prompt
from assistant.answer.fact_gate import Dropped, FactGate
from assistant.answer.paper_record import record_line
from assistant.answer.prompts import render
from assistant.answer.record import Draft, QuestionRecord
from assistant.errors import ModelError
from assistant.infra.deadline import Deadline
from assistant.ingest.papers import Paper
from assistant.models.sentence_vectors import SentenceVectors
from assistant.text.details import listed
from assistant.text.questions import Message, asks_for_several

log = logging.getLogger(__name__)

NO_ANSWER = "NO_ANSWER"  # what prompts/system.md tells the model to reply when the sources don't answer


class Chat(Protocol):
    """A chat model as the answerers use it."""

    @property
    def name(self) -> str: ...

    @property
    def context_tokens(self) -> int: ...

    def stream(self, messages: list[Message], deadline: Deadline | None = None, schema: dict | None = None) -> Iterator[str]: ...

    def alive(self) -> bool: ...

    def ahead(self) -> int: ...

    @property
    def refusals_final(self) -> bool: ...


class Answerer(Protocol):
    def answer(self, record: QuestionRecord) -> Iterator[str | Draft]: ...


def no_answer_text(papers: list[Paper], prompts_dir: Path | None, unmentioned: str = "", lacking: str = "") -> str:
    """The abstention message: why, when a named topic is missing (from every retrieved abstract, or from the closest
    paper, titled `lacking`), and the closest matches."""
    closest = "\n".join(render("closest_match", prompts_dir, label=p.title or p.label, score=p.score) for p in papers[:3])
    why = ""
    if unmentioned:
        why = " " + (render("unapplied_topic", prompts_dir, topic=unmentioned, title=lacking) if lacking else render("unmentioned_topic", prompts_dir, topic=unmentioned))
    return render("no_answer", prompts_dir, closest=closest or "(none)", why=why)


class ExtractiveAnswerer:
    """Quotes the abstracts' best sentences; needs no model and cannot fail."""

    def __init__(self, sentences: SentenceVectors, max_sentences: int, prompts_dir: Path | None = None) -> None:
        self.sentences = sentences
        self.max_sentences = max_sentences
        self.prompts_dir = prompts_dir

    def answer(self, record: QuestionRecord) -> Iterator[str | Draft]:
        if record.verdict is not None and not record.verdict.answerable:  # a fallback for a question the gate let through to the model
            body = no_answer_text(record.papers, self.prompts_dir, record.verdict.unmentioned, record.verdict.lacking)
            yield body
            yield Draft(text=body, model="extractive", abstained=True)
            return
        draft = replace(record.evidence) if record.evidence else self.quotes(record)  # the evidence already shown is the answer
        record.mark("first_token")
        yield draft.text + "\n\n"
        yield draft

    def quotes(self, record: QuestionRecord) -> Draft:
        """The quoted sentences with [n], and whom they cite: the answer without a model, the evidence before one."""
        started = time.perf_counter()
        record.mark("first_text")
        if record.compared:  # a comparison quotes every side
            papers, subject = [record.papers[i] for i in record.compared], 0
        elif record.missing or record.asks_of_record or record.asked != record.query:
            # about one paper: what it lacks, who wrote it (or how it was presented), the conversation's, one it names by authors
            papers, subject = [record.papers[record.subject]], 0
        elif record.named and (len(record.named) > 1 or not asks_for_several(record.query)):
            # a question naming papers is answered from them ("DRCT and WAVES: how do their approaches differ?")
            papers, subject = [record.papers[i] for i in record.named], record.named.index(record.subject) if record.subject in record.named else 0
        else:
            papers, subject = record.papers, record.subject
        topic = record.read_alone and extractive.ranked_first_leads(record.query, bool(record.named), bool(record.asks))
        unsure = record.verdict is not None and record.verdict.confidence == "medium" and not record.missing
        if record.listing:  # every paper naming what is asked, each with its sentence naming it
            quotes = [extractive.Quote(i, position, papers[i].snippet, 0.0) for i, position in record.naming.items()]
        else:
            quotes = extractive.select(record.asked, papers, self.sentences, self.max_sentences, spread=unsure,
                                       each=len(papers) < len(record.papers), include=record.qualified if papers is record.papers else set(),
                                       ranked_first=topic and papers is record.papers or bool(record.compared and record.thread))
        if not record.listing and not asks_for_several(record.query):  # "two major challenges" keeps its "Firstly, …", "Secondly, …"
            quotes = extractive.whole_lists(quotes, lambda i: self.sentences.get(papers[i].abstract)[0])
        if record.detail_sentences:  # the sentences stating the asked numbers or names are always quoted
            quotes = extractive.with_sentences(quotes, subject, record.detail_sentences, self.sentences.get(papers[subject].abstract)[0])
        if len(extractive.cited_order(quotes)) == 1 and not record.listing:  # about one paper: say what its method is called
            sentences = self.sentences.get(papers[quotes[0].paper].abstract)[0]
            naming = extractive.naming_sentence(sentences)
            if naming is not None:
                quotes = extractive.with_sentences(quotes, quotes[0].paper, [naming], sentences)
        lead = self._lead(record)  # a partial answer's lead names its paper: its quotes need no title
        facts, unlisted = record_line(papers[subject], record.asks_of_record, 1, self.prompts_dir) if record.asks_of_record else ("", [])
        text = "".join([facts + "\n\n" if facts else "", lead + "\n\n" if lead else "",
                        *extractive.render(quotes, () if record.missing else [p.title for p in papers])]).strip()
        record.timings["answer"] = time.perf_counter() - started
        order = extractive.cited_order(quotes)
        return Draft(text=text, model="extractive", citations=[papers[i] for i in order], partial=bool(record.missing or unlisted),
                     passages=[[q.text for q in quotes if q.paper == i] for i in order])

    def _lead(self, record: QuestionRecord) -> str:
        """What comes before the quotes: that they are the papers the reader chose, how many papers a listing found,
        what the best paper's abstract lacks, or that the match is uncertain."""
        if record.chosen:
            return render("chosen", self.prompts_dir, count=len(record.compared))
        if record.listing:
            shown = "" if record.listed == len(record.papers) else " " + render("listing_shown", self.prompts_dir, shown=len(record.papers))
            return render("listing", self.prompts_dir, count=record.listed, names=listed(record.listing, "and"), shown=shown)
        if record.missing:
            paper = record.papers[record.subject]
            return render("partial", self.prompts_dir, paper=paper.title or paper.label, missing=missing_text(record))
        if record.verdict is not None and record.verdict.confidence == "medium":
            return render("medium_confidence", self.prompts_dir)
        return ""


def missing_text(record: QuestionRecord) -> str:
    """The unstated asks as one phrase: "which network architecture or how many GPU-hours"."""
    return listed([ask.phrase for ask in record.missing])


class ChatAnswerer:
    """A chat model writes from numbered sources; citations are renumbered as they stream, then checked.

    Raises `ModelError` (so a fallback can answer) when the answer is
    unusable: no text, no citation of a source it was given, citations none of
    which the cited abstracts support, or a refusal although retrieval is confident.
    """

    def __init__(self, chat: Chat, sentences: SentenceVectors, prompts_dir: Path | None, confident_relevance: float, source_sentences: int = 0) -> None:
        self.chat = chat
        self.sentences = sentences
        self.prompts_dir = prompts_dir
        self.confident_relevance = confident_relevance
        self.source_sentences = source_sentences

    def _excerpts(self, record: QuestionRecord) -> dict[str, str] | None:
        """Each source's best sentences for the question (and the subject's sentences stating what is asked)."""
        if not self.source_sentences:
            return None
        excerpts = {}
        for index, paper in enumerate(record.papers):
            quotes = extractive.select(record.asked, [paper], self.sentences, self.source_sentences, lead=self.source_sentences)
            if index == record.subject and record.detail_sentences:
                quotes = extractive.with_sentences(quotes, 0, record.detail_sentences, self.sentences.get(paper.abstract)[0])
            excerpts[paper.paper_id] = " … ".join(q.text for q in quotes) if quotes else paper.abstract
        return excerpts

    def answer(self, record: QuestionRecord) -> Iterator[str | Draft]:
        shown = Draft(text="", model=self.chat.name)
        try:
            yield from self._write(record, shown)
        except ModelError as exc:
            if shown.text.strip():
                raise CutShort(exc.reason, shown) from exc
            raise

    def _write(self, record: QuestionRecord, shown: Draft) -> Iterator[str | Draft]:
        """The answer as the model writes it; `shown` keeps what was yielded and whom it cites, should it fail."""
        notes = [render("missing_detail", self.prompts_dir, number=record.subject + 1, missing=missing_text(record))] if record.missing else []
        facts, unlisted = ("", [])
        if record.asks_of_record and record.evidence is None:  # who wrote it, how it was presented, where to read it
            facts, unlisted = record_line(record.papers[record.subject], record.asks_of_record, record.subject + 1, self.prompts_dir)
            notes.append(render("record_shown", self.prompts_dir, number=record.subject + 1))
        prompt = build_prompt(record.question, record.turns, record.papers, self.chat.context_tokens, self.prompts_dir,
                              "\n".join(notes), self._excerpts(record))
        tracker = CitationTracker(len(prompt.papers))
        gate = FactGate(prompt.papers)  # sentences whose numbers or names their cited abstracts lack are never shown
        tracker.order = evidence_order(record, prompt.papers)  # the quotes already shown fixed some numbers: the answer keeps them
        started = time.perf_counter()
        held: str | None = ""  # the first characters wait until we know the model is not saying NO_ANSWER
        pieces: list[str] = []
        opening = tracker.feed(facts) + tracker.flush() + "\n\n" if facts else ""  # the record's line, numbered as the model's
        if opening:
            shown.text, shown.citations = opening, [prompt.papers[i] for i in tracker.order]
            yield opening
        for token in self.chat.stream(prompt.messages, record.deadline):
            record.mark("first_token")
            if held is not None:
                held += token
                if NO_ANSWER.startswith(held.lstrip()) or held.lstrip().startswith(NO_ANSWER):
                    continue
                token, held = held, None
            out = tracker.feed(gate.feed(token))
            if out:
                pieces.append(out)
                shown.text, shown.citations = shown.text + out, [prompt.papers[i] for i in tracker.order]
                yield out
        if held is not None and held.strip().startswith(NO_ANSWER) and opening:  # the record's line answered it
            yield Draft(text=opening.strip(), model=self.chat.name, citations=[prompt.papers[i] for i in tracker.order], partial=bool(unlisted))
            return
        if held is not None and held.strip().startswith(NO_ANSWER):
            verdict = record.verdict
            if verdict is not None and verdict.confident(self.confident_relevance, checked=not self.chat.refusals_final):
                raise ModelError(f"the model declined, but the best abstracts match the question ({verdict.describe()})")
            body = no_answer_text(record.papers, self.prompts_dir)
            yield body
            yield Draft(text=body, model=self.chat.name, abstained=True)
            return
        rest = tracker.feed(gate.feed(held) if held else "") + tracker.feed(gate.flush()) + tracker.flush()
        if rest:
            pieces.append(rest)
            shown.text, shown.citations = shown.text + rest, [prompt.papers[i] for i in tracker.order]
            yield rest
        record.timings["answer"] = time.perf_counter() - started
        body = "".join(pieces).strip()  # the model's, checked below; the record's line needs no abstract behind it
        sentences = claims(body)
        invented = [d.as_unsupported() for d in gate.dropped]
        if not sentences:
            if gate.dropped:
                raise ModelError(f"the model's answer stated {_facts(gate.dropped)}, which its cited abstracts do not contain")
            raise ModelError(f"the model '{self.chat.name}' returned no usable answer text")
        citations = [prompt.papers[i] for i in tracker.order]
        if not citations:  # every claim without a source it was given: a claim the user could not check
            raise ModelError(f"the model's answer cites none of the abstracts it was given{' (it cited ' + ', '.join(f'[{n}]' for n in tracker.invalid) + ')' if tracker.invalid else ''}")
        unsupported, ungrounded = check_support(sentences, citations, self.sentences)
        # a claim whose only citation named no source is a claim without a source
        ungrounded = ungrounded or (bool(tracker.invalid) and any(not numbers for _, numbers in sentences))
        cited_claims = sum(len(set(numbers)) for _, numbers in sentences)
        shown.unsupported = [u.__dict__ for u in unsupported] + invented
        if unsupported and len(unsupported) >= cited_claims:
            raise ModelError("none of the model's citations is supported by the abstract it cites")
        yield Draft(
            text=opening + body,
            model=self.chat.name,
            citations=citations,
            unsupported=shown.unsupported,
            notice=removed_notice(gate.dropped),
            ungrounded=ungrounded,
            invalid_citations=tracker.invalid,
            partial=bool(record.missing) or bool(unlisted) or bool(SAYS_UNSTATED.search(body)),
        )


def evidence_order(record: QuestionRecord, papers: list[Paper]) -> list[int]:
    """Indices into `papers` in the order the evidence already shown numbered them, so a model's answer keeps those numbers."""
    if record.evidence is None:
        return []
    ids = [p.paper_id for p in papers]
    return [ids.index(p.paper_id) for p in record.evidence.citations if p.paper_id in ids]


def removed_notice(dropped: list[Dropped]) -> str | None:
    """What the fact check took out of a model's answer, in a sentence, or None."""
    if not dropped:
        return None
    count = f"{len(dropped)} sentence{'s' if len(dropped) > 1 else ''}"
    return f"{count} of the model's answer stated {_facts(dropped)}, which the cited abstracts do not contain; removed."


def _facts(dropped: list[Dropped]) -> str:
    """"95.1 and ImageNet-21k": what the dropped sentences stated that their sources lack."""
    return listed(sorted({fact for d in dropped for fact in d.lacking}), "and")


class CutShort(ModelError):
    """The model failed after some of its answer was shown; `shown` is that text and the papers it cites."""

    def __init__(self, reason: str, shown: Draft) -> None:
        super().__init__(reason)
        self.shown = shown


class WithFallback:
    """Runs `primary`; if it is missing (`reason` says why) or raises `ModelError`, a notice and `fallback` follow.

    What the primary already showed stays in the answer, marked unfinished, and the fallback's citations
    continue its numbering: the streamed text is the final text, and each [n] names one paper throughout.
    """

    def __init__(self, primary: Answerer | None, fallback: Answerer, prompts_dir: Path | None, reason: str | None = None) -> None:
        self.primary = primary
        self.fallback = fallback
        self.prompts_dir = prompts_dir
        self.reason = reason

    def answer(self, record: QuestionRecord) -> Iterator[str | Draft]:
        notice = self.reason
        kept: Draft | None = None
        if self.primary is not None:
            try:
                yield from self.primary.answer(record)
                return
            except ModelError as exc:
                notice = exc.reason
                kept = exc.shown if isinstance(exc, CutShort) else None
                log.warning("chat model failed, answering extractively: %s", exc.reason)
            if kept is None:
                record.timings.pop("first_token", None)
        if kept is not None:
            yield from self._after(kept, notice or "", record)
            return
        prefix = render("fallback_notice", self.prompts_dir, reason=notice) + "\n\n" if notice else ""
        if prefix:
            yield prefix
        for piece in self.fallback.answer(record):
            if isinstance(piece, Draft):
                piece.text, piece.notice = prefix + piece.text, notice
            yield piece

    def _after(self, kept: Draft, reason: str, record: QuestionRecord) -> Iterator[str | Draft]:
        """The fallback's answer below the model's unfinished one, numbered on from the papers the model cited."""
        draft = [piece for piece in self.fallback.answer(record) if isinstance(piece, Draft)][-1]
        body, citations = continue_numbering(draft.text, draft.citations, kept.citations)
        said = {paragraph.strip() for paragraph in kept.text.split("\n\n")}
        paragraphs = body.split("\n\n")
        while len(paragraphs) > 1 and paragraphs[0].strip() in said:  # the record's line, shown before the model wrote
            paragraphs.pop(0)
        body = "\n\n".join(paragraphs)
        tail = "\n\n" + render("fallback_after_text", self.prompts_dir, reason=reason) + "\n\n" + body
        yield tail
        draft.text, draft.citations, draft.notice = kept.text.strip() + tail, citations, reason
        draft.unsupported, draft.abstained, draft.passages = kept.unsupported, False, []  # the engine finds them for the whole text
        yield draft
