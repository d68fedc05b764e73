"""The reader: all-mpnet-base-v2's vectors of abstracts, cached by text, and its cosines to a question.

No cross-encoder runs offline here, so the reader is a stronger, slower dense
model (`mpnet.py`). Its abstract vectors are made at index time (or in the
background when serving starts) and cached on disk, so a question costs one
encoding (~30–75 ms). Retrieval reorders candidates with it (`retrieval/rerank.py`)
and the answer/abstain judge reads its cosines (`retrieval/relevance.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assistant.models import mpnet
from assistant.models.encoders import ArrayEmbedding
from assistant.models.vector_cache import ShippedVectors, VectorFile
from assistant.settings import Settings

_WARM_BATCH = 2000
_WARM_STEP = 16  # abstracts embedded between looks at a stop request or reports of progress (~2 s of the reader here)
_YIELD_AT_MOST_S = 120.0  # the longest a step waits for questions to finish (a question never closed cannot stall it)


def cache_file(cache_dir: Path) -> Path:
    """Where the reader's abstract vectors are cached, whichever copy of it made them (all agree with the float model
    to a cosine of 0.99): apart from the index's."""
    return cache_dir / mpnet.VECTORS_FILE


def wanted(settings: Settings, papers: int) -> bool:
    """Resolve RERANKER for an index of `papers`: `auto` reads with mpnet where it is installed, up to RERANK_MAX_PAPERS.

    Its abstract vectors take ~0.06 s each at index time in bfloat16 or int8 (~0.17 s in float32): ~2 min for the
    conference, ~1.7 h for 100,000 papers; past RERANK_MAX_PAPERS it is on only when asked for by name.
    """
    if settings.reranker == "auto":
        return not too_big(settings, papers) and mpnet.available(settings.model_dir)
    return settings.reranker != "none"


def too_big(settings: Settings, papers: int) -> bool:
    """Whether RERANKER=auto leaves the reader off for an index of `papers` because of its size alone."""
    return settings.reranker == "auto" and papers > settings.rerank_max_papers


def reader_for(settings: Settings, encoder: Callable[[], ArrayEmbedding], questions: Callable[[], ArrayEmbedding] | None = None) -> Reader:
    """The reader over `settings`' cache, taking the shipped vectors first unless SHIPPED_VECTORS is off."""
    cache = cache_file(settings.cache_dir)
    return Reader(cache, encoder, shipped=settings.shipped_vectors_for(cache), questions=questions)


class Reader:
    """The reader's vectors of abstracts and cosines to a question; thread-safe; vectors cached by text in `cache_path`."""

    def __init__(
        self, cache_path: Path, encoder: Callable[[], ArrayEmbedding], shipped: Path | None = None,
        questions: Callable[[], ArrayEmbedding] | None = None,
    ) -> None:
        """`encoder` embeds abstracts, `questions` (default: the same) the questions (an int8 copy and the float model).

        `shipped`: vectors a release carries for known abstracts (`vector_cache.ShippedVectors`), taken before embedding.
        """
        self.cache = VectorFile(cache_path, shipped=ShippedVectors(shipped, encoder) if shipped else None)
        self.encoder = encoder
        self.questions = questions or encoder
        self._cache_lock = threading.Lock()

    def vectors(self, texts: list[str], embedded: Callable[[int], None] | None = None) -> np.ndarray:
        """Unit vectors for `texts`, embedding only those not cached yet; `embedded(n)` is told as they are made."""
        with self._cache_lock:
            cached = {t: self.cache.vector(t) for t in set(texts)}
        missing = [t for t, v in cached.items() if v is None]
        if missing:
            fresh = self._embed(missing, embedded)
            with self._cache_lock:
                for text, vector in zip(missing, fresh):
                    cached[text] = vector
                    self.cache.put(text, {"v": vector})
        return np.asarray([cached[t] for t in texts], dtype=np.float32)

    def missing(self, texts: list[str]) -> int:
        """How many of `texts` have no vector yet (cached or shipped): what `warm` will embed."""
        with self._cache_lock:
            return sum(self.cache.vector(t) is None for t in set(texts))

    def _embed(self, texts: list[str], embedded: Callable[[int], None] | None) -> np.ndarray:
        encoder = self.encoder()
        if embedded is None:
            return encoder.embed_array(texts)
        rows = []
        for start in range(0, len(texts), _WARM_STEP):
            rows.append(encoder.embed_array(texts[start : start + _WARM_STEP]))
            embedded(len(rows[-1]))
        return np.vstack(rows)

    def warm(
        self, texts: list[str], embedded: Callable[[int], None] | None = None, stop: threading.Event | None = None,
        idle: threading.Event | None = None,
    ) -> int:
        """Embed and save every text not yet cached (at index time, or in the background at serve start); returns how many it embedded.

        `embedded(n)`: told as vectors are made (a build's progress bar).
        With `stop`, a few abstracts at a time, ending soon after it is set: a process must not exit while
        onnxruntime still runs in this thread (its teardown aborts the process: "terminate called …").
        With `idle` (set while no question is being answered), each step waits for it: on 2 cores the reader
        would otherwise take them from a question's answer (the embedded model's first answer timed out).
        """
        before = self.cache.count() - self.cache.from_shipped
        step = _WARM_BATCH if stop is None and idle is None else _WARM_STEP
        for start in range(0, len(texts), step):  # in batches: 100,000 vectors as float lists would not fit
            if idle is not None:
                _wait_for(idle, stop)
            if stop is not None and stop.is_set():
                break
            self.vectors(texts[start : start + step], embedded)
            with self._cache_lock:  # questions may be adding vectors meanwhile (`assistant serve` warms in the background)
                self.cache.save_if_due()
        with self._cache_lock:
            self.cache.save()
            return self.cache.count() - self.cache.from_shipped - before

    def scores(self, query: str, texts: list[str]) -> np.ndarray:
        """The reader's cosine between `query` and each text."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return self.vectors(texts) @ self.questions().embed_array([query])[0]


def _wait_for(idle: threading.Event, stop: threading.Event | None) -> None:
    """Until `idle` or `stop` is set, or `_YIELD_AT_MOST_S` has passed."""
    deadline = time.monotonic() + _YIELD_AT_MOST_S
    while not idle.wait(0.2) and time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        pass
