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

import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import bm25s
import numpy as np
import Stemmer
from chromadb.api.models.Collection import Collection

from assistant import store
from assistant.fusion import reciprocal_rank_fusion
from assistant.types import Paper

if TYPE_CHECKING:
    from assistant.encoders import ArrayEmbedding
    from assistant.index_handle import Build
    from assistant.rerank import Reranker

Mode = Literal["hybrid", "dense", "bm25"]
# A name-like token: an upper-case letter or digit after the first character (PRepBN, GPT-4, MorseDet).
_NAME = re.compile(r"(?<![\w-])[A-Za-z][a-z]*[A-Z0-9][\w-]*")
_RARE_NAME_CHUNKS = 5
_SNIPPET_SENTENCES = 3
_COVERAGE_PAPERS = 3
RANKING_DEPTH = 10  # papers every search ranks, whatever `k`, so evaluation scores Recall@10 on the ranking an answer used
# Words that every question about papers uses and that say nothing about the topic.
QUESTION_STOPWORDS = sorted(
    set(bm25s.stopwords.STOPWORDS_EN)
    | {"paper", "papers", "work", "works", "study", "studies", "research", "propose", "proposes", "proposed",
       "method", "methods", "approach", "approaches", "technique", "techniques", "there", "any", "which", "what",
       "how", "does", "do", "did", "show", "shows", "new", "novel", "use", "uses", "using", "used", "way", "ways"}
)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    paper_id: str
    text: str


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


def _singular(name: str) -> str:
    """An acronym's plural is the same name: "NeRFs" and "LLMs" find "NeRF" and "LLM"."""
    return name[:-1] if len(name) > 3 and name.endswith("s") and name[-2].isupper() else name


def names_in(text: str) -> list[str]:
    """The name-like tokens of `text` ("TSLANet", "CIFAR-10"), plurals as singulars, sorted: the same ties every run."""
    return sorted({_singular(name) for name in _NAME.findall(text)})


class Lexicon:
    """How rare each stemmed word is in a build, and which words each paper uses."""

    def __init__(self, chunks: list[Chunk], tokenized: Any) -> None:
        words = {index: word for word, index in tokenized.vocab.items()}
        frequency = Counter(words[i] for doc in tokenized.ids for i in set(doc))
        self.paper_words: dict[str, set[str]] = {}
        for chunk, doc in zip(chunks, tokenized.ids):
            self.paper_words.setdefault(chunk.paper_id, set()).update(words[i] for i in doc)
        self.idf = {word: math.log(1 + (len(chunks) - f + 0.5) / (f + 0.5)) for word, f in frequency.items()}
        self.unseen_idf = math.log(1 + (len(chunks) + 0.5) / 0.5)

    def coverage(self, terms: set[str], paper_ids: Iterable[str]) -> float:
        """Share of the question's topic words (IDF-weighted) found in the best-covering paper.

        Words the corpus never uses weigh the most: a question about
        "deepfake detection" over a corpus without "deepfake" scores low, however
        close its embedding happens to fall to some abstract.
        """
        paper_ids = list(paper_ids)
        if not terms or not paper_ids:
            return 0.0
        weight = {t: self.idf.get(t, self.unseen_idf) for t in terms}
        total = sum(weight.values())
        return max(sum(w for t, w in weight.items() if t in self.paper_words[pid]) / total for pid in paper_ids)


class HybridRetriever:
    """The first stage over one build: dense, BM25 and exact-name candidates, fused into papers.

    Read-only after construction, so one instance serves many threads.
    """

    def __init__(self, collection: Collection, chunks: list[Chunk], embed_model: ArrayEmbedding, candidates: int = 50, rrf_k: int = 60, dense_weight: float = 1.0) -> None:
        self.collection = collection
        self.chunks = chunks
        self.embed_model = embed_model
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.dense_weight = dense_weight
        self.row = {chunk.chunk_id: row for row, chunk in enumerate(chunks)}
        self._stemmer = Stemmer.Stemmer("english")
        self._stemmer_lock = threading.Lock()  # PyStemmer objects are not thread-safe
        tokenized = self._tokenize([c.text for c in chunks])
        self.bm25 = bm25s.BM25()
        self.bm25.index(tokenized, show_progress=False)
        self.lexicon = Lexicon(chunks, tokenized)
        self._names: dict[str, list[int]] = {}
        for row, chunk in enumerate(chunks):
            for name in names_in(chunk.text):
                self._names.setdefault(name, []).append(row)

    def _tokenize(self, texts: list[str], stopwords: list[str] | str = "en") -> Any:
        with self._stemmer_lock:
            return bm25s.tokenize(texts, stopwords=stopwords, stemmer=self._stemmer, show_progress=False, return_ids=True)

    def encode(self, text: str) -> Query:
        """Embed and tokenize the question once per search."""
        vector = np.asarray(self.embed_model.get_query_embedding(text), dtype=np.float32)
        tokens = self._tokenize([text], stopwords=QUESTION_STOPWORDS)
        terms = {word for word, index in tokens.vocab.items() if tokens.ids and index in tokens.ids[0]}
        return Query(text, vector, tokens, terms)

    def _bm25(self, tokens: Any, n: int, allowed: set[str] | None) -> list[str]:
        if not tokens.ids or not tokens.ids[0]:
            return []
        mask = None if allowed is None else np.fromiter((c.paper_id in allowed for c in self.chunks), dtype=np.float32, count=len(self.chunks))
        docs, scores = self.bm25.retrieve(tokens, k=min(n, len(self.chunks)), show_progress=False, n_threads=1, weight_mask=mask)
        return [self.chunks[int(d)].chunk_id for d, s in zip(docs[0], scores[0]) if s > 0]

    def _exact_names(self, query: str, allowed: set[str] | None) -> list[str]:
        """Chunks containing a rare name-like token of the query, those matching most names first."""
        hits: Counter[int] = Counter()
        for name in names_in(query):
            rows = self._names.get(name, [])
            if len(rows) <= _RARE_NAME_CHUNKS:
                hits.update(row for row in rows if allowed is None or self.chunks[row].paper_id in allowed)
        return [self.chunks[row].chunk_id for row, _ in hits.most_common()]

    def named_papers(self, query: str) -> set[str]:
        """Papers the question names: each is the only paper using some name-like token of the query ("TSLANet")."""
        named: set[str] = set()
        for name in names_in(query):
            papers = {self.chunks[row].paper_id for row in self._names.get(name, [])}
            if len(papers) == 1:
                named |= papers
        return named

    def rankings(self, query: Query, mode: Mode, timings: dict[str, float], allowed: set[str] | None = None) -> tuple[list[tuple[float, list[str]]], dict[str, float]]:
        """Weighted chunk rankings for fusion (of `allowed` papers only, when given), and the cosines the dense search knows."""
        n = min(self.candidates, len(self.chunks))
        rankings: list[tuple[float, list[str]]] = []
        cosine: dict[str, float] = {}
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            dense = store.nearest(self.collection, query.vector, n, allowed)
            cosine.update(dense)
            rankings.append((self.dense_weight, [chunk_id for chunk_id, _ in dense]))
            timings["dense"] = time.perf_counter() - t
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            rankings.append((1.0, self._bm25(query.tokens, n, allowed)))
            # a rare method name the question spells out outweighs everything else: that paper comes first
            rankings.append((1.0 + self.dense_weight, self._exact_names(query.text, allowed)))
            timings["bm25"] = time.perf_counter() - t
        return rankings, cosine

    def papers(self, rankings: list[tuple[float, list[str]]], depth: int) -> list[Chunk]:
        """Fuse chunk rankings; each paper once, as its best chunk, at most `depth` papers."""
        best: dict[str, Chunk] = {}
        for chunk_id in reciprocal_rank_fusion(rankings, self.rrf_k):
            chunk = self.chunks[self.row[chunk_id]]
            best.setdefault(chunk.paper_id, chunk)
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
    allowed: set[str] | None = None,
) -> Retrieval:
    """The pipeline: encode → candidates → fusion → rerank (if given) → the top `k` with snippets and cosines.

    `ranking` keeps the order to `max(k, depth)` papers, so an evaluation scores what the answer saw.
    `allowed`: search only these papers (`filters.Filters.allowed`).
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    retriever = build.retriever
    query = retriever.encode(text)
    timings["embed"] = time.perf_counter() - started
    rankings, cosine = retriever.rankings(query, mode, timings, allowed)
    chunks = retriever.papers(rankings, max(k, depth, rerank_depth if reranker else 0))
    if reranker is not None:
        t = time.perf_counter()
        head = chunks[: max(k, rerank_depth)]
        order = reranker.rerank(text, [build.papers[c.paper_id].abstract for c in head])
        chunks = [head[i] for i in order] + chunks[len(head) :]
        timings["rerank"] = time.perf_counter() - t
    top = chunks[:k]
    cosine.update(store.cosines(build.collection, query.vector, [c.chunk_id for c in top if c.chunk_id not in cosine]))
    sentence_vector = build.sentences.query(text)  # snippets are chosen in the sentence model's space
    papers = [build.papers[c.paper_id].with_match(snippet(build, sentence_vector, c.text), round(cosine[c.chunk_id], 4)) for c in top]
    coverage = retriever.lexicon.coverage(query.terms, (p.paper_id for p in papers[:_COVERAGE_PAPERS]))
    timings["retrieve"] = time.perf_counter() - started
    named = retriever.named_papers(text) if mode != "dense" else set()
    if allowed is not None:
        named &= allowed
    return Retrieval(query=text, papers=papers, coverage=coverage, timings=timings, ranking=[c.paper_id for c in chunks], named=named)
