"""The second stage, the reader: all-mpnet-base-v2 re-reads the first stage's best candidates.

No cross-encoder, QA or NLI model ships offline in a package, so the reader
is a stronger, slower dense model (`models/reader.py`): it embeds the question and
the candidates' abstracts, and its cosine ranking is fused (RRF) with the
first-stage order, so a paraphrase MiniLM placed second or eighth moves up
without losing what BM25 and exact names found. Its cosines also go to the
answer/abstain gate (`relevance.py`), where they separate answerable questions
from absent topics better than any first-stage score. Abstract vectors are
cached by text on disk and filled at index time, so a question costs one
encoding (~30–75 ms by its length, on 2 cores: reading its 344 MB of float weights once).
"""

from __future__ import annotations

import numpy as np

from assistant.models.reader import Reader
from assistant.retrieval.fusion import reciprocal_rank_fusion


def rerank(reader: Reader, query: str, texts: list[str], rrf_k: int, weight: float = 1.0) -> tuple[list[int], np.ndarray]:
    """Positions of `texts` (in first-stage order) reordered by RRF of that order (weight 1) and the reader's (`weight`),
    and the reader's cosines."""
    scores = reader.scores(query, texts)
    first = list(range(len(texts)))
    if len(texts) < 2:
        return first, scores
    return reciprocal_rank_fusion([(1.0, first), (weight, [int(i) for i in np.argsort(-scores)])], rrf_k), scores
