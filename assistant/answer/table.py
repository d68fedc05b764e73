"""A comparison table: one row per cited paper, one column per role, every cell a verbatim sentence of that paper's abstract.

Built without a model from the abstracts' sentences (`text.roles`), so every cell is grounded by construction and
the table is ready as soon as the papers are: the same in every mode, shown before a chat model's answer.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.ingest.papers import Paper
from assistant.text.roles import LABELS, ROLES, asked_roles, finding, role_scores
from assistant.text.words import listed_names, name_pattern

NOT_STATED = "not stated"
MARKDOWN_HEAD = "| Paper | "  # how the Markdown table starts (clients sending an answer back have it cut off there)
HEADINGS = tuple(LABELS[role] for role in ROLES)  # every column's heading, in the default order
_FLOOR = 1.0  # a sentence fills a cell only with at least one cue of its role (or as an abstract's opening problem)
_SHORTLIST = 4  # best sentences per role tried when a row's cells are chosen together


@dataclass
class Row:
    """One paper's cells, in the table's column order; `number` is its [n] in the answer."""

    number: int
    paper_id: str
    title: str
    cells: list[str] = field(default_factory=list)


@dataclass
class Table:
    """Columns (role keys, `LABELS` names them) and one `Row` per paper, in citation order."""

    columns: list[str]
    rows: list[Row]

    @property
    def labels(self) -> list[str]:
        """The column headings as shown."""
        return [LABELS[column] for column in self.columns]

    def cell(self, row: Row, column: int) -> str:
        """A cell as text: the sentence followed by its paper's [n], or "not stated"."""
        text = row.cells[column]
        return text if text == NOT_STATED else f"{text} [{row.number}]"

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table: paper, then one column per role."""
        def clean(text: str) -> str:
            return " ".join(text.split()).replace("|", "\\|")

        lines = [MARKDOWN_HEAD + " | ".join(self.labels) + " |", "|" + " --- |" * (len(self.columns) + 1)]
        for row in self.rows:
            cells = [f"[{row.number}] {clean(row.title)}"] + [clean(self.cell(row, i)) for i in range(len(self.columns))]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def csv_rows(self) -> list[list[str]]:
        """Header and rows as a spreadsheet reads them: number, paper id, title, then the cells (with their [n])."""
        return [["number", "paper_id", "title", *self.labels]] + [
            [str(row.number), row.paper_id, row.title, *(self.cell(row, i) for i in range(len(self.columns)))] for row in self.rows
        ]

    def csv(self) -> str:
        """The table as CSV text."""
        return csv_text(self.csv_rows())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Table:
        """The `Table` that `dataclasses.asdict` gave (answers travel and are kept as dicts)."""
        return cls(list(data["columns"]), [Row(**row) for row in data["rows"]])


@dataclass(frozen=True)
class _Span:
    """A candidate cell: a whole sentence, or one part of a sentence that reports a finding (`roles.finding`)."""

    text: str
    parts: frozenset[tuple[int, str]]  # what of which sentence it uses: a part may go to one cell only
    scores: dict[str, float]


def _spans(sentences: Sequence[str], used: list[re.Pattern[str]]) -> list[_Span]:
    """Every sentence, and both parts of each that reports a finding, scored per role; naming what the question says
    is used ("papers that evaluate on D4RL") makes a sentence the data cell's first choice."""
    spans = []
    for i, sentence in enumerate(sentences):
        scores = role_scores(sentence, i, len(sentences))
        if any(pattern.search(sentence) for pattern in used):
            scores["data"] = max(scores["data"], _FLOOR) + 2.0
        spans.append(_Span(sentence, frozenset({(i, "head"), (i, "tail")}), scores))
        parts = finding(sentence)
        if parts:
            head, tail = parts
            named = 2.0 if any(pattern.search(head) for pattern in used) else 0.0
            spans.append(_Span(head, frozenset({(i, "head")}), {"data": role_scores(head, i, len(sentences))["data"] + named}))
            spans.append(_Span(tail, frozenset({(i, "tail")}), {"result": scores["result"] + 1.0}))
    return spans


def _cells(sentences: Sequence[str], columns: list[str], used: list[re.Pattern[str]]) -> list[str]:
    """One span per column, no part of a sentence in two cells, the choice that scores highest overall; `NOT_STATED`
    where none fits."""
    spans = _spans(sentences, used)
    options = [
        sorted((s for s in spans if s.scores.get(column, 0.0) >= _FLOOR), key=lambda s: -s.scores[column])[:_SHORTLIST]
        for column in columns
    ]
    best: tuple[float, list[_Span | None]] = (-1.0, [None] * len(columns))

    def search(column: int, used: frozenset[tuple[int, str]], chosen: list[_Span | None], total: float) -> None:
        nonlocal best
        if column == len(columns):
            if total > best[0]:
                best = (total, list(chosen))
            return
        for span in options[column]:
            if not span.parts & used:
                search(column + 1, used | span.parts, [*chosen, span], total + span.scores[columns[column]])
        search(column + 1, used, [*chosen, None], total)

    search(0, frozenset(), [], 0.0)
    return [span.text if span is not None else NOT_STATED for span in best[1]]


def csv_text(rows: list[list[str]]) -> str:
    """Rows as CSV text, one line each (a table's, or several tables' in one export)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def build(question: str, papers: Sequence[Paper], split: Callable[[str], Sequence[str]]) -> Table:
    """The table for `papers` (numbered from 1 in this order), columns ordered by what `question` asks about first
    (data first when it names what the papers use)."""
    used = [name_pattern(name) for name in listed_names(question)]
    columns = asked_roles(question)
    if used:  # "which papers use D4RL?" asks where each uses it
        columns = ["data", *(column for column in columns if column != "data")]
    rows = [
        Row(number, paper.paper_id, paper.title or paper.label, _cells(split(paper.abstract), columns, used))
        for number, paper in enumerate(papers, start=1)
    ]
    return Table(columns, rows)


def wanted(mode: str, cited: int, several: bool) -> bool:
    """Whether an answer citing `cited` papers gets a table: ANSWER_TABLE `always` (any cited paper), `never`, or
    `auto`: two or more cited for a question that asks for several papers or compares them."""
    if mode == "always":
        return cited >= 1
    return mode == "auto" and cited >= 2 and several

