"""Build an index: corpus → chunks → embeddings → a new Chroma build, switched to atomically."""

from __future__ import annotations

import fcntl
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from tqdm.auto import tqdm

from assistant.errors import AssistantError, IndexMismatchError, StoreUnavailableError, component_failure
from assistant.indexing import search_files as search_files
from assistant.indexing import store
from assistant.infra import memory
from assistant.infra.files import NpyRows
from assistant.infra.loading import Lazy
from assistant.ingest.chunking import chunk_papers
from assistant.ingest.corpus import Corpus, read_corpus
from assistant.ingest.metadata import MetadataReport, attach_metadata
from assistant.models.embeddings import IndexEmbedding, VectorCache, cache_file, load_embedding
from assistant.models.encoders import abstract_reader, has_amx, reader_precision
from assistant.models.reader import reader_for, too_big, wanted
from assistant.settings import SAMPLE_CORPUS, SAMPLE_FACTS, Settings

log = logging.getLogger(__name__)

_BATCH = 500  # abstracts chunked, embedded and written at a time
_RELEASE_EVERY = 20  # batches between handing freed heap pages back (~0.1 s each at 100,000 abstracts)
_BAR_STEP = 64  # chunks embedded between moves of the progress bar (~2 s of MiniLM)
_STORE_SHARE = 0.1  # of an abstract's time in a build, writing it to the store (100,000: ~2 min, against ~20 to embed them)
# How many abstracts MiniLM embeds in the time the reader embeds one, by CPU (`python -m benchmarks.bench_index
# --models`): with AMX, 43 a second against 5.8 (float32) and 14.6 (bfloat16), int8 under onnxruntime 15.9; with
# AVX512-BF16 alone (an AMD EPYC), 54 against 3.7, 7.7 and 12.8 (int8 under OpenVINO)
_READER_COST = {True: {"float32": 7, "bfloat16": 3, "int8": 3}, False: {"float32": 15, "bfloat16": 7, "int8": 4}}


@dataclass
class BuildResult:
    """What `build_index` did, for the CLI and benchmarks to report."""

    manifest: store.Manifest
    read: str  # what reading the corpus found (`Corpus.summary`)
    built: bool
    embedded: int
    seconds: float
    metadata: MetadataReport | None = None
    set_aside: Path | None = None  # where a damaged store was moved before this build
    reader_off_above: int | None = None  # RERANK_MAX_PAPERS, where the index is too big for RERANKER=auto to read it

    def summary(self) -> str:
        """What was built, and that the reader is off if the index's size turned it off: answers at that size come from
        the first stage alone, which a user should hear from the build rather than find in the answers."""
        if not self.built:
            done = f"Index '{self.manifest.index}' is up to date ({self.manifest.papers} papers, {self.manifest.chunks} chunks)."
        else:
            moved = f"The damaged store was moved to {self.set_aside}. " if self.set_aside else ""
            done = (
                f"{moved}Built index '{self.manifest.index}': {self.manifest.papers} papers, {self.manifest.chunks} chunks, "
                f"{self.embedded} newly embedded, in {self.seconds:.1f} s."
            )
        if self.reader_off_above is None:
            return done
        return (
            f"{done} The reader (second stage) is off for indexes of more than {self.reader_off_above:,} papers "
            "(RERANK_MAX_PAPERS): answers come from the first stage alone. RERANKER=mpnet turns it on, after it embeds "
            "every abstract once (about 0.06 s each where the CPU multiplies bfloat16, 0.17 s elsewhere)."
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
    reader_vectors: bool = True,
) -> BuildResult:
    """Index `corpus_path` (default `settings.corpus_path`) unless an identical build is active.

    The corpus (and the metadata file, if any) is read and validated in full
    before the store is touched, so a bad file changes nothing. `reader_vectors`:
    also embed every abstract for the reader (RERANKER), so no question waits for it.
    """
    started = time.perf_counter()
    path = Path(corpus_path or settings.corpus_path)
    corpus = read_corpus(path)
    memory.release(len(corpus.papers))  # reading left its parsing garbage resident (~150 MB at 100,000 abstracts)
    log.info("%s", corpus.summary())
    metadata = None
    metadata_path = metadata_path or settings.metadata_path
    if metadata_path is None and path.resolve() == SAMPLE_CORPUS.resolve() and SAMPLE_FACTS.is_file():
        metadata_path = SAMPLE_FACTS  # the shipped sample's titles, authors and links
    if metadata_path:
        corpus.papers, metadata = attach_metadata(corpus.papers, metadata_path)
        log.info("%s", metadata.summary())
    reader_off_above = settings.rerank_max_papers if too_big(settings, len(corpus.papers)) else None  # before the build takes them
    set_aside = store.set_aside(settings) if rebuild and store.damage(settings) else None
    store.check_intact(settings)
    client = store.connect(settings)
    try:
        result = _build(settings, client, corpus, path, rebuild, progress, metadata, started, reader_vectors)
    except OSError as exc:  # the embedding cache or a lock file could not be written
        raise StoreUnavailableError(
            f"Building the index failed writing {exc.filename or settings.index_dir} ({exc.strerror or exc}); {_STILL_ANSWERS}"
        ) from exc
    except StoreUnavailableError:
        store.check_intact(settings)  # a store found damaged while writing is named so, not blamed on the disk
        raise
    return replace(result, set_aside=set_aside, reader_off_above=reader_off_above)


def _build(
    settings: Settings, client: ClientAPI, corpus: Corpus, path: Path, rebuild: bool, progress: bool, metadata: MetadataReport | None,
    started: float, reader_vectors: bool,
) -> BuildResult:
    """The build itself, under the lock: the reader's vectors (cached by text, so an unchanged index gets them too),
    then, unless the active build holds this corpus already, embed (cached), write a new build and switch to it."""
    with _build_lock(settings):
        _remove_leftovers(settings)
        abstracts = [paper.abstract for paper in corpus.papers]
        precision = reader_precision(settings.reader_precision)
        model = Lazy(lambda: abstract_reader(settings.model_dir, precision))  # loaded only if a vector is missing
        reader = reader_for(settings, model.get) if reader_vectors and wanted(settings, len(abstracts)) else None
        to_read = reader.missing(abstracts) if reader else 0
        current = _up_to_date(client, settings, corpus) if not rebuild else None
        cost = _READER_COST[has_amx()][precision]
        with _progress_bar(len(abstracts), to_read * cost, current is None, progress) as bar:
            if reader:  # also keeps the shipped vectors in the cache
                reader.warm(abstracts, embedded=lambda n: _advance(bar, n * cost))
            del model, reader
            memory.release(to_read)  # the reader's weights and working memory, before MiniLM and the writer need theirs
            if current is not None:
                return BuildResult(current, corpus.summary(), False, 0, time.perf_counter() - started, metadata)
            return _write_build(settings, client, corpus, path, bar, metadata, started)


def _up_to_date(client: ClientAPI, settings: Settings, corpus: Corpus) -> store.Manifest | None:
    """The active build's manifest if it holds exactly this corpus, made the way these settings make one."""
    current = store.find_active(client, settings)
    if current is None:
        return None
    _, manifest = current
    try:
        store.check_compatible(manifest, settings)
    except IndexMismatchError:
        return None
    return manifest if manifest.corpus_hash == corpus.content_hash else None


def _progress_bar(papers: int, reading: int, writing: bool, progress: bool) -> tqdm:
    """One bar for the whole build, in units of MiniLM's time to embed an abstract (`reading`: the reader's work in
    those units), so its ETA holds across both models."""
    work = reading + (papers if writing else 0)
    return tqdm(
        total=work, desc=f"Indexing {papers:,} abstracts", disable=not progress or work == 0, smoothing=0.05,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} elapsed, {remaining} left",
    )


def _advance(bar: tqdm, work: float) -> None:
    """Move the bar by `work`, never past its end: the shares it is moved by are floats, whose sum may pass the total by
    a rounding error (tqdm then warns and shows "-00:00 left")."""
    bar.update(max(0.0, min(work, bar.total - bar.n)))


def _write_build(
    settings: Settings, client: ClientAPI, corpus: Corpus, path: Path, bar: tqdm, metadata: MetadataReport | None, started: float,
) -> BuildResult:
    """Embed (cached) and write a new build of `corpus`, then switch to it; a failure leaves the active build as it was.

    Two passes: the search files (BM25, the paper table, the vectors) first, then the store. Chroma holds a build's
    vectors in native memory it never hands back (~355 MB at 100,000 abstracts), and BM25's arrays need ~220 MB
    for a moment: built after the store was written, they came on top of it (1,112 MB at 100,000 abstracts).
    """
    cache_path = cache_file(settings.cache_dir, settings.embed_model)
    embed_model = load_embedding(settings.embed_model, settings.model_dir, settings.embed_batch_size, cache_path, private=True,
                                 shipped=settings.shipped_vectors_for(cache_path))
    cache = embed_model.embeddings_cache
    cached_before = cache.count()

    read = corpus.summary()
    collection, manifest = store.new_build(client, settings, corpus.content_hash, str(path), len(corpus.papers), chunks=0)
    files = search_files.Writer(settings, collection.name)
    try:
        chunks = _embed_batches(settings, corpus, embed_model, files, bar)
        del embed_model  # its model and onnxruntime's buffers (MiniLM: ~200 MB) go before BM25 is built
        cache.save()
        files.finish()  # before the switch: readers of the new build find its files
        _write_batches(settings, collection, corpus, files.vectors(), bar)
        manifest = replace(manifest, chunks=chunks)
        store.commit_build(client, collection, manifest, settings)
    except BaseException as exc:
        files.discard()
        store.abandon_build(client, collection)
        _keep_vectors(cache)
        if isinstance(exc, AssistantError) or not component_failure(exc):
            raise
        raise StoreUnavailableError(
            f"Writing the new build to {store.location(settings)} failed ({type(exc).__name__}: {exc}); {_STILL_ANSWERS}"
        ) from exc
    search_files.prune(settings, store.build_names(client))
    embedded = cache.count() - cache.from_shipped - cached_before
    return BuildResult(manifest, read, True, embedded, time.perf_counter() - started, metadata)


def _embed_batches(settings: Settings, corpus: Corpus, embed_model: IndexEmbedding, files: search_files.Writer, bar: tqdm) -> int:
    """Chunk and embed (cached) the corpus `_BATCH` abstracts at a time into the search files; returns the number of chunks.

    Batches keep memory flat whatever the corpus size: 100,000 abstracts never exist as nodes or Python float
    lists all at once (building them whole peaked at 3.2 GB).
    """
    chunks = 0
    for number, start in enumerate(range(0, len(corpus.papers), _BATCH), 1):
        if number % _RELEASE_EVERY == 0:
            memory.release(_BATCH * _RELEASE_EVERY)  # the embedded batches' chunks, freed but still resident
        batch = corpus.papers[start : start + _BATCH]
        nodes = chunk_papers(batch, settings.chunk_size, settings.chunk_overlap)
        for first in range(0, len(nodes), _BAR_STEP):  # the bar moves every few seconds, not once a batch
            part = nodes[first : first + _BAR_STEP]
            for node, vector in zip(part, embed_model.get_text_embedding_batch([n.get_content(metadata_mode="embed") for n in part])):
                node.embedding = vector
            _advance(bar, len(batch) * (1 - _STORE_SHARE) * len(part) / len(nodes))
        files.add([(node.node_id, node.text, node.metadata, node.embedding) for node in nodes])
        embed_model.embeddings_cache.save_if_due()  # a long build killed half-way keeps most of its vectors
        chunks += len(nodes)
    return chunks


def _write_batches(settings: Settings, collection: Collection, corpus: Corpus, vectors: NpyRows, bar: tqdm) -> None:
    """Chunk the corpus again and write it to the store `_BATCH` abstracts at a time, each chunk with its vector from the
    search files (rows in build order). Each batch of papers is dropped once written (`Corpus.take_batches`)."""
    row = 0
    for number, batch in enumerate(corpus.take_batches(_BATCH), 1):
        if number % _RELEASE_EVERY == 0:
            memory.release(_BATCH * _RELEASE_EVERY)  # the written batches' papers and chunks, freed but still resident
        nodes = chunk_papers(batch, settings.chunk_size, settings.chunk_overlap)
        for node, vector in zip(nodes, vectors.read(row, row + len(nodes))):
            node.embedding = vector.tolist()
        row += len(nodes)
        store.write_nodes(collection, nodes)
        _advance(bar, len(batch) * _STORE_SHARE)


def _keep_vectors(cache: VectorCache) -> None:
    """Save what a failed or interrupted build embedded, so the next one starts from there (unless the disk is full)."""
    try:
        cache.save()
    except OSError as exc:
        log.warning("could not save the embedding cache (%s)", exc)


def ensure_index(settings: Settings, progress: bool = True) -> BuildResult | None:
    """Build the default corpus if no index of this name exists; leave any existing build alone.

    Without the reader's vectors: `assistant serve` makes them in the background after the UI is up (`Assistant.warm`),
    so a first start shows the UI ~1 minute sooner; a question asked meanwhile embeds its ten candidates itself (~1 s).
    """
    store.check_intact(settings)
    if store.find_active(store.connect(settings), settings):
        return None
    return build_index(settings, progress=progress, reader_vectors=False)
