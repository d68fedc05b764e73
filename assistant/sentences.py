"""Sentence splitting, and a cache of per-sentence vectors shared by snippets, quotes and citation checks."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer

if TYPE_CHECKING:
    from assistant.embeddings import WordLlamaEmbedding

CACHE_SIZE = 20_000  # abstracts; a few hundred bytes of vectors each
_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _splitter() -> Callable[[str], list[str]]:
    return split_by_sentence_tokenizer()


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, via the punkt model bundled with llama-index-core (no download)."""
    return [s.strip() for s in _splitter()(text) if s.strip()]


def content_words(text: str, ignore: Collection[str] = ()) -> set[str]:
    """Lower-case words longer than three letters, minus `ignore`: what lexical overlap checks compare."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and w not in ignore}


class SentenceVectors:
    """Sentences of a text and their unit vectors, computed once per distinct text.

    Abstracts never change while an index is open, so the snippet chooser,
    the extractive answerer and the citation checker all reuse the same work.
    """

    def __init__(self, embed_model: WordLlamaEmbedding, size: int = CACHE_SIZE) -> None:
        self.embed_model = embed_model
        self.get = lru_cache(maxsize=size)(self._compute)

    def _compute(self, text: str) -> tuple[tuple[str, ...], np.ndarray]:
        sentences = tuple(split_sentences(text)) or (text,)
        return sentences, self.embed_model.embed_array(list(sentences))

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.embed_model.get_query_embedding(text), dtype=np.float32)
