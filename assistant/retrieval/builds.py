"""The open index: the newest complete build and everything derived from it, switched when a newer one lands.

A `Build` is opened once (paper table, BM25 and chunk table memory-mapped from
its saved files, `search_files.py`) and is read-only afterwards, so many threads share it. `IndexHandle` notices when
`assistant index` in another process has committed a newer build and swaps
the whole `Build` between questions; a question in flight keeps the one it
started with.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from chromadb.api.models.Collection import Collection

from assistant.errors import AssistantError, StoreUnavailableError, component_failure
from assistant.indexing import search_files as search_files
from assistant.indexing import store
from assistant.indexing.paper_table import PaperTable
from assistant.infra import memory
from assistant.models.encoders import ArrayEmbedding
from assistant.models.sentence_vectors import SentenceVectors
from assistant.retrieval.filters import Filters
from assistant.retrieval.hybrid import HybridRetriever
from assistant.settings import Settings

log = logging.getLogger(__name__)

_FILTERS_KEPT = 32  # distinct filters whose admitted papers a build remembers


@dataclass
class Build:
    """One build of an index, opened: its manifest, chunks, papers, first-stage retriever and sentence cache."""

    manifest: store.Manifest
    collection: Collection
    papers: PaperTable
    retriever: HybridRetriever
    sentences: SentenceVectors
    _admitted: dict[str, frozenset[str]] = field(default_factory=dict)

    def admitted(self, filters: Filters) -> frozenset[str]:
        """The papers `filters` admit, remembered for this build: at 100,000 papers one pass over them takes
        0.1–0.2 s, and a user's filters stay set over many questions."""
        key = filters.model_dump_json()
        found = self._admitted.get(key)
        if found is None:
            found = frozenset(filters.allowed(self.papers.scan()))
            if len(self._admitted) >= _FILTERS_KEPT:
                self._admitted.pop(next(iter(self._admitted)), None)
            self._admitted[key] = found
        return found

    @classmethod
    def open(cls, collection: Collection, manifest: store.Manifest, embedder: ArrayEmbedding, sentence_model: ArrayEmbedding, settings: Settings) -> Build:
        """Open a build from its saved files; `embedder` made its vectors, `sentence_model` scores sentences."""
        files = search_files.open_files(settings, collection)
        files.lexical.title_of = lambda paper_id: files.papers[paper_id].title if paper_id in files.papers else ""
        retriever = HybridRetriever(collection, files.lexical, files.vectors, embedder, settings.candidates, settings.rrf_k, settings.dense_weight)
        return cls(manifest, collection, files.papers, retriever, SentenceVectors(sentence_model, starts_of=files.papers.starts_of))


class IndexHandle:
    """Opens the newest complete build of `settings.collection` and follows newer ones; thread-safe."""

    def __init__(self, settings: Settings, embedder: Callable[[], ArrayEmbedding], sentence_model: Callable[[], ArrayEmbedding]) -> None:
        self.settings = settings
        self.embedder = embedder
        self.sentence_model = sentence_model
        self._lock = threading.Lock()
        self._build: Build | None = None
        self._checked_at = 0.0
        self._switching = False  # one thread opens a newer build at a time
        self._deriving: threading.Thread | None = None

    def _open(self) -> Build:
        store.check_intact(self.settings)
        with ThreadPoolExecutor(2, thread_name_prefix="load-model") as pool:  # both models load while the store opens
            embedder, sentence_model = pool.submit(self.embedder), pool.submit(self.sentence_model)
            client = store.connect(self.settings)
            collection, manifest = store.active_build(client, self.settings)
            store.check_compatible(manifest, self.settings)
            models = embedder.result(), sentence_model.result()
        try:
            return Build.open(collection, manifest, *models, self.settings)
        except AssistantError:
            raise
        except BaseException as exc:
            if not component_failure(exc):
                raise
            raise StoreUnavailableError(
                f"Index '{manifest.index}' in {store.location(self.settings)} could not be read ({exc}). {store.damaged_hint(self.settings)}"
            ) from exc

    def current(self, reopen: bool = False) -> Build:
        """The build answering now, reopened when another process committed a newer one (or when `reopen`).

        A newer build whose search files this machine lacks (server mode) has them derived in the background
        first, while every question keeps the current build. Opening it from its files happens outside the lock:
        the question that noticed it waits (seconds), every other question keeps the build it has. A newer build
        that cannot be opened is logged and tried again at the next check; the current one keeps answering.
        """
        with self._lock:
            if self._build is None or reopen:
                self._build = self._open()
                self._checked_at = time.monotonic()
                return self._build
            if self._switching or time.monotonic() - self._checked_at <= self.settings.index_check_s:
                return self._build
            self._checked_at = time.monotonic()
            self._switching = True
            build = self._build
        try:
            client = store.connect(self.settings)
            newest = store.find_active(client, self.settings)
            if newest and newest[1].collection != build.manifest.collection:
                if not search_files.ready(self.settings, newest[1].collection):
                    self._derive_later(newest[1].collection)
                    return build
                log.info("switching to new build %s", newest[1].collection)
                try:
                    opened = self._open()
                except AssistantError as exc:  # keep answering from the build that works; try again at the next check
                    log.warning("could not open the new build %s, still answering from %s: %s", newest[1].collection, build.manifest.collection, exc)
                    return build
                weakref.finalize(build, memory.release, build.manifest.chunks)  # the old build's pages go back once its last question is done
                build = opened
                with self._lock:
                    self._build = build
                search_files.prune(self.settings, store.build_names(client))  # on a machine that only serves, nothing else would
        finally:
            with self._lock:
                self._switching = False
        return build

    def _derive_later(self, name: str) -> None:
        """Derive build `name`'s search files off the question path (100k abstracts under load: minutes, longer than a
        client waits); questions keep the current build, and the first check after the files are saved switches."""
        with self._lock:
            if self._deriving is not None and self._deriving.is_alive():
                return
            self._deriving = threading.Thread(target=self._derive, args=(name,), name="derive-build-files", daemon=True)
            self._deriving.start()

    def _derive(self, name: str) -> None:
        log.info("deriving the search files of new build %s; answering from the current build meanwhile", name)
        try:
            search_files.derive(self.settings, name)
            search_files.prune(self.settings, store.build_names(store.connect(self.settings)))  # builds gone meanwhile
        except Exception as exc:  # tried again at the next check; an unforeseen failure is logged with its traceback
            log.warning("could not derive the search files of the new build %s: %s", name, exc, exc_info=not isinstance(exc, AssistantError))
