"""One question's way through the pipeline, recorded stage by stage and turned into an `Answer` in one place.

The engine fills a `QuestionRecord` (the cleaned question, the standalone
query it retrieved with, the `Retrieval`, the relevance `Verdict`, timings);
an answerer returns a `Draft` (text, citations, checks). `to_answer` joins
them, so every field of `Answer` has exactly one source.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from assistant.answer.result import Answer
from assistant.answer.table import Table
from assistant.infra.deadline import Deadline
from assistant.ingest.papers import Paper
from assistant.retrieval.hybrid import Retrieval
from assistant.retrieval.relevance import Verdict
from assistant.text import naming
from assistant.text.details import Ask, compares
from assistant.text.questions import Message
from assistant.text.sentences import content_words

_ASKED_WORDS = 3  # content words a question must keep without its paper's name to ask something of its own


@dataclass
class Draft:
    """What an answerer wrote: the text and its citations, plus the checks made on them."""

    text: str
    model: str
    citations: list[Paper] = field(default_factory=list)
    abstained: bool = False
    partial: bool = False
    notice: str | None = None
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    ungrounded: bool = False
    invalid_citations: list[int] = field(default_factory=list)
    passages: list[list[str]] = field(default_factory=list)  # per citation, the abstract sentences backing the text
    confidence: str | None = None  # set when reading decided it; else the relevance verdict's
    missing: list[str] | None = None  # what a partial answer's abstract lacks, in the reader's words; else the details check's
    table: Table | None = None  # the cited papers side by side, when the engine makes one


@dataclass
class QuestionRecord:
    """Everything known about one question so far; answerers read it, only the engine (and the `listing` and
    `comparing` steps it runs) writes it."""

    question: str
    turns: list[Message]
    query: str = ""
    retrieval: Retrieval | None = None
    verdict: Verdict | None = None
    subject: int = 0  # index in `papers` of the paper the question is about (the best-matching sentence's)
    carried: bool = False  # read with the conversation's earlier turns after nothing answered it alone
    thread: bool = False  # a follow-up whose first paper is the one its conversation's topic turn found
    asks: list[Ask] = field(default_factory=list)  # the specific facts the question asks for (`details.asks`)
    missing: list[Ask] = field(default_factory=list)  # what the question asks that the subject's abstract does not state
    detail_sentences: list[int] = field(default_factory=list)  # positions of the subject's sentences that state what is asked
    asks_of_record: list[str] = field(default_factory=list)  # what it asks of the subject's record: "authors", "status", "link"
    listing: list[str] = field(default_factory=list)  # the names a "which papers use X" question lists every paper of
    listed: int = 0  # how many papers name them (those quoted are the first of them)
    naming: dict[int, int] = field(default_factory=dict)  # for a listing: paper index -> its sentence naming them
    qualified: set[int] = field(default_factory=set)  # for a list question: papers its topic words qualify (`listing.qualify_listed`)
    compared: list[int] = field(default_factory=list)  # for a comparison: the papers it compares, each quoted
    chosen: bool = False  # the compared papers are the ones the reader chose (ticked in the UI)
    sides_found: bool = False  # a comparison each described side of which a different paper's words fit, every word
    evidence: Draft | None = None  # the quotes shown before a chat model's answer
    deadline: Deadline | None = None  # LLM_TIMEOUT_S for all of this question's model calls
    timings: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    @property
    def papers(self) -> list[Paper]:
        """The retrieved papers the answer is written from, best first."""
        return self.retrieval.papers if self.retrieval else []

    @property
    def read_alone(self) -> bool:
        """Whether the question was searched in its own words: asked without a conversation, or one that moved on to a
        topic its words find alone ("What about pairing a small model with a big one?"); it is then answered as if asked
        alone."""
        return not self.turns or (self.query == self.question and not self.carried and not self.thread)

    @property
    def asked(self) -> str:
        """What the answer's sentences must answer: a follow-up's own words (the conversation gave its topic, which
        retrieval used; the last turn says what is asked about it), else the query; less the surnames naming the paper
        ("how do Ahdritz et al. tell …") when it names one and asks something besides."""
        asked = self.question if self.turns and self.query != self.question else self.query
        uncalled = asked if compares(asked) else naming.without_calling(asked)  # a side described in words is asked about too
        bare = naming.without_authors(uncalled, [a for i in self.named for a in self.papers[i].authors or []]) if self.named else uncalled
        return bare if len(content_words(bare)) >= _ASKED_WORDS else asked

    @property
    def named(self) -> list[int]:
        """Indices in `papers` of the papers the question names (by a name only they use, their title or authors)."""
        named = self.retrieval.named if self.retrieval else set()
        return [i for i, paper in enumerate(self.papers) if paper.paper_id in named]

    def add_papers(self, papers: list[Paper]) -> None:
        """Papers found besides retrieval (by the question's words or a name it uses) join those the answer is written
        from, after them, each with its whole abstract as the passage that matched."""
        if papers and self.retrieval is not None:
            self.retrieval = replace(self.retrieval, papers=[*self.papers, *(p.with_match(p.abstract, 0.0) for p in papers)])

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Record how long the block takes as `timings[stage]`, in seconds."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = time.perf_counter() - began

    def mark(self, event: str) -> None:
        """Record the first time `event` happens, in seconds since the question arrived."""
        self.timings.setdefault(event, time.perf_counter() - self.started)

    def sources(self, cited: list[Paper]) -> list[Paper]:
        """The papers shown beside an answer citing `cited`: a list's answer is its papers, so those it lists come first
        (the postings of its words may have found them below retrieval's first ten); otherwise retrieval's order."""
        if not (self.listing or self.qualified):
            return self.papers
        listed = {paper.paper_id for paper in cited}
        return sorted(self.papers, key=lambda paper: paper.paper_id not in listed)  # stable: each part keeps its order

    def to_answer(self, draft: Draft) -> Answer:
        """The public `Answer`: the draft's text and checks, with this record's question, sources and scores."""
        self.timings["total"] = time.perf_counter() - self.started
        return Answer(
            text=draft.text,
            citations=draft.citations,
            sources=self.sources(draft.citations),
            abstained=draft.abstained,
            model=draft.model,
            timings=self.timings,
            question=self.question,
            notice=draft.notice,
            unsupported=draft.unsupported,
            ungrounded=draft.ungrounded,
            invalid_citations=draft.invalid_citations,
            relevance=self.verdict.scores() if self.verdict else {},
            query=self.query,
            ranking=list(self.retrieval.ranking) if self.retrieval else [],
            confidence=draft.confidence or (self.verdict.confidence if self.verdict else ""),
            partial=draft.partial,
            missing=(draft.missing if draft.missing is not None else [ask.phrase for ask in self.missing]) if draft.partial else [],
            passages=draft.passages,
            evidence=self.evidence.text if self.evidence else "",
            table=draft.table,
        )
