"""All Chroma I/O: the collections that hold builds of an index, their manifests, and reading and writing chunks.

An index named `icml2024` is a set of builds, each its own Chroma collection
(`icml2024--20261202T153000-1a2b3c4d`). A build's manifest lives in its
collection metadata with `complete = False` until every chunk is written; only
then is it flipped to `True`. Readers open the newest complete build, so an
interrupted or failed build leaves the previous one answering, and the same
rule works for the embedded store and for a shared Chroma server.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings

from assistant.errors import (
    IndexMismatchError,
    IndexNotFoundError,
    StoreDamagedError,
    StoreUnavailableError,
    component_failure,
)
from assistant.infra.files import atomic_write
from assistant.infra.version import VERSION
from assistant.ingest.chunking import TOKENIZER
from assistant.models.encoders import MODELS
from assistant.settings import Settings, StorageSettings

if TYPE_CHECKING:
    from llama_index.core.schema import BaseNode

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_SEPARATOR = "--"
_KEEP_PREVIOUS = 1  # builds kept after a switch, so readers mid-query finish on the old one
_PAGE = 5000
# Chroma's defaults (16 neighbours, ef 100) returned 0.87 of exact search's 10 nearest at 50k abstracts, some
# questions none of them; these return 0.93 (min 0.4) for +0.3 ms a query and a build 1.7x slower to add vectors.
HNSW = {"space": "cosine", "max_neighbors": 32, "ef_construction": 200, "ef_search": 200}
_WRITE_BATCH = 1000
_DATABASE = "chroma.sqlite3"  # the embedded store's database, beside one folder of vectors per build


@dataclass(frozen=True)
class Manifest:
    """What a build was made from; compared with the settings whenever it is opened."""

    index: str
    collection: str
    embed_model: str
    dimension: int
    chunk_size: int
    chunk_overlap: int
    tokenizer: str
    corpus_hash: str
    corpus_path: str
    papers: int
    chunks: int
    built_at: str
    schema_version: int = SCHEMA_VERSION
    app_version: str = VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def rebuild_hint(settings: StorageSettings) -> str:
    return f"assistant index --rebuild --collection {settings.collection}"


def build_settings(settings: Settings) -> dict[str, Any]:
    """The settings a build must share with the reader, as manifest fields."""
    return {
        "embed_model": settings.embed_model,
        "dimension": MODELS[settings.embed_model]["dimension"],
        "chunk_size": settings.chunk_size,
        "chunk_overlap": settings.chunk_overlap,
        "tokenizer": TOKENIZER,
        "schema_version": SCHEMA_VERSION,
    }


def check_compatible(manifest: Manifest, settings: Settings) -> None:
    """Raise `IndexMismatchError` naming each differing setting and the command that rebuilds."""
    expected = build_settings(settings)
    found = asdict(manifest)
    differences = [f"{key}: index has {found[key]!r}, settings ask for {value!r}" for key, value in expected.items() if found.get(key) != value]
    if differences:
        raise IndexMismatchError(
            f"Index '{manifest.index}' was built with different settings ({'; '.join(differences)}). "
            f"Rebuild it with: {rebuild_hint(settings)}"
        )


# One client per server and process: chromadb keeps every HttpClient's system alive (~1.6 MB each), and an app
# connects at every index check; a new client each time grew a 100k-paper app by ~700 MB in 18 minutes.
_servers: dict[tuple[str, int], ClientAPI] = {}
_servers_lock = threading.Lock()


def connect(settings: StorageSettings) -> ClientAPI:
    """The embedded store under `INDEX_DIR`, or the server at `CHROMA_HOST:CHROMA_PORT`."""
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_host:
        try:
            with _servers_lock:
                key = (settings.chroma_host, settings.chroma_port)
                client = _servers.get(key)
                if client is None:
                    client = _servers[key] = chromadb.HttpClient(host=key[0], port=key[1], settings=chroma_settings)
            client.heartbeat()
        except Exception as exc:
            raise StoreUnavailableError(
                f"Cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} ({exc}). "
                f"Start one with: chroma run --path ./index/server --host {settings.chroma_host} "
                f"--port {settings.chroma_port}, or unset CHROMA_HOST to use the embedded store."
            ) from exc
        return client
    try:
        settings.index_dir.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(settings.index_dir), settings=chroma_settings)
    except BaseException as exc:
        if not component_failure(exc):
            raise
        if "readonly database" in str(exc) or not os.access(settings.index_dir, os.W_OK):
            raise StoreUnavailableError(
                f"The index store at {settings.index_dir} is read-only, and Chroma writes to its folder even to answer. "
                f"Give this user write access to it, or copy it somewhere writable and set INDEX_DIR to the copy."
            ) from exc
        raise StoreUnavailableError(f"Cannot open the index store at {settings.index_dir} ({exc}). {damaged_hint(settings)}") from exc


def damaged_hint(settings: StorageSettings) -> str:
    """What to do about a store that cannot be read."""
    where = f"the Chroma server's data ({location(settings)})" if settings.chroma_host else f"{settings.index_dir}"
    return f"If it is damaged, move {where} aside and rebuild with: {rebuild_hint(settings)}"


_damage_seen: dict[str, tuple[tuple[int, int], str | None]] = {}  # per database, its latest version's verdict: the check reads it all


def damage(settings: StorageSettings) -> str | None:
    """SQLite's first complaint about the embedded store's database, or None when it reads cleanly (or is not there).

    Chroma's Rust core panics on a damaged page, mid-question, with a backtrace that names nothing a user can act
    on; `PRAGMA quick_check` finds the same pages in milliseconds (40 damaged pages of the sample's store: 4 ms).
    A database another process holds locked is not called damaged.
    """
    if settings.chroma_host:
        return None
    database = settings.index_dir / _DATABASE
    try:
        stat = database.stat()
    except OSError:
        return None
    version = (stat.st_mtime_ns, stat.st_size)
    seen = _damage_seen.get(str(database))
    if seen is None or seen[0] != version:
        try:
            with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5.0)) as db:
                rows = db.execute("PRAGMA quick_check(1)").fetchall()
            found = None if rows == [("ok",)] else " ".join(str(rows[0][0]).split())
        except sqlite3.OperationalError as exc:  # locked, busy or unreadable: not a verdict on its pages
            log.info("could not check %s (%s)", database, exc)
            return None
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            found = str(exc)
        seen = _damage_seen[str(database)] = (version, found.removeprefix("*** in database main *** ") if found else None)
    return seen[1]


def check_intact(settings: StorageSettings) -> None:
    """Raise `StoreDamagedError`, one line naming the damage and the fix, if the embedded store's database is damaged."""
    found = damage(settings)
    if found:
        raise StoreDamagedError(
            f"The index store at {settings.index_dir} is damaged (SQLite: {found[:200]}); nothing can be answered from it. "
            f"Fix: {rebuild_hint(settings)}, which moves it aside to {settings.index_dir}.damaged-<time> and builds a new one."
        )


def set_aside(settings: StorageSettings) -> Path:
    """Move a damaged embedded store out of the way, kept whole for whoever wants to look at it; returns where it went."""
    aside = settings.index_dir.with_name(f"{settings.index_dir.name}.damaged-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}")
    settings.index_dir.rename(aside)
    _damage_seen.clear()
    return aside


def location(settings: StorageSettings) -> str:
    if settings.chroma_host:
        return f"Chroma server {settings.chroma_host}:{settings.chroma_port}"
    return str(settings.index_dir)


def _builds(client: ClientAPI, index: str, complete: bool | None = True) -> list[tuple[Collection, Manifest]]:
    """Builds of `index`, newest first; `complete=None` lists finished and unfinished ones."""
    found = []
    for collection in client.list_collections():
        meta = collection.metadata or {}
        if meta.get("assistant_index") != index or "manifest" not in meta:
            continue
        if complete is not None and bool(meta.get("complete")) != complete:
            continue
        try:
            found.append((collection, Manifest.from_json(meta["manifest"])))
        except (ValueError, TypeError, KeyError):
            log.warning("ignoring collection %s: unreadable manifest", collection.name)
    return sorted(found, key=lambda pair: pair[1].built_at, reverse=True)


def build_names(client: ClientAPI) -> set[str]:
    """The names of every build in the store, complete or not, of every index."""
    return {collection.name for collection in client.list_collections()}


def index_names(client: ClientAPI) -> list[str]:
    """The indexes of this store that have a complete build, by name."""
    names = set()
    for collection in client.list_collections():
        meta = collection.metadata or {}
        if meta.get("complete") and "manifest" in meta and isinstance(meta.get("assistant_index"), str):
            names.add(meta["assistant_index"])
    return sorted(names)


def active_build(client: ClientAPI, settings: StorageSettings) -> tuple[Collection, Manifest]:
    """The newest complete build of `settings.collection`; raises if there is none."""
    builds = _builds(client, settings.collection)
    if not builds:
        raise IndexNotFoundError(
            f"No index named '{settings.collection}' in {location(settings)}. Build it with: "
            f"assistant index --collection {settings.collection}"
        )
    return builds[0]


def find_active(client: ClientAPI, settings: StorageSettings) -> tuple[Collection, Manifest] | None:
    builds = _builds(client, settings.collection)
    return builds[0] if builds else None


def new_build(client: ClientAPI, settings: Settings, corpus_hash: str, corpus_path: str, papers: int, chunks: int) -> tuple[Collection, Manifest]:
    """Create an empty, incomplete build collection for `settings.collection`."""
    now = datetime.now(timezone.utc)
    name = f"{settings.collection}{_SEPARATOR}{now:%Y%m%dT%H%M%S%f}-{corpus_hash[:8]}"
    manifest = Manifest(
        index=settings.collection,
        collection=name,
        corpus_hash=corpus_hash,
        corpus_path=corpus_path,
        papers=papers,
        chunks=chunks,
        built_at=now.isoformat(),
        **build_settings(settings),
    )
    collection = client.create_collection(
        name,
        configuration={"hnsw": HNSW},
        metadata=_metadata(manifest, complete=False),
        embedding_function=None,
    )
    return collection, manifest


def _metadata(manifest: Manifest, complete: bool) -> dict[str, Any]:
    return {"assistant_index": manifest.index, "manifest": manifest.to_json(), "complete": complete}


def commit_build(client: ClientAPI, collection: Collection, manifest: Manifest, settings: Settings) -> None:
    """Switch readers to this build, then drop builds older than the one it replaces."""
    if collection.count() != manifest.chunks:
        raise StoreUnavailableError(
            f"Build {manifest.collection} holds {collection.count()} chunks, expected {manifest.chunks}; not switching."
        )
    collection.modify(metadata=_metadata(manifest, complete=True))
    if not settings.chroma_host:
        _write_manifest_file(settings, manifest)
    keep = {b.name for b, _ in _builds(client, manifest.index)[: 1 + _KEEP_PREVIOUS]}
    for stale, _ in _builds(client, manifest.index, complete=None):
        if stale.name not in keep:
            client.delete_collection(stale.name)
            log.info("deleted old build %s", stale.name)
    tidy(settings)


_SEGMENT_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def tidy(settings: StorageSettings) -> None:
    """Give back the disk deleted builds still hold in an embedded store: their vector folders.

    Chroma's `delete_collection` leaves each build's HNSW folder behind, so without this the store grew
    with every rebuild. SQLite's freed pages are reused by the next build's
    writes, so the database file levels off; it is not VACUUMed, which would lock out every reader (a soak
    with a rebuild every 10 s saw 1,380 failed answers in 40 s while it ran). Runs under the build lock.
    """
    if settings.chroma_host:
        return
    database = settings.index_dir / _DATABASE
    if not database.is_file():
        return
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)) as db:
            live = {row[0] for row in db.execute("SELECT id FROM segments")}
            for folder in settings.index_dir.iterdir():
                if folder.is_dir() and _SEGMENT_DIR.match(folder.name) and folder.name not in live:
                    shutil.rmtree(folder, ignore_errors=True)
                    log.info("removed the files of a deleted build: %s", folder.name)
    except sqlite3.Error as exc:  # busy: the next build tries again
        log.info("store not tidied this time (%s)", exc)


def _write_manifest_file(settings: StorageSettings, manifest: Manifest) -> None:
    """A human-readable copy of the active build's manifest beside the store."""
    text = json.dumps(asdict(manifest), indent=2, sort_keys=True)
    atomic_write(settings.index_dir / f"{manifest.index}.manifest.json", lambda tmp: tmp.write_text(text, encoding="utf-8"), prefix=".manifest-")


def abandon_build(client: ClientAPI, collection: Collection) -> None:
    """Remove a build that failed part-way; readers never saw it."""
    try:
        client.delete_collection(collection.name)
    except Exception as exc:  # the build already failed; a leftover is pruned by the next build
        log.warning("could not remove unfinished build %s: %s", collection.name, exc)


_ADAPTER_KEYS = frozenset({"_node_content", "_node_type", "doc_id", "document_id", "ref_doc_id"})


@dataclass(frozen=True)
class StoredChunk:
    """One chunk as read back from a build: its text, the metadata written with it, and its vector."""

    chunk_id: str
    text: str
    metadata: dict[str, Any]
    vector: np.ndarray


def read_chunks(collection: Collection, page: int = _PAGE) -> Iterator[StoredChunk]:
    """Every chunk of a build, in pages (a single `get` of a large collection exhausts SQLite's variable limit)."""
    offset = 0
    while True:
        got = collection.get(include=["documents", "metadatas", "embeddings"], limit=page, offset=offset)
        for chunk_id, text, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"]):
            yield StoredChunk(chunk_id, text or "", _ours(meta), np.asarray(vector, dtype=np.float32))
        if len(got["ids"]) < page:
            return
        offset += page


def _ours(metadata: Any) -> dict[str, Any]:
    """A chunk's metadata as the indexer wrote it, without the bookkeeping llama-index's adapter adds beside it
    (`_node_content` repeats the whole node, text included: a derived paper table was twice the size of a built one)."""
    return {key: value for key, value in dict(metadata or {}).items() if key not in _ADAPTER_KEYS}


def nearest(collection: Collection, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
    """The `n` chunks closest to `vector` by the HNSW index, as (id, cosine similarity), best first.

    Builds are created with cosine space, where Chroma's distance is 1 - cosine.
    """
    got = collection.query(query_embeddings=[vector.tolist()], n_results=n, include=["distances"])
    return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in zip(got["ids"][0], got["distances"][0])]


@dataclass(frozen=True)
class FetchedChunk:
    """A chunk read back by id for an answer: its text, metadata and unit vector."""

    text: str
    metadata: dict[str, Any]
    vector: np.ndarray


def fetch_chunks(collection: Collection, chunk_ids: list[str]) -> dict[str, FetchedChunk]:
    """The chunks `chunk_ids` with text, metadata and vector, in one read (the app keeps no chunk text in memory)."""
    if not chunk_ids:
        return {}
    got = collection.get(ids=chunk_ids, include=["documents", "metadatas", "embeddings"])
    return {
        chunk_id: FetchedChunk(text or "", _ours(meta), np.asarray(vector, dtype=np.float32))
        for chunk_id, text, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
    }


def write_nodes(collection: Collection, nodes: list[BaseNode]) -> None:
    """Add embedded nodes to a build through llama-index's Chroma adapter, in batches (llama-index loads only to index)."""
    from llama_index.vector_stores.chroma import ChromaVectorStore

    vector_store = ChromaVectorStore(chroma_collection=collection)
    for start in range(0, len(nodes), _WRITE_BATCH):
        vector_store.add(nodes[start : start + _WRITE_BATCH])
