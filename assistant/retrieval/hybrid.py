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

import re
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from chromadb.api.models.Collection import Collection

from assistant.indexing import store
from assistant.indexing.lexical import FILTERED_DEPTH_MAX, LexicalIndex, filtered_depth
from assistant.infra.files import NpyRows
from assistant.ingest.papers import Paper
from assistant.retrieval.fusion import reciprocal_rank_fusion
from assistant.text.nouns import only_noun
from assistant.text.words import STOPWORDS

if TYPE_CHECKING:
    from assistant.models.encoders import ArrayEmbedding

Mode = Literal["hybrid", "dense", "bm25"]
_LETTERS = re.compile(r"[A-Za-z]+")
_QUESTION_STOPWORDS = sorted(STOPWORDS)  # dropped from a question before BM25, in a fixed order
COVERAGE_PAPERS = 3  # papers whose abstracts lexical coverage is measured over, for a question about several (else the best)
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
    unknown: list[str] = field(default_factory=list)  # names the question uses that no paper of the build uses
    unused_nouns: dict[str, float] = field(default_factory=dict)  # nouns no chunk uses -> their share of the topic words' weight


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
        tokens = self.lexical.tokenize([self.lexical.spelled_out(text)], stopwords=_QUESTION_STOPWORDS)
        return Query(text, vector, tokens, self.terms(text))

    def terms(self, text: str) -> set[str]:
        """The topic words (stems) of `text` that lexical coverage weighs, without embedding it."""
        return self.terms_of([text])[0]

    def terms_of(self, texts: list[str]) -> list[set[str]]:
        """`terms` of each of `texts`, tokenized in one call (sixty titles: ~0.6 ms, against ~2.4 ms one by one)."""
        tokens = self.lexical.tokenize(texts, stopwords=_QUESTION_STOPWORDS)
        words = {index: word for word, index in tokens.vocab.items()}
        return [{words[index] for index in ids} for ids in tokens.ids]

    def unused_nouns(self, text: str, terms: set[str]) -> dict[str, float]:
        """The words of `text` that can only be nouns and that no chunk uses ("elevator", "lyrics"), each with its share
        of the IDF weight of the question's topic words `terms`, heaviest first: things the question asks about that
        the corpus never names. A stem some other word of the question also gives ("cost" / "costly") is no noun."""
        unused = {term for term in terms if not self.lexical.uses(term)}
        if not unused:
            return {}
        words = list(dict.fromkeys(_LETTERS.findall(text)))
        nouns: dict[str, str] = {}
        others: set[str] = set()
        for word, found in zip(words, self.terms_of(words)):
            for term in found & unused:
                if only_noun(word):
                    nouns.setdefault(term, word)
                else:
                    others.add(term)
        weight = self.lexical.weights(terms)
        total = sum(weight.values())
        shares = {word: weight[term] / total for term, word in nouns.items() if term not in others}
        return dict(sorted(shares.items(), key=lambda item: -item[1]))

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
        milliseconds and take both cores from the next question's embedding.
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
