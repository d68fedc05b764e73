"""Comparison tables: every cell a verbatim span of its own paper's abstract, on every surface that shows an answer."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from assistant.answer.result import Answer
from assistant.answer.table import NOT_STATED, Table, build
from assistant.engine import Assistant
from assistant.ingest.papers import Paper
from assistant.serve.http_api import without_references
from assistant.settings import Settings
from assistant.text.sentences import split_sentences
from tests.serve.test_http_api import INDEX, api_server, client
from tests.test_ask import _cli

QUESTIONS = [
    "Which papers evaluate on D4RL?",
    "TENG and DPOT both use neural networks for PDEs. How do their strategies differ?",
    "Which papers tackle imitation learning from imperfect demonstrations?",
    "Which papers study spiking neural networks?",
]


def assert_grounded(answer: Answer) -> None:
    """One row per cited paper, in citation order; every cell its own abstract's words, or "not stated"."""
    table = answer.table
    assert table is not None and len(table.rows) == len(answer.citations)
    assert sorted(table.columns) == sorted(["problem", "approach", "data", "result"])
    for row, paper in zip(table.rows, answer.citations, strict=True):
        assert (row.number, row.paper_id) == (answer.citations.index(paper) + 1, paper.paper_id)
        for cell in row.cells:
            assert cell == NOT_STATED or cell in paper.abstract, (paper.title, cell)
        assert len({cell for cell in row.cells if cell != NOT_STATED}) == len([cell for cell in row.cells if cell != NOT_STATED])


@pytest.mark.parametrize("question", QUESTIONS)
def test_lists_and_comparisons_get_a_table_whose_cells_are_their_papers_sentences(shipped: Assistant, question: str) -> None:
    answer = shipped.ask(question)
    assert len(answer.citations) >= 2
    assert_grounded(answer)
    stated = [cell for row in answer.table.rows for cell in row.cells if cell != NOT_STATED]
    assert len(stated) >= 2 * len(answer.table.rows)  # most cells hold a sentence, not "not stated"


def test_the_question_orders_the_columns_and_a_named_benchmark_fills_its_cell(shipped: Assistant) -> None:
    listing = shipped.ask("Which papers evaluate on D4RL?")
    assert listing.table.columns[0] == "data"
    assert all("D4RL" in row.cells[0] for row in listing.table.rows)  # every listed paper's data cell names it
    methods = shipped.ask("TENG and DPOT both use neural networks for PDEs. How do their strategies differ?")
    assert methods.table.columns[0] == "approach"
    assert {row.title.split(":")[0] for row in methods.table.rows} == {"TENG", "DPOT"}


def test_one_paper_gets_a_table_only_when_asked_and_never_means_never(shipped: Assistant) -> None:
    question = "What is PRepBN and what problem does it solve in Transformers?"
    assert shipped.ask(question).table is None
    asked = shipped.ask(question, answer_table="always")
    assert_grounded(asked)
    assert shipped.ask("Which papers evaluate on D4RL?", answer_table="never").table is None
    assert shipped.ask("Is there work on protein folding with quantum annealers on bananas?").table is None  # declined: no table


def test_a_finding_is_cut_into_what_it_was_tested_on_and_what_was_found() -> None:
    abstract = (
        "Offline reinforcement learning struggles with long horizons. We propose Hopper, a planner that splits tasks. "
        "Experiments on the D4RL AntMaze suite show that Hopper outperforms prior planners by 20%."
    )
    paper = Paper(paper_id="p1", label="Hopper", abstract=abstract, title="Hopper")
    table = build("Which papers use D4RL?", [paper], split_sentences)
    data, problem, approach, result = table.rows[0].cells
    assert data == "Experiments on the D4RL AntMaze suite"
    assert result == "Hopper outperforms prior planners by 20%."
    assert problem.startswith("Offline reinforcement learning") and approach.startswith("We propose Hopper")


def test_markdown_and_csv_keep_every_cell_with_its_number(shipped: Assistant) -> None:
    answer = shipped.ask("Which papers evaluate on D4RL?")
    table = Table.from_dict(answer.to_dict()["table"])
    assert table == answer.table
    rows = list(csv.reader(io.StringIO(table.csv())))
    assert rows[0] == ["number", "paper_id", "title", *table.labels] and len(rows) == len(table.rows) + 1
    for row, shown in zip(table.rows, rows[1:], strict=True):
        assert shown[:3] == [str(row.number), row.paper_id, row.title]
        assert shown[3:] == [cell if cell == NOT_STATED else f"{cell} [{row.number}]" for cell in row.cells]
    lines = table.markdown().splitlines()
    assert lines[0] == "| Paper | Data / benchmarks | Problem | Approach | Headline result |" and len(lines) == len(table.rows) + 2
    assert all(line.count(f"[{row.number}]") >= 2 for line, row in zip(lines[2:], table.rows, strict=True))


def test_the_apis_carry_the_table_as_markdown_and_beside_it(shipped_settings: Settings) -> None:
    question = "Which papers evaluate on D4RL?"
    with api_server(Assistant(shipped_settings.with_overrides(collection=INDEX))) as url:
        whole = client(url).chat.completions.create(model=INDEX, messages=[{"role": "user", "content": question}])
        content, table = whole.choices[0].message.content, whole.model_extra["table"]
        assert table["columns"][0] == "data" and len(table["rows"]) == len(whole.model_extra["citations"])
        assert Table.from_dict(table).markdown() in content and content.index("| Paper |") < content.index("References:")
        posted = httpx.post(f"{url}/api/ask", json={"question": question}, timeout=60).json()
        assert posted["table"] == table
        assert without_references(content) == posted["text"]  # sent back as history, the answer is its text alone
        single = httpx.post(f"{url}/api/ask", json={"question": "What is PRepBN?", "answer_table": "always"}, timeout=60).json()
        assert len(single["table"]["rows"]) == len(single["citations"]) >= 1


def test_cli_prints_the_table_when_asked(shipped_settings: Settings) -> None:
    shown = _cli(["ask", "--table", "What is PRepBN and what problem does it solve in Transformers?"], shipped_settings, COLUMNS="200")
    assert shown.exit_code == 0, shown.stderr
    assert "Side by side" in shown.stdout and "Headline result" in shown.stdout
    plain = _cli(["ask", "--no-table", "Which papers evaluate on D4RL?"], shipped_settings)
    assert plain.exit_code == 0 and "Side by side" not in plain.stdout
