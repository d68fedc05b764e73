"""What an answer says of a paper's record when a question asks for it: who wrote it, how it was presented, where to
read it. These come from the index's metadata, not the abstract, and cite the paper like a quote does."""

from __future__ import annotations

from pathlib import Path

from assistant.answer.prompts import render
from assistant.ingest.papers import Paper
from assistant.text.details import listed

_MAX_AUTHORS = 10  # names written out; a longer list ends "et al."
_FIELD_NAMES = {"authors": "authors", "status": "presentation format", "link": "link"}


def record_line(paper: Paper, asked: list[str], number: int, prompts_dir: Path | None = None) -> tuple[str, list[str]]:
    """The line stating what `asked` ("authors", "status", "link") wants of `paper`'s record, citing it as [number],
    and the fields its record does not hold (the answer is then partial)."""
    facts, unlisted = [], []
    for field in asked:
        fact = _fact(paper, field, prompts_dir)
        if fact is None:
            unlisted.append(field)
            fact = render("record_unlisted", prompts_dir, field=_FIELD_NAMES[field])
        facts.append(fact)
    line = render("paper_record", prompts_dir, title=paper.title or paper.label, number=number, facts="; ".join(facts))
    return line, unlisted


def _fact(paper: Paper, field: str, prompts_dir: Path | None) -> str | None:
    if field == "authors" and paper.authors:
        if len(paper.authors) > _MAX_AUTHORS:
            return render("record_more_authors", prompts_dir, authors=", ".join(paper.authors[:_MAX_AUTHORS]))
        return render("record_authors", prompts_dir, authors=listed(paper.authors, "and"))
    if field == "status" and paper.status:
        article = "an" if paper.status[:1].lower() in "aeiou" else "a"
        return render("record_status", prompts_dir, status=f"{article} {paper.status.lower()}")
    if field == "link":
        links = paper.links or {}
        return links.get("openreview") or links.get("pmlr") or paper.url or next(iter(links.values()), None)
    return None
