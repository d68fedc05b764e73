"""`Paper`: one paper of a corpus, as every stage after reading it passes it on.

A fixed contract: the UI, the evaluation harness and outside scripts read it, so fields are only ever added.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


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

    @property
    def title_and_abstract(self) -> str:
        """Where a name a question uses would be mentioned: the title, then the abstract."""
        return f"{self.title or ''} {self.abstract}"

    def with_match(self, snippet: str, score: float) -> Paper:
        """A copy carrying the passage that matched a question and its score."""
        return replace(self, snippet=snippet, score=score)

    def to_dict(self) -> dict[str, Any]:
        """Every field, as JSON takes it."""
        return asdict(self)
