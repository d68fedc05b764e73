"""Vectors cached by the exact text they embed, in one binary file per model.

llama-index looks each text up in its `embeddings_cache` (a key-value store)
before embedding it, so re-indexing an unchanged corpus embeds nothing
(`embeddings.VectorCache` adapts this file to that interface); the reader
keeps its abstract vectors here too, without importing llama-index (~0.8 s)
into the answering path. llama-index's own stores keep every vector as JSON
in memory: 3.2 GB of RSS to build 100,000 abstracts. This one keeps two `.npy` files, the float32 vectors
and their text hashes (`<name>.keys.npy`, read whole: 16 bytes a vector), plus
the vectors added since the last save. Saved vectors are read through
`files.NpyRows`, which lets go of the pages it touched: a build passes over
every one of them, and a plain mapping would keep them all in its RSS
(100,000 MiniLM vectors: 150 MB; the reader's: 300 MB). Saving streams old and
new vectors into a temporary file and renames it, then does the same for the
hashes; rows are only ever appended, so a crash between the two renames
leaves hashes that still name the right rows (the extra vectors are ignored).

A cache can fall back on `ShippedVectors`: the vectors of the shipped sample's
abstracts and chunks, which the repository carries (`index/vectors/`, made by
`scripts/sample_vectors.py`), so a fresh checkout indexes and reads the sample
in seconds instead of minutes. They are used only once one of them,
embedded again, agrees with the model that runs here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from assistant.infra.files import NpyRows, atomic_write, write_npy_header

log = logging.getLogger(__name__)

_KEY_BYTES = 16
_COPY_ROWS = 4096  # records copied at a time when saving, so a save never holds the whole file in memory


def text_hash(text: str) -> bytes:
    """The 16-byte hash a text is cached under (not `corpus.text_key`, which compares abstracts loosely)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_KEY_BYTES).digest()


def files_of(path: Path) -> tuple[Path, Path]:
    """The two files a vector file at `path` is saved as: its vectors (`path`) and their text hashes."""
    return path, path.with_suffix(".keys.npy")


class VectorFile:
    """Vectors keyed by text hash, saved atomically to `path` (`.npy`) and its `.keys.npy`.

    `get` answers `{"v": [floats]}`, the shape llama-index (which reads the first
    value) and the reranker both use. A JSON cache an older version wrote beside
    `path` is imported once, so upgrading re-embeds nothing.
    """

    def __init__(self, path: Path, save_every_s: float = 60.0, shipped: ShippedVectors | None = None) -> None:
        self._path = path
        self._shipped = shipped
        self.from_shipped = 0  # vectors taken from `shipped` rather than embedded
        self._keys_path = files_of(path)[1]
        self._legacy = path.with_suffix(".json") if path.suffix != ".json" else None  # what earlier versions wrote
        self._rows: dict[bytes, int] = {}
        self._stored: NpyRows | None = None
        self._stored_rows = 0  # rows of `_stored` that a hash names (a crash between the two renames leaves extra vectors)
        self._new_vectors: list[np.ndarray] = []
        self._save_every_s = save_every_s
        self._saved_at = time.monotonic()
        if path.exists() and self._keys_path.exists():
            try:
                hashes = np.load(self._keys_path)
                keys = hashes.view(np.uint8).reshape(len(hashes), _KEY_BYTES)  # raw bytes: bytes(S16) drops trailing NULs
                self._stored = NpyRows(path)
                self._stored_rows = min(len(keys), self._stored.rows)
                self._rows = {key.tobytes(): row for row, key in enumerate(keys[: self._stored_rows])}
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable embedding cache %s (%s); it will be rebuilt", path, exc)
                if self._stored is not None:
                    self._stored.close()
                self._stored, self._stored_rows, self._rows = None, 0, {}
        elif self._legacy is not None and self._legacy.is_file():
            self._import_json(self._legacy)

    def _import_json(self, legacy: Path) -> None:
        try:
            data = json.loads(legacy.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable embedding cache %s (%s)", legacy, exc)
            return
        for text, value in data.get("embeddings", {}).items():
            self.put(text, value)
        log.info("imported %d cached vectors from %s", self.count(), legacy)

    def count(self) -> int:
        """Number of cached vectors."""
        return len(self._rows)

    def _vector(self, row: int) -> np.ndarray:
        if row < self._stored_rows:
            return self._stored.read(row, row + 1)[0]  # type: ignore[union-attr]
        return self._new_vectors[row - self._stored_rows]

    def vector(self, key: str) -> np.ndarray | None:
        """The vector cached for text `key` (or shipped for it, then cached), or None."""
        row = self._rows.get(text_hash(key))
        if row is not None:
            return self._vector(row)
        vector = self._shipped.vector(key) if self._shipped is not None else None
        if vector is not None:
            self.put(key, {"v": vector})
            self.from_shipped += 1
        return vector

    def get(self, key: str, collection: str = "data") -> dict | None:
        vector = self.vector(key)
        return None if vector is None else {"v": vector.tolist()}

    def put(self, key: str, val: dict, collection: str = "data") -> None:
        hashed = text_hash(key)
        if hashed in self._rows:
            return
        vector = np.asarray(next(iter(val.values())), dtype=np.float32)
        shape = self._new_vectors[0].shape if self._new_vectors else (self._stored.dimension,) if self._stored is not None else vector.shape
        if vector.shape != shape:
            raise ValueError(f"a {vector.shape} vector cannot join the {self._path.name} cache of another dimension")
        self._rows[hashed] = len(self._rows)
        self._new_vectors.append(vector)

    def save_if_due(self) -> None:
        """Save when vectors were added over `save_every_s` ago, so a long build killed half-way keeps most of its work."""
        if self._new_vectors and time.monotonic() - self._saved_at >= self._save_every_s:
            self.save()

    def save(self) -> None:
        """Write vectors, then hashes, each to a temporary file renamed into place; an unchanged cache is not rewritten."""
        if not self._new_vectors:
            return
        old = self._stored_rows
        atomic_write(self._path, lambda tmp: self._write_vectors(tmp, old), prefix=".embeddings-")
        keys = np.frombuffer(b"".join(self._rows), dtype=np.uint8).reshape(len(self._rows), _KEY_BYTES)  # insertion order: row order
        atomic_write(self._keys_path, lambda tmp: self._write_keys(tmp, keys), prefix=".embeddings-")
        if self._stored is not None:
            self._stored.close()
        self._stored = NpyRows(self._path)
        self._stored_rows = len(self._rows)
        self._new_vectors = []
        self._saved_at = time.monotonic()
        if self._legacy is not None:
            self._legacy.unlink(missing_ok=True)  # an imported JSON cache is no longer needed

    def _write_vectors(self, tmp: Path, old: int) -> None:
        shape = (old + len(self._new_vectors), *self._new_vectors[0].shape)
        with open(tmp, "wb") as out:  # written, not mapped: a mapping's pages would count in RSS until unmapped
            write_npy_header(out, shape)
            for start in range(0, old, _COPY_ROWS):
                self._stored.read(start, min(start + _COPY_ROWS, old)).tofile(out)  # type: ignore[union-attr]
            for start in range(0, len(self._new_vectors), _COPY_ROWS):
                np.stack(self._new_vectors[start : start + _COPY_ROWS]).astype("<f4", copy=False).tofile(out)

    @staticmethod
    def _write_keys(tmp: Path, keys: np.ndarray) -> None:
        with open(tmp, "wb") as handle:  # a file object: np.save would add ".npy" to the temporary name
            np.save(handle, keys)


class ShippedVectors:
    """Vectors a release ships for known texts (`path`, a `VectorFile`), trusted once `encoder` reproduces one of them.

    The check embeds the first text asked for that has a shipped vector (~0.05–0.3 s, once): a different
    model or export, or a damaged file, turns the shipped vectors off with a warning and everything is
    embedded as before.
    """

    def __init__(self, path: Path, encoder: Callable[[], Any]) -> None:
        self._path = path
        self._encoder = encoder
        self._lock = threading.Lock()
        self._file: VectorFile | None = None
        self._trusted: bool | None = None if path.is_file() else False

    def vector(self, text: str) -> np.ndarray | None:
        """The shipped vector for `text`, or None (none shipped, or the check failed)."""
        if self._trusted is False:
            return None
        with self._lock:
            if self._file is None:
                self._file = VectorFile(self._path)
            vector = self._file.vector(text)
            if vector is None or self._trusted:
                return vector
            self._trusted = self._agrees(text, vector)
            return vector if self._trusted else None

    def _agrees(self, text: str, vector: np.ndarray) -> bool:
        encoder = self._encoder()
        embedded = np.asarray(encoder.embed_array([text])[0], dtype=np.float32)
        cosine = float(embedded @ vector) if embedded.shape == vector.shape else float("nan")
        if cosine >= encoder.agreement:  # the least cosine the running model keeps to the one that made them
            return True
        log.warning("not using the shipped vectors in %s: they do not match this model (cosine %.4f for one text); embedding instead",
                    self._path, cosine)
        return False
