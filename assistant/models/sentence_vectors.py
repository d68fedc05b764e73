"""Sentences of abstracts and their vectors, computed once per distinct text and shared by snippets, quotes and citation checks."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from assistant.models.encoders import ArrayEmbedding
from assistant.text.sentences import from_starts, split_sentences

CACHE_SIZE = 4_096  # abstracts; ~9 KB each (sentences and their 256-d vectors): ~37 MB when full


class SentenceVectors:
    """Sentences of a text and their unit vectors, computed once per distinct text.

    Abstracts never change while an index is open, so the snippet chooser,
    the extractive answerer and the citation checker all reuse the same work.
    """

    def __init__(self, embed_model: ArrayEmbedding, size: int = CACHE_SIZE, starts_of: Callable[[str], str | None] | None = None) -> None:
        self.embed_model = embed_model
        self.starts_of = starts_of or (lambda text: None)  # an abstract -> sentence_starts(abstract), read from the index
        self.size = size
        self._chunk_starts: dict[str, str] = {}  # the same for chunks just retrieved, the newest `size` of them
        self.get = lru_cache(maxsize=size)(self._compute)

    def note_starts(self, text: str, starts: str) -> None:
        """Remember where the sentences of a retrieved chunk `text` start (its stored metadata says)."""
        if text not in self._chunk_starts:
            if len(self._chunk_starts) >= self.size:
                self._chunk_starts.pop(next(iter(self._chunk_starts), ""), None)
            self._chunk_starts[text] = starts

    def split(self, text: str) -> tuple[str, ...]:
        """The sentences of `text`, as `get` gives them, without computing their vectors."""
        known = self._chunk_starts.get(text) or self.starts_of(text)
        return tuple(from_starts(text, known) if known else split_sentences(text)) or (text,)

    def _compute(self, text: str) -> tuple[tuple[str, ...], np.ndarray]:
        sentences = self.split(text)
        return sentences, self.embed_model.embed_array(list(sentences))

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.embed_model.get_query_embedding(text), dtype=np.float32)
