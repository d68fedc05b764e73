"""HTML and Markdown for the chat UI, built from `Answer`s; every corpus or model string is escaped here.

Kept apart from the Gradio wiring so it can be unit-tested, and so the one
place that turns untrusted text into markup is easy to audit.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone
from pathlib import Path

from assistant.answer.result import MARKER, Answer, marker_numbers, reference
from assistant.answer.table import HEADINGS, NOT_STATED, Table, csv_text
from assistant.engine import Manifest
from assistant.ingest.papers import Paper
from assistant.settings import SAMPLE_CORPUS, SAMPLE_OF

_IMAGE = re.compile(r"!\[")
_LINK = re.compile(r"\]\(")
_URL = re.compile(r"(?i)\b(https?|ftp):|\bwww\.")
_CHIP = re.compile(r'<a class="cite" href="#card-\d+-(\d+)"[^>]*>\[\d+\]</a>')
_CHIPS = re.compile(f"(?:{_CHIP.pattern})+")


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
    shown = _CHIPS.sub(lambda m: "[" + ", ".join(_CHIP.findall(m.group())) + "]", shown)
    text = shown.replace("!\\[", "![").replace("\\](", "](").replace("\\:", ":").replace("www\\.", "www.")
    return html.unescape(text)


def link_citations(shown: str, turn: int) -> str:
    """Escaped answer text whose [n] markers are chips that open card n of this turn (`[1, 3]` gives two chips)."""

    def chips(match: re.Match[str]) -> str:
        return "".join(f'<a class="cite" href="#card-{turn}-{n}">[{n}]</a>' for n in marker_numbers(match))

    return MARKER.sub(chips, shown)


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


def _card(paper: Paper, number: int | None, sentences: list[str], unsupported: list[str] | None = None, turn: int = 0) -> str:
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
    anchor = f' id="card-{turn}-{number}"' if number is not None else ""
    pick = f'<label class="pick">compare <input type="checkbox" class="pick" value="{html.escape(paper.paper_id)}"></label>'
    return (
        f'<div class="paper-card{" unsupported" if unsupported else ""}"{anchor} data-paper-id="{html.escape(paper.paper_id)}">'
        f'{pick}<div class="paper-title">{badge}{title}</div>{authors}{links_line}{warning}'
        f'<div class="score">relevance {paper.score:.2f}{truncated}</div>'
        f'<div class="snippet">{_highlight(paper.snippet or paper.abstract, sentences)}</div>'
        f"<details><summary>Full abstract</summary><p>{html.escape(paper.abstract)}</p></details>"
        "</div>"
    )


_TABLE = re.compile(r'\s*<div class="answer-table">.*?</div>', re.S)


def table_html(table: Table | None, turn: int) -> str:
    """The answer's comparison table under it in the chat: a row per paper, each cell its abstract's sentence with a
    chip to the paper's card; one line, so the chat's Markdown leaves it whole. "" without a table."""
    if table is None:
        return ""
    def chip(number: int) -> str:
        return f'<a class="cite" href="#card-{turn}-{number}">[{number}]</a>'

    head = "".join(f"<th>{html.escape(label)}</th>" for label in ["Paper", *table.labels])
    rows = []
    for row in table.rows:
        cells = [f'<td class="paper">{chip(row.number)} {html.escape(row.title)}</td>']
        for text in row.cells:
            stated = text != NOT_STATED
            cells.append(f"<td>{html.escape(text)} {chip(row.number)}</td>" if stated else '<td class="not-stated">not stated</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f'\n\n<div class="answer-table"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def without_table(shown: str) -> str:
    """A chat bubble's text without the table `table_html` put under it (earlier turns go back to the engine as text)."""
    return _TABLE.sub("", shown)


def papers_html(answer: Answer | None, turn: int = 0) -> str:
    """The cards of one answer: cited papers in citation order (card ids `card-<turn>-<n>`), or closest matches."""
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
    cards = "".join(_card(p, n, backing[n - 1], unsupported.get(n), turn) for n, p in enumerate(answer.citations, start=1))
    notes = [answer.caveat] + (["⚠ The answer makes claims without citing any paper."] if answer.ungrounded else [])
    note = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes if n)
    return f"<h3>Cited papers</h3>{note}{cards}{retrieved_html(answer)}"


def panel_html(turns: list[dict]) -> str:
    """The side panel: every turn's cards, the newest first, each under its question, so earlier citations stay followable."""
    if not turns:
        return papers_html(None)
    sections = []
    for turn in range(len(turns) - 1, -1, -1):
        answer = Answer.from_dict(turns[turn])
        heading = f'<div class="turn-question">Q{turn + 1}: {html.escape(answer.question)}</div>'
        sections.append(f'<section class="turn" id="turn-{turn}">{heading}{papers_html(answer, turn)}</section>')
    return "".join(sections)


def retrieved_html(answer: Answer) -> str:
    """Every retrieved paper with its score, cited or not: what the answer was chosen from."""
    cited = {p.paper_id for p in answer.citations}
    rows = "".join(
        f'<li class="{"cited" if p.paper_id in cited else "not-cited"}">{html.escape(p.title or p.label)} '
        f'<span class="score">{p.score:.2f}{" · cited" if p.paper_id in cited else ""}</span></li>'
        for p in answer.sources
    )
    return f'<details class="retrieved"><summary>All {len(answer.sources)} retrieved</summary><ol>{rows}</ol></details>' if rows else ""



def scope_line(name: str, manifest: Manifest | None) -> str:
    """What the chosen index holds, in words, so a declined question is read against the right collection."""
    if manifest is None:
        return f"Answering from **{html.escape(name)}** (not built yet)."
    source = Path(manifest.corpus_path)
    drawn = f"a sample of {SAMPLE_OF}" if source.resolve() == SAMPLE_CORPUS.resolve() else f"from {source.name}"
    return f"Answering from **{html.escape(name)}**: {manifest.papers:,} papers, {html.escape(drawn)}. Click [n] to open its card."


def index_choices(manifests: dict[str, Manifest]) -> list[tuple[str, str]]:
    """The index selector's entries: "name · N papers" → name."""
    return [(f"{name} · {manifest.papers:,} papers", name) for name, manifest in sorted(manifests.items())]


def chip_label(kind: str, value: str | list[str]) -> str:
    """An active filter as a removable chip: "status: Oral, Spotlight ✕"."""
    shown = ", ".join(value) if isinstance(value, list) else value.strip()
    return f"{kind}: {shown} ✕"


def status_text(answer: Answer) -> str:
    """One line: which answerer ran, how long retrieval and the whole answer took, and the relevance it answered on."""
    t = answer.timings
    parts = [f"mode: {answer.model}", f"confidence: {answer.confidence_label}", f"retrieval {t.get('retrieval', 0) * 1000:.0f} ms"]
    if "first_token" in t:
        parts.append(f"first text {t['first_token'] * 1000:.0f} ms")
    parts.append(f"total {t.get('total', 0) * 1000:.0f} ms")
    if "lexical" in answer.relevance:
        parts.append(f"relevance {answer.relevance['lexical']:.2f}")
    if "reader" in answer.relevance:
        parts.append(f"reader {answer.relevance['reader']:.3f}")
    if "semantic" in answer.relevance:
        parts.append(f"E5 {answer.relevance['semantic']:.3f}")
    line = " · ".join(parts)
    return f"{line}\n\n⚠ {answer.notice}" if answer.notice else line


def references(turn: dict) -> list[str]:
    """One answer's numbered references, as the API lists them too."""
    return [reference(number, Paper(**paper)) for number, paper in enumerate(turn.get("citations", []), start=1)]


def answer_with_references(turn: dict) -> str:
    """One answer as text to paste elsewhere: the answer, then its references."""
    refs = references(turn)
    return turn["text"] + ("\n\nReferences\n" + "\n".join(refs) if refs else "")


def export_markdown(turns: list[dict]) -> str:
    """The conversation as Markdown, each answer followed by its numbered references."""
    lines = [f"# Conversation exported {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}", ""]
    for turn in turns:
        lines += [f"## Q: {turn['question']}", "", turn["text"], ""]
        if turn.get("table"):
            lines += [Table.from_dict(turn["table"]).markdown(), ""]
        if turn.get("abstained"):
            lines += ["Closest matches:", ""] + [f"- {p.get('title') or p['label']}" for p in turn["sources"][:3]] + [""]
        lines += references(turn) + [""]
    return "\n".join(lines)


def export_csv(turns: list[dict]) -> str:
    """Every comparison table of the conversation as one CSV, each row led by the question it answered ("" if none)."""
    header = ["question", "number", "paper_id", "title", *HEADINGS]  # one column order for every table
    rows: list[list[str]] = []
    for turn in turns:
        if turn.get("table"):
            names, *body = Table.from_dict(turn["table"]).csv_rows()
            rows += [[turn["question"], *(dict(zip(names, row)).get(name, "") for name in header[1:])] for row in body]
    return csv_text([header, *rows]) if rows else ""


_BIB_SPECIAL = re.compile(r"([&%#_$])")
_ICML_2024 = ("icml.cc/virtual/2024", "proceedings.mlr.press/v235", "openreview.net")


def _bib(value: str) -> str:
    """A field value safe inside BibTeX braces: specials escaped, braces dropped (they could unbalance the entry)."""
    return _BIB_SPECIAL.sub(r"\\\1", value.replace("{", "").replace("}", "").replace("\\", ""))


def bibtex(turns: list[dict]) -> str:
    """BibTeX for every paper the conversation cites, once each, from its metadata (title, authors, year, links)."""
    entries, keys, seen = [], set(), set()
    for turn in turns:
        for paper in turn.get("citations", []):
            if paper["paper_id"] in seen:
                continue
            seen.add(paper["paper_id"])
            title = paper.get("title") or paper["label"]
            authors = paper.get("authors") or []
            year = paper.get("year") or (2024 if any(mark in (paper.get("url") or "") for mark in _ICML_2024) else None)
            surname = re.sub(r"[^a-z]", "", (authors[0].split()[-1] if authors else "anon").lower()) or "anon"
            word = next((w for w in re.findall(r"[a-z]+", title.lower()) if len(w) > 3), "paper")
            key, suffix = f"{surname}{year or ''}{word}", 1
            while key in keys:
                suffix += 1
                key = f"{surname}{year or ''}{word}{suffix}"
            keys.add(key)
            links = paper.get("links") or {}
            venue = any(mark in " ".join([paper.get("url") or "", *links.values()]) for mark in _ICML_2024)
            fields = [("title", f"{{{_bib(title)}}}")]
            if authors:
                fields.append(("author", " and ".join(_bib(a) for a in authors)))
            if venue:
                fields.append(("booktitle", "Proceedings of the 41st International Conference on Machine Learning (ICML 2024)"))
            if year:
                fields.append(("year", str(year)))
            if paper.get("url"):
                fields.append(("url", paper["url"].replace("{", "").replace("}", "")))
            body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
            entries.append(f"@{'inproceedings' if venue else 'misc'}{{{key},\n{body}\n}}")
    return "\n\n".join(entries) + ("\n" if entries else "")
