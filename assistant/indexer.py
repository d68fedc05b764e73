"""Build an index: corpus → chunks → embeddings → a new Chroma build, switched to atomically."""

from __future__ import annotations

import fcntl
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chromadb.api import ClientAPI

from assistant import store
from assistant.chunking import chunk_papers
from assistant.corpus import Corpus, read_corpus
from assistant.embeddings import load_embedding
from assistant.errors import AssistantError, IndexMismatchError, StoreUnavailableError, component_failure
from assistant.metadata import MetadataReport, attach_metadata
from assistant.rerank import Reranker, wanted
from assistant.rerank import cache_file as rerank_cache_file
from assistant.settings import SAMPLE_CORPUS, SAMPLE_FACTS, Settings

log = logging.getLogger(__name__)


@dataclass
class BuildResult:
    """What `build_index` did, for the CLI and benchmarks to report."""

    manifest: store.Manifest
    corpus: Corpus
    built: bool
    embedded: int
    seconds: float
    metadata: MetadataReport | None = None

    def summary(self) -> str:
        if not self.built:
            return f"Index '{self.manifest.index}' is up to date ({self.manifest.papers} papers, {self.manifest.chunks} chunks)."
        return (
            f"Built index '{self.manifest.index}': {self.manifest.papers} papers, {self.manifest.chunks} chunks, "
            f"{self.embedded} newly embedded, in {self.seconds:.1f} s."
        )


@contextmanager
def _build_lock(settings: Settings) -> Iterator[None]:
    """One build at a time per embedded store; a Chroma server needs no file lock here."""
    if settings.chroma_host:
        yield
        return
    settings.index_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.index_dir / ".build.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise AssistantError(f"Another build of the index in {settings.index_dir} is running; wait for it to finish.") from exc
        yield


_STILL_ANSWERS = "the previous index still answers. Is the disk full? Free space and run the build again."


def _remove_leftovers(settings: Settings) -> None:
    """Temporary files a killed build left (a cache or manifest half-written); only builds write them, under the lock."""
    for folder in (settings.cache_dir, settings.index_dir):
        for leftover in folder.glob(".*.tmp") if folder.is_dir() else []:
            leftover.unlink(missing_ok=True)
            log.info("removed %s, left by an interrupted build", leftover)


def build_index(
    settings: Settings,
    corpus_path: Path | None = None,
    rebuild: bool = False,
    progress: bool = True,
    metadata_path: Path | None = None,
) -> BuildResult:
    """Index `corpus_path` (default `settings.corpus_path`) unless an identical build is active.

    The corpus (and the metadata file, if any) is read and validated in full
    before the store is touched, so a bad file changes nothing.
    """
    started = time.perf_counter()
    path = Path(corpus_path or settings.corpus_path)
    corpus = read_corpus(path)
    log.info("%s", corpus.summary())
    metadata = None
    metadata_path = metadata_path or settings.metadata_path
    if metadata_path is None and path.resolve() == SAMPLE_CORPUS.resolve() and SAMPLE_FACTS.is_file():
        metadata_path = SAMPLE_FACTS  # the shipped sample's titles, authors and links
    if metadata_path:
        corpus.papers, metadata = attach_metadata(corpus.papers, metadata_path)
        log.info("%s", metadata.summary())
    client = store.connect(settings)
    try:
        return _build(settings, client, corpus, path, rebuild, progress, metadata, started)
    except OSError as exc:  # the embedding cache or a lock file could not be written
        raise StoreUnavailableError(
            f"Building the index failed writing {exc.filename or settings.index_dir} ({exc.strerror or exc}); {_STILL_ANSWERS}"
        ) from exc


def _build(
    settings: Settings, client: ClientAPI, corpus: Corpus, path: Path, rebuild: bool, progress: bool, metadata: MetadataReport | None,
    started: float,
) -> BuildResult:
    """The build itself, under the lock: unchanged → nothing; else embed (cached), write a new build, switch to it."""
    with _build_lock(settings):
        _remove_leftovers(settings)
        current = store.find_active(client, settings)
        if current and not rebuild:
            _, manifest = current
            try:
                store.check_compatible(manifest, settings)
                up_to_date = manifest.corpus_hash == corpus.content_hash
            except IndexMismatchError:
                up_to_date = False
            if up_to_date:
                return BuildResult(manifest, corpus, False, 0, time.perf_counter() - started, metadata)

        nodes = chunk_papers(corpus.papers, settings.chunk_size, settings.chunk_overlap)
        cache_path = settings.cache_dir / f"embeddings-{settings.embed_model}.json"
        embed_model = load_embedding(settings.embed_model, settings.embed_batch_size, cache_path)
        cached_before = embed_model.embeddings_cache.count()
        vectors = embed_model.get_text_embedding_batch([n.get_content(metadata_mode="embed") for n in nodes], show_progress=progress)
        for node, vector in zip(nodes, vectors):
            node.embedding = vector
        embed_model.embeddings_cache.save()
        embedded = embed_model.embeddings_cache.count() - cached_before
        if wanted(settings.reranker, len(corpus.papers), settings.rerank_min_papers):
            Reranker(rerank_cache_file(settings.cache_dir)).warm([paper.abstract for paper in corpus.papers], progress)

        collection, manifest = store.new_build(
            client, settings, corpus.content_hash, str(path), len(corpus.papers), len(nodes)
        )
        try:
            store.write_nodes(collection, nodes, progress)
            store.commit_build(client, collection, manifest, settings)
        except BaseException as exc:
            store.abandon_build(client, collection)
            if isinstance(exc, AssistantError) or not component_failure(exc):
                raise
            raise StoreUnavailableError(
                f"Writing the new build to {store.location(settings)} failed ({type(exc).__name__}: {exc}); {_STILL_ANSWERS}"
            ) from exc
    return BuildResult(manifest, corpus, True, embedded, time.perf_counter() - started, metadata)


def ensure_index(settings: Settings, progress: bool = True) -> BuildResult | None:
    """Build the default corpus if no index of this name exists; leave any existing build alone."""
    if store.find_active(store.connect(settings), settings):
        return None
    return build_index(settings, progress=progress)
