"""Hybrid retrieval as stages: candidates → fusion → (optional) rerank → the `Retrieval` an answer uses.

Dense search catches paraphrases; BM25 catches rare terms that a small
embedding model blurs. A third, tiny ranking lists the chunks that contain a
method name from the question verbatim ("MorseDet", "PRepBN"): someone who
names a method wants that paper first. Reciprocal rank fusion combines the
rankings without calibrating their scores against each other. Each paper
then appears once, represented by its best chunk, with `score` set to the
cosine similarity between the question and that chunk, a number that means
the same thing for every question and is what abstention thresholds use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from chromadb.api.models.Collection import Collection

from assistant import store
from assistant.files import NpyRows
from assistant.fusion import reciprocal_rank_fusion
from assistant.lexical import FILTERED_DEPTH_MAX, QUESTION_STOPWORDS, LexicalIndex, filtered_depth
from assistant.types import Paper

if TYPE_CHECKING:
    from assistant.encoders import ArrayEmbedding
    from assistant.index_handle import Build
    from assistant.rerank import Reranker

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "dense", "bm25"]
_SNIPPET_SENTENCES = 3
_COVERAGE_PAPERS = 3
# Filtered dense search (`HybridRetriever.nearest`): scoring an admitted chunk exactly from the build's vector file
# costs ~1.1 µs, an HNSW result 6 µs (WordLlama) to 18 µs (MiniLM), all measured at 100k chunks, so a deeper
# unfiltered search is used only while it returns at most _DEEPER_PER_CHUNK results per admitted chunk, and never
# deeper than FILTERED_DEPTH_MAX.
_DEEPER_PER_CHUNK = 0.1
RANKING_DEPTH = 10  # papers every search ranks, whatever `k`, so evaluation scores Recall@10 on the ranking an answer used


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    paper_id: str


@dataclass
class Query:
    """A question encoded once for every stage: its vector, its BM25 tokens and its topic words."""

    text: str
    vector: np.ndarray
    tokens: Any
    terms: set[str]


@dataclass
class Retrieval:
    """What one search found: the `k` papers an answer is written from, and the deeper ranking they head."""

    query: str
    papers: list[Paper]
    coverage: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    ranking: list[str] = field(default_factory=list)  # paper ids, best first, at least as deep as `papers`
    named: set[str] = field(default_factory=set)  # papers the question names by a name only they use
    reader: dict[str, float] = field(default_factory=dict)  # paper id -> the reader's cosine, for the candidates it read


class HybridRetriever:
    """The first stage over one build: dense, BM25 and exact-name candidates, fused into papers.

    Read-only after construction, so one instance serves many threads.
    """

    def __init__(
        self, collection: Collection, lexical: LexicalIndex, vectors: NpyRows, embed_model: ArrayEmbedding, candidates: int = 50, rrf_k: int = 60,
        dense_weight: float = 1.0,
    ) -> None:
        self.collection = collection
        self.lexical = lexical
        self.vectors = vectors
        self.embed_model = embed_model
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.dense_weight = dense_weight
        self.row = {chunk_id: row for row, chunk_id in enumerate(lexical.chunk_ids)}

    def encode(self, text: str) -> Query:
        """Embed and tokenize the question once per search."""
        vector = np.asarray(self.embed_model.get_query_embedding(text), dtype=np.float32)
        tokens = self.lexical.tokenize([text], stopwords=QUESTION_STOPWORDS)
        terms = {word for word, index in tokens.vocab.items() if tokens.ids and index in tokens.ids[0]}
        return Query(text, vector, tokens, terms)

    def rankings(self, query: Query, mode: Mode, timings: dict[str, float], allowed: AbstractSet[str] | None = None) -> tuple[list[tuple[float, list[str]]], dict[str, float]]:
        """Weighted chunk rankings for fusion (of `allowed` papers only, when given), and the cosines the dense search knows."""
        n = min(self.candidates, len(self.lexical))
        ids = self.lexical.chunk_ids
        rankings: list[tuple[float, list[str]]] = []
        cosine: dict[str, float] = {}
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            dense = self.nearest(query.vector, n, allowed)
            cosine.update(dense)
            rankings.append((self.dense_weight, [chunk_id for chunk_id, _ in dense]))
            timings["dense"] = time.perf_counter() - t
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            rankings.append((1.0, [ids[row] for row in self.lexical.search(query.tokens, n, allowed)]))
            # a rare method name the question spells out outweighs everything else: that paper comes first
            rankings.append((1.0 + self.dense_weight, [ids[row] for row in self.lexical.exact_names(query.text, allowed)]))
            timings["bm25"] = time.perf_counter() - t
        return rankings, cosine

    def nearest(self, vector: np.ndarray, n: int, allowed: AbstractSet[str] | None) -> list[tuple[str, float]]:
        """The `n` nearest chunks of the `allowed` papers, however many the filters admit.

        Chroma's own filter (`$in` on paper ids) costs ~100 ms a search at 100,000 chunks whatever the list's
        length, and fails past SQLite's 32,766 variables. So the admitted chunks are either scored exactly from
        the build's vector file, or, when that is the dearer way (many admitted), found by an unfiltered search
        deep enough to hold ~2n of theirs, kept to theirs (once it holds n, those are their n nearest; exact
        scoring again if it falls short).
        """
        if allowed is None:
            return store.nearest(self.collection, vector, n)
        rows = self.lexical.rows_of(allowed)
        if not len(rows):
            return []
        depth = filtered_depth(n, len(rows), len(self.lexical))
        if depth <= min(FILTERED_DEPTH_MAX, _DEEPER_PER_CHUNK * len(rows)):
            hits = [hit for hit in store.nearest(self.collection, vector, depth) if self.lexical.chunk_papers[self.row[hit[0]]] in allowed]
            if len(hits) >= n or depth == len(self.lexical):
                return hits[:n]
        return self.exact(vector, rows, n)

    def exact(self, vector: np.ndarray, rows: Sequence[int] | np.ndarray, n: int) -> list[tuple[str, float]]:
        """The `n` chunks of `rows` closest to `vector` by exact cosine, best first.

        `einsum`, not `@`: for thousands of rows OpenBLAS splits a product over its threads, which then spin for
        milliseconds and take both cores from the next question's embedding (filtered searches at 100k: 79 → 41 ms).
        """
        order, matrix = self.vectors.take(rows)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * np.linalg.norm(vector)
        cosines = np.einsum("ij,j->i", matrix, vector) / (norms + 1e-12)
        best = np.argsort(-cosines, kind="stable")[:n]
        return [(self.lexical.chunk_ids[int(order[i])], float(cosines[i])) for i in best]

    def papers(self, rankings: list[tuple[float, list[str]]], depth: int) -> list[Chunk]:
        """Fuse chunk rankings; each paper once, as its best chunk (id and paper, no text), at most `depth` papers."""
        best: dict[str, Chunk] = {}
        for chunk_id in reciprocal_rank_fusion(rankings, self.rrf_k):
            paper_id = self.lexical.chunk_papers[self.row[chunk_id]]
            best.setdefault(paper_id, Chunk(chunk_id, paper_id))
            if len(best) == depth:
                break
        return list(best.values())


def snippet(build: Build, query_vector: np.ndarray, text: str) -> str:
    """The run of up to three consecutive sentences of `text` that best matches the query."""
    sentences, vectors = build.sentences.get(text)
    if len(sentences) <= _SNIPPET_SENTENCES:
        return text
    scores = vectors @ query_vector
    windows = [float(np.mean(scores[i : i + _SNIPPET_SENTENCES])) for i in range(len(sentences) - _SNIPPET_SENTENCES + 1)]
    start = int(np.argmax(windows))
    return " ".join(sentences[start : start + _SNIPPET_SENTENCES])


def retrieve(
    build: Build, text: str, k: int, mode: Mode = "hybrid", depth: int = 10, reranker: Reranker | None = None, rerank_depth: int = 10,
    allowed: AbstractSet[str] | None = None, settled: Callable[[float, float], bool] | None = None,
) -> Retrieval:
    """The pipeline: encode → candidates → fusion → rerank (if given) → the top `k` with snippets and cosines.

    `ranking` keeps the order to `max(k, depth)` papers, so an evaluation scores what the answer saw.
    `allowed`: search only these papers (`filters.Filters.allowed`). `settled(coverage, best cosine)` of the
    first stage: true when the question uses the abstracts' own words, or it names the best paper; then
    the first stage's order stands and the reranker is not asked (~25 ms, and no model load, saved).
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    retriever = build.retriever
    query = retriever.encode(text)
    timings["embed"] = time.perf_counter() - started
    rankings, cosine = retriever.rankings(query, mode, timings, allowed)
    named = retriever.lexical.named_papers(text) if mode != "dense" else set()
    if allowed is not None:
        named &= allowed
    chunks = retriever.papers(rankings, max(k, depth, rerank_depth if reranker else 0))
    reader: dict[str, float] = {}
    if reranker is not None and chunks and settled is not None:
        best = chunks[0]
        first_coverage = retriever.lexical.coverage(query.terms, (c.paper_id for c in chunks[:_COVERAGE_PAPERS]))
        if best.paper_id in named or settled(first_coverage, cosine.get(best.chunk_id, 0.0)):
            reranker = None
    if reranker is not None:
        t = time.perf_counter()
        head = chunks[: max(k, rerank_depth)]
        try:
            order, scores = reranker.rerank(text, [build.papers[c.paper_id].abstract for c in head])
        except Exception as exc:  # a broken optional model must not stop answers: the first stage's order stands
            log.warning("the reader is unavailable (%s); answering from the first stage's ranking", exc)
        else:
            reader = {c.paper_id: round(float(s), 4) for c, s in zip(head, scores)}
            kept = [i for i, c in enumerate(head) if c.paper_id in named]  # a paper the question names stays first
            chunks = [head[i] for i in kept + [i for i in order if i not in kept]] + chunks[len(head) :]
        timings["rerank"] = time.perf_counter() - t
    top = chunks[:k]
    stored = store.fetch_chunks(build.collection, [c.chunk_id for c in top])  # texts and vectors of these few only
    sentence_vector = build.sentences.query(text)  # snippets are chosen in the sentence model's space
    papers = []
    for chunk in top:
        found = stored[chunk.chunk_id]
        if found.metadata.get("chunk_starts"):
            build.sentences.note_starts(found.text, found.metadata["chunk_starts"])
        score = cosine[chunk.chunk_id] if chunk.chunk_id in cosine else float(found.vector @ query.vector)
        papers.append(build.papers[chunk.paper_id].with_match(snippet(build, sentence_vector, found.text), round(score, 4)))
    coverage = retriever.lexical.coverage(query.terms, (p.paper_id for p in papers[:_COVERAGE_PAPERS]))
    timings["retrieve"] = time.perf_counter() - started
    return Retrieval(query=text, papers=papers, coverage=coverage, timings=timings, ranking=[c.paper_id for c in chunks], named=named, reader=reader)
