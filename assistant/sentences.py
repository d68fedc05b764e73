"""Sentence splitting shared by snippet selection and the extractive answerer."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer


@lru_cache(maxsize=1)
def _splitter() -> Callable[[str], list[str]]:
    return split_by_sentence_tokenizer()


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, via the punkt model bundled with llama-index-core (no download)."""
    return [s.strip() for s in _splitter()(text) if s.strip()]
