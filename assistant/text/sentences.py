"""Sentence splitting: abstracts into sentences, and the starts of those sentences saved with a chunk."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection
from functools import lru_cache

from assistant.infra.loading import unimportable

_WORD = re.compile(r"[a-z0-9]+")


_splitter_lock = threading.Lock()  # the first use imports nltk and loads punkt: once, whichever thread comes first
# nltk's package import pulls in scikit-learn and scipy.stats when they are installed (the rerank extra's
# dependencies bring them), for classifiers and statistics nothing here uses: ~150 MB and ~1.5 s per process.
_NLTK_NEEDLESS = ("sklearn", "scipy.stats")


@lru_cache(maxsize=1)
def sentence_splitter() -> Callable[[str], list[str]]:
    """Punkt, as llama-index's splitter uses it; call before building a `SentenceSplitter` so nltk loads lean."""
    with _splitter_lock, unimportable(_NLTK_NEEDLESS):
        from llama_index.core.node_parser.text.utils import (
            split_by_sentence_tokenizer,  # ~0.8 s: only when a text is split
        )

        splitter = split_by_sentence_tokenizer()
        splitter("Punkt loads on first use. This loads it.")
        return splitter


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, via the punkt model bundled with llama-index-core (no download); a piece starting in
    lower case goes on the sentence before it: punkt ends sentences at "(e.g.", "i.e.", "w.r.t." (one abstract in
    twenty), and a quote of "… from a simple statistical measure (e.g." told half a sentence."""
    pieces = _pieces(text)
    starts = _starts(text, pieces)
    if starts is not None:
        return from_starts(text, " ".join(map(str, starts)))
    sentences: list[str] = []
    for piece in pieces:
        if sentences and piece[:1].islower():
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _pieces(text: str) -> list[str]:
    return [s.strip() for s in sentence_splitter()(text) if s.strip()]


def _starts(text: str, pieces: list[str]) -> list[int] | None:
    """Where each sentence of `pieces` starts in `text`, a piece in lower case going on the one before; None if a piece
    cannot be found."""
    starts, position = [], 0
    for piece in pieces:
        start = text.find(piece, position)
        if start < 0:
            return None
        if not (starts and piece[:1].islower()):
            starts.append(start)
        position = start + len(piece)
    return starts


def sentence_starts(text: str) -> str:
    """Where each sentence of `text` starts, as space-separated offsets ("" if they can't be mapped).

    Stored with each chunk at index time, so answering from an index needs no
    sentence model: importing nltk and loading punkt is ~2 s of a cold start.
    """
    starts = _starts(text, _pieces(text))
    return "" if starts is None else " ".join(map(str, starts))


def from_starts(text: str, starts: str) -> list[str]:
    """The sentences `sentence_starts` located: the same list `split_sentences(text)` gives."""
    offsets = [int(offset) for offset in starts.split()]
    pieces = (text[a:b].strip() for a, b in zip(offsets, offsets[1:] + [len(text)]))
    return [piece for piece in pieces if piece]


def content_words(text: str, ignore: Collection[str] = ()) -> set[str]:
    """Lower-case words longer than three letters, minus `ignore`: what lexical overlap checks compare."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and w not in ignore}
