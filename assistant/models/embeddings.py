"""The encoders (`encoders.py`) as llama-index `BaseEmbedding`s for the indexing pipeline, with a persistent cache.

llama-index looks each text up in the cache (`VectorCache`, a `vector_cache.VectorFile`
behind llama-index's key-value interface) before embedding it, so re-indexing an unchanged corpus embeds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.storage.kvstore.types import DEFAULT_COLLECTION, BaseKVStore
from pydantic import PrivateAttr

from assistant.models.encoders import MODELS, ArrayEmbedding, load_encoder
from assistant.models.vector_cache import ShippedVectors, VectorFile


class VectorCache(VectorFile, BaseKVStore):
    """The vector file as llama-index's `embeddings_cache`: `get` answers `{"v": [floats]}`, the value llama-index reads."""

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        """Not offered: the cache holds text hashes, not texts."""
        raise NotImplementedError("VectorCache keys are text hashes; look texts up with get()")

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        """Not offered: entries are never removed (a vector stays valid for its text)."""
        return False

    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.put(key, val, collection)

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        return self.get(key, collection)

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        return self.get_all(collection)

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return self.delete(key, collection)


class IndexEmbedding(BaseEmbedding):
    """An encoder behind llama-index's embedding interface (batches, cache), keeping `embed_array`."""

    _encoder: Any = PrivateAttr()

    def __init__(self, encoder: ArrayEmbedding, **kwargs: Any) -> None:
        super().__init__(model_name=encoder.model_name, **kwargs)
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "IndexEmbedding"

    @property
    def dimension(self) -> int:
        return self._encoder.dimension

    def embed_array(self, texts: list[str]) -> np.ndarray:
        return self._encoder.embed_array(texts)

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._encoder.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._encoder.embed_array([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._encoder.embed_array(texts).tolist()


def cache_file(folder: Path, name: str) -> Path:
    """Where the vectors of embedding model `name` are cached in `folder` (a cache folder, or the shipped vectors').

    Named after the model's vectors (`MODELS[name]["vectors"]`), so a cache of an earlier export is never mixed in.
    """
    return folder / f"embeddings-{MODELS[name].get('vectors', name)}.npy"


def load_embedding(
    name: str, model_dir: Path, batch_size: int = 64, cache_path: Path | None = None, private: bool = False, shipped: Path | None = None,
) -> IndexEmbedding:
    """The embedding model `name` for indexing, optionally with an on-disk cache keyed by the exact text.

    `private`: the model is this object's alone (see `encoders.load_encoder`), freed when it is dropped.
    `shipped`: vectors a release carries for known texts (`vector_cache.ShippedVectors`), taken before embedding.
    """
    encoder = load_encoder(name, model_dir, private)
    cache = VectorCache(cache_path, shipped=ShippedVectors(shipped, lambda: encoder) if shipped else None) if cache_path else None
    return IndexEmbedding(encoder, embed_batch_size=batch_size, embeddings_cache=cache)
