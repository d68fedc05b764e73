"""The public data shapes: `Paper` and `Answer`.

These are fixed contracts: the UI, the evaluation harness and outside scripts
read them, so fields are only ever added, never renamed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from assistant.details import listed


@dataclass(frozen=True)
class Paper:
    """One paper of the corpus; `snippet` and `score` are set when it was retrieved."""

    paper_id: str
    label: str
    abstract: str
    snippet: str = ""
    score: float = 0.0
    title: str | None = None
    authors: list[str] | None = None
    url: str | None = None
    year: int | None = None
    status: str | None = None
    links: dict[str, str] | None = None
    truncated: bool = False
    source: str = ""

    def with_match(self, snippet: str, score: float) -> Paper:
        """A copy carrying the passage that matched a question and its score."""
        return replace(self, snippet=snippet, score=score)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Evidence:
    """What the abstracts say, quoted with [n], shown while a chat model is still reading: `stream()` yields it first.

    The model's answer that follows uses the same numbers, so [2] names one paper in both.
    """

    text: str
    citations: list[Paper] = field(default_factory=list)
    sources: list[Paper] = field(default_factory=list)
    passages: list[list[str]] = field(default_factory=list)
    ahead: int = 0  # answers the model must finish before it starts this one (the embedded model writes one at a time)


@dataclass
class Answer:
    """What `ask()` returns: the text, the papers it cites and everything retrieved."""

    text: str
    citations: list[Paper] = field(default_factory=list)
    sources: list[Paper] = field(default_factory=list)
    abstained: bool = False
    model: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    question: str = ""
    notice: str | None = None
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    ungrounded: bool = False
    invalid_citations: list[int] = field(default_factory=list)
    relevance: dict[str, float] = field(default_factory=dict)
    query: str = ""  # what was retrieved with: the question, or a follow-up made standalone
    ranking: list[str] = field(default_factory=list)  # paper ids as retrieval ranked them, deeper than `sources`
    confidence: str = ""  # high, medium or low: how sure retrieval is that the sources answer the question
    partial: bool = False  # the cited paper is about the question, but its abstract does not state what is asked
    missing: list[str] = field(default_factory=list)  # what the question asks that the cited abstract does not state
    passages: list[list[str]] = field(default_factory=list)  # per citation: its abstract's sentences backing the answer, verbatim
    evidence: str = ""  # with a chat model: the quotes shown before its answer, numbered as the answer is

    @property
    def confidence_label(self) -> str:
        """The confidence as the UI and CLI show it: partial, high, medium or low (n/a when none was judged)."""
        return "partial" if self.partial else self.confidence or "n/a"

    @property
    def caveat(self) -> str:
        """One line on how far the answer answers the question: partial, a likely but unsure match, or "" when sure."""
        if self.partial:
            return f"Partial answer: the cited abstract does not state {listed(self.missing) if self.missing else 'part of what was asked'}."
        if self.confidence == "medium" and not self.abstained:
            return "Closest matches: likely, but not certain, to answer the question."
        return ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        """The `Answer` that `to_dict` gave (the UI keeps its turns as dicts)."""
        fields = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        papers = {key: [Paper(**p) for p in fields.get(key, [])] for key in ("citations", "sources")}
        return cls(**{**fields, **papers})

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "text": self.text,
            "citations": [p.to_dict() for p in self.citations],
            "sources": [p.to_dict() for p in self.sources],
            "abstained": self.abstained,
            "model": self.model,
            "timings": dict(self.timings),
            "notice": self.notice,
            "unsupported": list(self.unsupported),
            "ungrounded": self.ungrounded,
            "invalid_citations": list(self.invalid_citations),
            "relevance": dict(self.relevance),
            "query": self.query,
            "ranking": list(self.ranking),
            "confidence": self.confidence,
            "partial": self.partial,
            "missing": list(self.missing),
            "passages": [list(p) for p in self.passages],
            "evidence": self.evidence,
        }
