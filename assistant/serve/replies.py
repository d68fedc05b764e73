"""What travels beside an answer's text to a client: the cited papers with the passages backing them, and how far it answers."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from assistant.answer.result import Answer


def citation_items(answer: Answer) -> list[dict[str, Any]]:
    """The cited papers as the protocol carries them, numbered as in the text, each with the passage backing it."""
    unsupported = {item["number"] for item in answer.unsupported}
    items = []
    for number, paper in enumerate(answer.citations, start=1):
        backing = answer.passages[number - 1] if number <= len(answer.passages) else []
        items.append({
            "number": number, "paper_id": paper.paper_id, "title": paper.title or paper.label, "authors": paper.authors or [],
            "url": paper.url, "links": paper.links or {}, "status": paper.status, "passage": " … ".join(backing),
            "supported": number not in unsupported, "score": round(paper.score, 4),
        })
    return items


def answer_fields(answer: Answer) -> dict[str, Any]:
    """What travels beside the text in both protocols' replies: citations, how far the answer answers, and its table."""
    return {
        "citations": citation_items(answer), "abstained": answer.abstained, "partial": answer.partial, "missing": list(answer.missing),
        "confidence": answer.confidence_label, "notice": answer.notice, "answered_by": answer.model,
        "table": asdict(answer.table) if answer.table else None,
    }
