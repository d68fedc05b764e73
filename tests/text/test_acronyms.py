"""Acronyms the papers spell out, read from their own text."""

from __future__ import annotations

import pytest

from assistant.text.acronyms import definitions, key, long_stems, spelled_in_capitals


@pytest.mark.parametrize(("text", "expected"), [
    ("We study offline reinforcement learning (RL) from logs.", [("RL", "reinforcement learning")]),
    ("A vision-language model (VLM) and Large Language Models (LLMs).", [("VLM", "vision language model"), ("LLM", "Large Language Models")]),
    ("Message passing in graph neural network models (GNN) is slow.", [("GNN", "graph neural network models")]),
    ("We prompt a model (GPT-4) and a baseline (ours).", []),  # the words before the bracket do not spell it
])
def test_an_acronym_is_read_with_the_words_before_it_that_spell_it_out(text: str, expected: list[tuple[str, str]]) -> None:
    assert definitions(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("We propose our INSTruction optimization usIng Neural bandits Coupled with Transformers (INSTINCT) algorithm.",
     ["INSTruction optimization usIng Neural bandits Coupled with Transformers"]),
    ("We propose Time Series Lightweight Adaptive Network (TSLANet), a model.", ["Time Series Lightweight Adaptive Network"]),
    ("We prompt a model (GPT-4) with reinforcement learning (RL).", []),  # no capitals spell them
])
def test_a_name_is_read_with_the_words_whose_capitals_spell_it(text: str, expected: list[str]) -> None:
    assert spelled_in_capitals(text) == expected


def test_an_acronym_is_keyed_and_spelled_in_the_stems_bm25_indexes() -> None:
    assert key("LLM") == "llm"
    assert key("GPT-4") == ""  # two tokens: a name, not an acronym a word stands for
    assert long_stems("mixture of experts") == ("mixtur", "expert")  # function words are not indexed
