"""Which papers a question may be answered from: status, year, an author, words of the title, or a list of ids.

Filters narrow the search itself, not its results: every retriever looks only
at the papers that pass, so "orals about diffusion" still finds ten orals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from assistant.ingest.papers import Paper


class Filters(BaseModel):
    """Conditions a paper must all meet; an unset field lets every paper through."""

    model_config = ConfigDict(extra="forbid")
    status: list[str] = Field(default_factory=list, max_length=20, description="Oral, Spotlight, Poster…; any of them (case ignored).")
    year_min: int | None = Field(None, ge=1900, le=2100)
    year_max: int | None = Field(None, ge=1900, le=2100)
    author: str = Field("", max_length=200, description="Part of an author's name (case ignored).")
    title: str = Field("", max_length=200, description="Words that must all appear in the title (case ignored).")
    paper_ids: list[str] = Field(default_factory=list, max_length=10_000)

    def active(self) -> bool:
        return bool(self.status or self.year_min or self.year_max or self.author.strip() or self.title.strip() or self.paper_ids)

    def describe(self) -> str:
        """The filters in words, for messages: "status Oral; author 'Bengio'"."""
        parts = []
        if self.status:
            parts.append("status " + " or ".join(self.status))
        if self.year_min or self.year_max:
            parts.append(f"year {self.year_min or '…'}–{self.year_max or '…'}")
        if self.author.strip():
            parts.append(f"author '{self.author.strip()}'")
        if self.title.strip():
            parts.append(f"title with '{self.title.strip()}'")
        if self.paper_ids:
            parts.append(f"{len(self.paper_ids)} chosen paper(s)")
        return "; ".join(parts)

    def without_filter_words(self, question: str) -> str:
        """`question` less the words that restate the filters ("Which orals …", "… by Bengio", "… from 2024").

        The filters already choose the papers; left in the question, such words match no abstract, so the search
        and the answer/abstain judge would read "orals on diffusion" as a question about orals and decline it.
        """
        words = [*self.status, *self.author.split()] + [str(y) for y in (self.year_min, self.year_max) if y]
        if not words:
            return question
        pattern = r"\b(?:" + "|".join(re.escape(w) for w in words if w.strip()) + r")(?:s|es)?\b"
        stripped = re.sub(r"\s+", " ", re.sub(pattern, " ", question, flags=re.IGNORECASE)).strip()
        return stripped if len(stripped.split()) >= 2 else question

    def allowed(self, papers: Iterable[Paper]) -> set[str]:
        """The ids of the papers that pass."""
        statuses = {s.lower() for s in self.status}
        ids = set(self.paper_ids)
        author = self.author.strip().lower()
        words = self.title.lower().split()

        def admits(paper: Paper) -> bool:
            if statuses and (paper.status or "").lower() not in statuses:
                return False
            if (self.year_min and (paper.year or 0) < self.year_min) or (self.year_max and (paper.year or 10_000) > self.year_max):
                return False
            if author and not any(author in name.lower() for name in paper.authors or []):
                return False
            title = (paper.title or paper.label).lower()
            return all(word in title for word in words) and (not ids or paper.paper_id in ids)

        return {paper.paper_id for paper in papers if admits(paper)}
