"""A "which papers use X" question lists every paper whose abstract names X, checked against a plain word search."""

from __future__ import annotations

import re

import pytest

from assistant import engine
from assistant.engine import Assistant
from assistant.ingest.papers import Paper
from assistant.text.words import listed_names


def word_search(papers: list[Paper], name: str) -> set[str]:
    """Papers whose title or abstract holds `name`'s words in a row, case ignored, as `grep -iw` finds them."""
    wanted = re.findall(r"\w+", name.lower())
    found = set()
    for paper in papers:
        words = re.findall(r"\w+", f"{paper.title or ''} {paper.abstract}".lower())
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            found.add(paper.paper_id)
    return found


@pytest.mark.parametrize(("question", "name"), [
    ("Which papers report experiments on D4RL?", "D4RL"),
    ("Which papers use MuJoCo?", "MuJoCo"),
    ("list the work that evaluates on Meta-World manipulation tasks", "Meta-World"),
    ("Which papers evaluate on ImageNet?", "ImageNet"),
    ("Which papers use GPT-4?", "GPT-4"),
    ("Which papers build on LLaMA?", "LLaMA"),
])
def test_every_paper_naming_what_the_list_asks_for_is_listed_with_a_sentence_naming_it(shipped: Assistant, question: str, name: str) -> None:
    expected = word_search(shipped.papers(), name)
    assert len(expected) >= 2
    answer = shipped.ask(question)
    assert {paper.paper_id for paper in answer.citations} == expected
    assert answer.text.startswith(f"{len(expected)} papers in the index mention {name}:")
    for number, (paper, passage) in enumerate(zip(answer.citations, answer.passages), start=1):
        assert passage[0] in paper.abstract and name.lower() in passage[0].lower() and f"[{number}]" in answer.text


def test_a_long_list_is_counted_whole_and_quotes_the_closest(shipped: Assistant, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_LISTED", 3)
    answer = shipped.ask("Which papers use GPT-4?")
    total = len(word_search(shipped.papers(), "GPT-4"))
    assert answer.text.startswith(f"{total} papers in the index mention GPT-4 (the 3 closest to the question below):")
    assert len(answer.citations) == 3 < total


def test_a_filter_keeps_the_list_to_the_papers_it_admits(shipped: Assistant) -> None:
    everyone = {p.paper_id: p for p in shipped.papers()}
    spotlights = {i for i in word_search(shipped.papers(), "GPT-4") if everyone[i].status == "Spotlight"}
    answer = shipped.ask("Which papers use GPT-4?", filters={"status": ["Spotlight"]})
    assert len(spotlights) >= 2 and {p.paper_id for p in answer.citations} == spotlights


@pytest.mark.parametrize("question", [
    "Which papers give regret guarantees for online learning in constrained MDPs?",  # a concept, not a thing used
    "Which papers examine how robust watermarks on AI-generated content really are?",  # a compound that describes
    "Which papers are about neural operators for solving PDEs?",
])
def test_a_name_the_list_only_mentions_in_passing_does_not_make_it_a_listing(question: str) -> None:
    assert listed_names(question) == []
