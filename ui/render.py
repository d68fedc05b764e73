"""HTML and Markdown for the chat UI, built from `Answer`s; every corpus or model string is escaped here.

Kept apart from the Gradio wiring so it can be unit-tested, and so the one
place that turns untrusted text into markup is easy to audit.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone

from assistant.types import Answer, Paper

_IMAGE = re.compile(r"!\[")
_LINK = re.compile(r"\]\(")
_URL = re.compile(r"(?i)\b(https?|ftp):|\bwww\.")


def escape_answer(text: str) -> str:
    """Answer text for the chat bubble: HTML escaped, and Markdown that would fetch or link anything shown as text.

    A model (or an abstract it quotes) can write `![x](http://host/?q=…)`; rendered, the browser would fetch
    it. Images, inline links and URLs are backslash-escaped, so they display literally; citation numbers
    stay visible as `[n]`.
    """
    escaped = html.escape(text, quote=False)
    escaped = _IMAGE.sub(r"!\\[", escaped)
    escaped = _LINK.sub(r"\\](", escaped)
    return _URL.sub(lambda m: m.group().replace(":", "\\:").replace("www.", "www\\."), escaped)


def unescape_answer(shown: str) -> str:
    """The text `escape_answer` was given, from what the chat shows (earlier turns go back to the engine as typed)."""
    text = shown.replace("!\\[", "![").replace("\\](", "](").replace("\\:", ":").replace("www\\.", "www.")
    return html.unescape(text)


def _highlight(snippet: str, sentences: list[str]) -> str:
    """The escaped snippet with each backing sentence (the abstract's own, `Answer.passages`) wrapped in <mark>.

    When those sentences lie outside the retrieval snippet, they are the passage shown instead.
    """
    if sentences and not any(s in snippet for s in sentences):
        snippet = " … ".join(sentences)
    marked = html.escape(snippet)
    for sentence in sentences:
        escaped = html.escape(sentence)
        if escaped and escaped in marked:
            marked = marked.replace(escaped, f"<mark>{escaped}</mark>", 1)
    return marked


def _card(paper: Paper, number: int | None, sentences: list[str], unsupported: list[str] | None = None) -> str:
    title = html.escape(paper.title or paper.label)
    if paper.url and paper.url.startswith(("https://", "http://")):
        title = f'<a href="{html.escape(paper.url)}" target="_blank" rel="noopener noreferrer">{title}</a>'
    badge = f'<span class="cite-num">[{number}]</span> ' if number is not None else ""
    authors = f'<div class="authors">{html.escape(", ".join(paper.authors))}</div>' if paper.authors else ""
    links = " · ".join(
        f'<a href="{html.escape(url)}" target="_blank" rel="noopener noreferrer">{html.escape(name)}</a>'
        for name, url in (paper.links or {}).items()
        if url.startswith(("https://", "http://"))
    )
    status = f'<span class="status">{html.escape(paper.status)}</span> ' if paper.status else ""
    links_line = f'<div class="links">{status}{links}</div>' if links or status else ""
    truncated = ' <span class="flag">abstract truncated</span>' if paper.truncated else ""
    warning = ""
    if unsupported:
        claims = "; ".join(f"“{html.escape(s)}”" for s in unsupported)
        warning = f'<div class="unsupported-flag">⚠ This abstract may not support: {claims}</div>'
    return (
        f'<div class="paper-card{" unsupported" if unsupported else ""}" data-paper-id="{html.escape(paper.paper_id)}">'
        f'<div class="paper-title">{badge}{title}</div>{authors}{links_line}{warning}'
        f'<div class="score">relevance {paper.score:.2f}{truncated}</div>'
        f'<div class="snippet">{_highlight(paper.snippet or paper.abstract, sentences)}</div>'
        f"<details><summary>Full abstract</summary><p>{html.escape(paper.abstract)}</p></details>"
        "</div>"
    )


def papers_html(answer: Answer | None) -> str:
    """The side panel: cited papers in citation order, or closest matches when the answer abstained."""
    if answer is None:
        return '<div class="papers-empty">Cited papers appear here.</div>'
    if answer.abstained:
        cards = "".join(_card(p, None, []) for p in answer.sources[:3])
        return f'<h3>Closest matches</h3><p class="note">Not answers: the indexed abstracts don\'t cover the question.</p>{cards}'
    if not answer.citations:
        return '<div class="papers-empty">⚠ The answer cites no paper, so nothing in it is grounded in the abstracts.</div>'
    unsupported: dict[int, list[str]] = {}
    for item in answer.unsupported:
        unsupported.setdefault(item["number"], []).append(item["sentence"])
    backing = answer.passages + [[] for _ in range(len(answer.citations) - len(answer.passages))]
    cards = "".join(_card(p, n, backing[n - 1], unsupported.get(n)) for n, p in enumerate(answer.citations, start=1))
    notes = [answer.caveat] + (["⚠ The answer makes claims without citing any paper."] if answer.ungrounded else [])
    note = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes if n)
    return f"<h3>Cited papers</h3>{note}{cards}{retrieved_html(answer)}"


def retrieved_html(answer: Answer) -> str:
    """Every retrieved paper with its score, cited or not: what the answer was chosen from."""
    cited = {p.paper_id for p in answer.citations}
    rows = "".join(
        f'<li class="{"cited" if p.paper_id in cited else "not-cited"}">{html.escape(p.title or p.label)} '
        f'<span class="score">{p.score:.2f}{" · cited" if p.paper_id in cited else ""}</span></li>'
        for p in answer.sources
    )
    return f'<details class="retrieved"><summary>All {len(answer.sources)} retrieved</summary><ol>{rows}</ol></details>' if rows else ""



def status_text(answer: Answer) -> str:
    """One line: which answerer ran, how long retrieval and the whole answer took, and the relevance it answered on."""
    t = answer.timings
    parts = [f"mode: {answer.model}", f"confidence: {answer.confidence_label}", f"retrieval {t.get('retrieval', 0) * 1000:.0f} ms"]
    if "first_token" in t:
        parts.append(f"first text {t['first_token'] * 1000:.0f} ms")
    parts.append(f"total {t.get('total', 0) * 1000:.0f} ms")
    if "lexical" in answer.relevance:
        parts.append(f"relevance {answer.relevance['lexical']:.2f}")
    if "semantic" in answer.relevance:
        parts.append(f"E5 {answer.relevance['semantic']:.3f}")
    line = " · ".join(parts)
    return f"{line}\n\n⚠ {answer.notice}" if answer.notice else line


def export_markdown(turns: list[dict]) -> str:
    """The conversation as Markdown, each answer followed by its numbered references."""
    lines = [f"# Conversation exported {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}", ""]
    for turn in turns:
        lines += [f"## Q: {turn['question']}", "", turn["text"], ""]
        if turn.get("abstained"):
            lines += ["Closest matches:", ""] + [f"- {p.get('title') or p['label']}" for p in turn["sources"][:3]] + [""]
        for number, paper in enumerate(turn.get("citations", []), start=1):
            ref = f"[{number}] {paper.get('title') or paper['label']}"
            if paper.get("authors"):
                ref += f" — {', '.join(paper['authors'])}"
            if paper.get("url"):
                ref += f" <{paper['url']}>"
            lines.append(ref)
        lines.append("")
    return "\n".join(lines)
