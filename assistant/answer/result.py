"""What answering returns: `Answer`, and the `Evidence` shown while a chat model still reads.

Fixed contracts: the UI, the APIs, the evaluation harness and outside scripts read them, so fields are only ever added.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from assistant.answer.table import Table
from assistant.ingest.papers import Paper
from assistant.text.details import listed

MARKER = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\s*\]")  # [1], [2, 3] in an answer's text: group 1 holds the numbers
_SEPARATOR = re.compile(r"\s*[,;]\s*")


def marker_numbers(match: re.Match[str]) -> list[int]:
    """The numbers of one `MARKER` match: "[1, 3]" gives 1, 3, each the position of a paper in `Answer.citations`."""
    return [int(n) for n in _SEPARATOR.split(match.group(1))]


def reference(number: int, paper: Paper) -> str:
    """How a cited paper is listed after an answer, in any client: "[1] Title. First Author et al., 2024. link"."""
    authors = paper.authors or []
    who = f"{authors[0]} et al." if len(authors) > 2 else " and ".join(authors)
    details = ", ".join(part for part in (who, str(paper.year or "")) if part)
    link = paper.url or next(iter((paper.links or {}).values()), "")
    title = (paper.title or paper.label).rstrip(".")
    return f"[{number}] {title}." + (f" {details.rstrip('.')}." if details else "") + (f" {link}" if link else "")


QUOTES_KEPT = "The model read the abstracts and keeps the quotes above as its answer."


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
    table: Table | None = None  # the quoted papers side by side, when the answer will have a table

    def restated_by(self, text: str) -> bool:
        """Whether `text` (a streamed piece, or the answer) is these quotes again: the model's reading kept them all, as
        a weak reader's does for most questions, so a front end says so (`QUOTES_KEPT`) instead of showing them twice."""
        return text.strip() == self.text.strip()


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
    table: Table | None = None  # the cited papers side by side (ANSWER_TABLE): every cell a sentence of its abstract

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
        table = Table.from_dict(fields["table"]) if fields.get("table") else None
        return cls(**{**fields, **papers, "table": table})

    def to_dict(self) -> dict[str, Any]:
        """Every field, papers as dicts: the JSON the APIs send and the UI keeps."""
        return asdict(self)
