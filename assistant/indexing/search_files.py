"""What opening a build needs besides its vectors, derived once and saved as files beside it.

Opening a build used to read every chunk back from Chroma and tokenize it,
in every app process: 100,000 abstracts took minutes and held each word set
in memory. Now the build writes, next to itself, its BM25 index and chunk
table (`lexical.LexicalIndex`), its paper table (`papers.jsonl`, each
paper's stored metadata) and its chunks' vectors in the chunk table's order
(`vectors.npy`, read by row: a filtered search scores the admitted chunks
exactly, ~1 µs each, where Chroma reads a vector by id in ~30 µs); an app
opens those, BM25 memory-mapped. The files sit
under `CACHE_DIR/builds/<build name>`: a build's name is unique and a build
never changes, so every process that opens it reads the same thing. A build
whose files are missing (made by an older version, or built on another
machine against a shared Chroma server) has them derived from Chroma once and
saved; files of builds that no longer exist are removed after each build.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.models.Collection import Collection

from assistant.errors import StoreUnavailableError
from assistant.indexing import store
from assistant.indexing.lexical import LexicalBuilder, LexicalIndex
from assistant.indexing.paper_table import PaperTable
from assistant.infra import memory
from assistant.infra.files import NpyRows, write_npy_header
from assistant.ingest.chunking import lexical_keys, paper_record
from assistant.settings import StorageSettings

log = logging.getLogger(__name__)

_PAPERS = "papers.jsonl"
_VECTORS = "vectors.npy"
_DONE = "complete"  # written last, holding _FORMAT: a folder without it is a leftover
_FORMAT = "6"  # the files' version: a folder of another version is derived again (4: names in titles, authors; 5: "S^2IP" as
# "S2IP"; 6: British spellings stemmed as American)
_LEFTOVER_AGE_S = 3600  # a half-written folder this old belongs to no running process


def folder(settings: StorageSettings, build: str) -> Path:
    """Where the files of build `build` live."""
    return settings.cache_dir / "builds" / build


@dataclass
class BuildFiles:
    """A build's lexical index and papers, with the sentence offsets stored for each abstract."""

    lexical: LexicalIndex
    papers: PaperTable
    vectors: NpyRows  # row i: the vector of chunk `lexical.chunk_ids[i]`


def ready(settings: StorageSettings, build: str) -> bool:
    """Whether this machine has build `build`'s files, so opening it reads them instead of deriving them."""
    return _complete(folder(settings, build))


def _complete(where: Path) -> bool:
    """Whether `where` holds a finished folder of this version."""
    try:
        return (where / _DONE).read_text(encoding="utf-8") == _FORMAT
    except OSError:
        return False


class Writer:
    """Takes a build's chunks in build order, `(chunk_id, text, metadata, vector)`, and writes its files."""

    def __init__(self, settings: StorageSettings, build: str) -> None:
        self.target = folder(settings, build)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(dir=self.target.parent, prefix=f".{build}-", suffix=".tmp"))
        self.lexical = LexicalBuilder()
        self._papers = open(self.work / _PAPERS, "w", encoding="utf-8")
        self._vectors = open(self.work / f"{_VECTORS}.raw", "wb")  # float32 rows; the .npy header is added at the end
        self._shape = (0, 0)

    def add(self, chunks: list[tuple[str, str, dict[str, Any], Any]]) -> None:
        if not chunks:
            return
        self.lexical.add((chunk_id, meta["paper_id"], text, lexical_keys(meta)) for chunk_id, text, meta, _ in chunks)
        vectors = np.asarray([vector for *_, vector in chunks], dtype="<f4")
        vectors.tofile(self._vectors)
        self._shape = (self._shape[0] + len(vectors), vectors.shape[1])
        for _, text, meta, _ in chunks:
            record = paper_record(text, meta)  # the first chunk of a paper carries its metadata
            if record is not None:
                self._papers.write(json.dumps(record) + "\n")

    def finish(self) -> None:
        """Save everything and move the folder into place; an existing complete folder (another process) wins."""
        self._papers.close()
        self._save_vectors()
        memory.release(self._shape[0])  # what the build freed (its papers, chunks), so BM25's arrays do not come on top of it
        self.lexical.finish().save(self.work)
        memory.release(self._shape[0])  # building BM25 needed a few hundred MB for a moment
        (self.work / _DONE).write_text(_FORMAT, encoding="utf-8")
        if self.target.exists() and not _complete(self.target):
            shutil.rmtree(self.target, ignore_errors=True)  # an older version's folder, derived again
        try:
            os.replace(self.work, self.target)
        except OSError:  # another process saved the same build's files first
            shutil.rmtree(self.work, ignore_errors=True)
            if not _complete(self.target):
                raise

    def vectors(self) -> NpyRows:
        """The build's vectors, one row a chunk in build order, once `finish` has saved them."""
        return NpyRows(self.target / _VECTORS)

    def _save_vectors(self) -> None:
        """The raw rows behind a `.npy` header: a file `np.load` and `NpyRows` read."""
        self._vectors.close()
        raw = self.work / f"{_VECTORS}.raw"
        with open(self.work / _VECTORS, "wb") as out, open(raw, "rb") as rows:
            write_npy_header(out, self._shape)
            shutil.copyfileobj(rows, out, 1 << 20)
        raw.unlink()

    def discard(self) -> None:
        """Drop the half-written files of a build that failed."""
        self._papers.close()
        self._vectors.close()
        shutil.rmtree(self.work, ignore_errors=True)


def _derive(settings: StorageSettings, build: str) -> None:
    """Write the files of build `build` from what the store holds, in build order."""
    collection = store.connect(settings).get_collection(build)
    writer = Writer(settings, build)
    try:
        page: list[tuple[str, str, dict[str, Any], Any]] = []
        for stored in store.read_chunks(collection):
            page.append((stored.chunk_id, stored.text, stored.metadata, stored.vector))
            if len(page) == 5000:
                writer.add(page)
                page = []
        writer.add(page)
        writer.finish()
    except BaseException:
        writer.discard()
        raise


def derive(settings: StorageSettings, build: str) -> None:
    """Derive the files in a child process, so an app's memory never holds the derivation beside the build it serves.

    Deriving 100,000 abstracts' files needs a few hundred MB for a minute (BM25's token ids and arrays), on top of
    the build an app keeps answering from while a newer one is derived: in the app process, that went past 1.3 GB.
    A child gives all of it back when it exits. It is a fresh interpreter (`python -m`), not a fork of a threaded
    server nor `multiprocessing`, which would run an unguarded caller's script again.
    """
    where = StorageSettings.model_validate(settings.model_dump(include=set(StorageSettings.model_fields))).model_dump_json()
    package_root = str(Path(__file__).resolve().parents[2])  # importable even when the caller put it on sys.path by hand
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "assistant.indexing.search_files", where, build]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    except OSError as exc:  # no interpreter to start, no processes left
        raise StoreUnavailableError(f"Could not start the process deriving the search files of build {build}: {exc}") from exc
    if done.returncode:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise StoreUnavailableError(
            f"Could not derive the search files of build {build} from {store.location(settings)}: "
            f"{lines[-1] if lines else f'the process deriving them exited with {done.returncode}'}"
        )


def open_files(settings: StorageSettings, collection: Collection) -> BuildFiles:
    """The files of `collection`'s build, derived from Chroma and saved first if they are missing."""
    where = folder(settings, collection.name)
    if not _complete(where):
        log.info("deriving the search files of build %s from the store (once)", collection.name)
        derive(settings, collection.name)
    return BuildFiles(LexicalIndex.load(where), PaperTable(where / _PAPERS), NpyRows(where / _VECTORS))


def prune(settings: StorageSettings, live: set[str]) -> None:
    """Remove the files of builds not in `live`, and folders a killed build or process left half-written an hour ago."""
    parent = settings.cache_dir / "builds"
    for path in parent.iterdir() if parent.is_dir() else []:
        leftover = path.name.startswith(".") and path.stat().st_mtime < time.time() - _LEFTOVER_AGE_S
        if leftover or not path.name.startswith(".") and path.name not in live:
            shutil.rmtree(path, ignore_errors=True)
            log.info("removed %s: its build no longer exists", path)


if __name__ == "__main__":  # the child of `derive`: python -m assistant.indexing.search_files '<where as JSON>' <build>
    _derive(StorageSettings.model_validate_json(sys.argv[1]), sys.argv[2])
