"""Hybrid retrieval: dense vectors from Chroma and BM25 over the same chunks, fused and grouped into papers.

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
from dataclasses import dataclass, field
from typing import Any, Literal

import bm25s
import numpy as np
import Stemmer
from chromadb.api.models.Collection import Collection
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.vector_stores.chroma import ChromaVectorStore

from assistant.chunking import paper_from_metadata
from assistant.embeddings import WordLlamaEmbedding
from assistant.sentences import SentenceVectors
from assistant.types import Paper

Mode = Literal["hybrid", "dense", "bm25"]
_PAGE = 5000
# A name-like token: an upper-case letter or digit after the first character (PRepBN, GPT-4, MorseDet).
_NAME = re.compile(r"(?<![\w-])[A-Za-z][a-z]*[A-Z0-9][\w-]*")
_RARE_NAME_CHUNKS = 5
_SNIPPET_SENTENCES = 3
# Words that every question about papers uses and that say nothing about the topic.
QUESTION_STOPWORDS = sorted(
    set(bm25s.stopwords.STOPWORDS_EN)
    | {"paper", "papers", "work", "works", "study", "studies", "research", "propose", "proposes", "proposed",
       "method", "methods", "approach", "approaches", "technique", "techniques", "there", "any", "which", "what",
       "how", "does", "do", "did", "show", "shows", "new", "novel", "use", "uses", "using", "used", "way", "ways"}
)


@dataclass
class Chunk:
    chunk_id: str
    paper_id: str
    text: str


@dataclass
class Retrieval:
    """Papers for one query, best first, with per-stage timings in seconds."""

    query: str
    papers: list[Paper]
    coverage: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


class HybridRetriever:
    """Holds one build's chunks, its BM25 index and a handle on its Chroma collection.

    Read-only after construction, so one instance serves many threads.
    """

    def __init__(self, collection: Collection, embed_model: WordLlamaEmbedding, candidates: int = 50, rrf_k: int = 60, dense_weight: float = 1.0) -> None:
        self.collection = collection
        self.dense_weight = dense_weight
        self.embed_model = embed_model
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.vector_store = ChromaVectorStore(chroma_collection=collection)
        self.chunks: list[Chunk] = []
        self.papers: dict[str, Paper] = {}
        starts = self._load_chunks()
        self.sentences = SentenceVectors(embed_model, starts=starts)
        self._stemmer = Stemmer.Stemmer("english")
        self._stemmer_lock = threading.Lock()  # PyStemmer objects are not thread-safe
        self._row = {chunk.chunk_id: row for row, chunk in enumerate(self.chunks)}
        tokenized = self._tokenize([c.text for c in self.chunks])
        self.bm25 = bm25s.BM25()
        self.bm25.index(tokenized, show_progress=False)
        words = {index: word for word, index in tokenized.vocab.items()}
        frequency = Counter(words[i] for doc in tokenized.ids for i in set(doc))
        self._paper_words: dict[str, set[str]] = {}
        for chunk, doc in zip(self.chunks, tokenized.ids):
            self._paper_words.setdefault(chunk.paper_id, set()).update(words[i] for i in doc)
        self._idf = {word: math.log(1 + (len(self.chunks) - f + 0.5) / (f + 0.5)) for word, f in frequency.items()}
        self._unseen_idf = math.log(1 + (len(self.chunks) + 0.5) / 0.5)
        self._names: dict[str, list[int]] = {}
        for row, chunk in enumerate(self.chunks):
            for name in set(_NAME.findall(chunk.text)):
                self._names.setdefault(name, []).append(row)

    def _load_chunks(self) -> dict[str, str]:
        """Read every chunk and paper; returns the sentence offsets stored at index time, by text."""
        starts: dict[str, str] = {}
        offset = 0
        while True:
            page = self.collection.get(include=["documents", "metadatas"], limit=_PAGE, offset=offset)
            for chunk_id, text, meta in zip(page["ids"], page["documents"], page["metadatas"]):
                self.chunks.append(Chunk(chunk_id, meta["paper_id"], text or ""))
                if meta["paper_id"] not in self.papers:
                    self.papers[meta["paper_id"]] = paper_from_metadata(meta)
                    if meta.get("abstract_starts"):
                        starts[self.papers[meta["paper_id"]].abstract] = meta["abstract_starts"]
                if meta.get("chunk_starts") and text:
                    starts[text] = meta["chunk_starts"]
            if len(page["ids"]) < _PAGE:
                break
            offset += _PAGE
        return starts

    def _tokenize(self, texts: list[str], stopwords: list[str] | str = "en", ids: bool = True) -> Any:
        with self._stemmer_lock:
            return bm25s.tokenize(texts, stopwords=stopwords, stemmer=self._stemmer, show_progress=False, return_ids=ids)

    def coverage(self, terms: set[str], papers: list[Paper]) -> float:
        """Share of the question's topic words (IDF-weighted) found in the best-covering paper.

        Words the corpus never uses weigh the most: a question about
        "deepfake detection" over a corpus without "deepfake" scores low, however
        close its embedding happens to fall to some abstract.
        """
        if not terms or not papers:
            return 0.0
        weight = {t: self._idf.get(t, self._unseen_idf) for t in terms}
        total = sum(weight.values())
        return max(sum(w for t, w in weight.items() if t in self._paper_words[p.paper_id]) / total for p in papers)

    def _dense(self, query_vector: list[float], n: int) -> list[tuple[str, float]]:
        result = self.vector_store.query(VectorStoreQuery(query_embedding=query_vector, similarity_top_k=n))
        # ChromaVectorStore reports exp(-distance); with cosine distance that is exp(cos - 1).
        return [(node_id, 1.0 + float(np.log(max(sim, 1e-12)))) for node_id, sim in zip(result.ids or [], result.similarities or [])]

    def _bm25(self, tokens: Any, n: int) -> list[tuple[str, float]]:
        if not tokens.ids or not tokens.ids[0]:
            return []
        docs, scores = self.bm25.retrieve(tokens, k=min(n, len(self.chunks)), show_progress=False, n_threads=1)
        return [(self.chunks[int(d)].chunk_id, float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]

    def _exact_names(self, query: str) -> list[str]:
        """Chunks containing a rare name-like token of the query, those matching most names first."""
        hits: Counter[int] = Counter()
        for name in set(_NAME.findall(query)):
            rows = self._names.get(name, [])
            if len(rows) <= _RARE_NAME_CHUNKS:
                hits.update(rows)
        return [self.chunks[row].chunk_id for row, _ in hits.most_common()]

    def _snippet(self, query_vector: np.ndarray, text: str) -> str:
        """The run of up to three consecutive sentences that best matches the query."""
        sentences, vectors = self.sentences.get(text)
        if len(sentences) <= _SNIPPET_SENTENCES:
            return text
        scores = vectors @ query_vector
        windows = [float(np.mean(scores[i : i + _SNIPPET_SENTENCES])) for i in range(len(sentences) - _SNIPPET_SENTENCES + 1)]
        start = int(np.argmax(windows))
        return " ".join(sentences[start : start + _SNIPPET_SENTENCES])

    def _cosines(self, query_vector: np.ndarray, chunk_ids: list[str]) -> dict[str, float]:
        if not chunk_ids:
            return {}
        got = self.collection.get(ids=chunk_ids, include=["embeddings"])
        vectors = np.asarray(got["embeddings"], dtype=np.float32)
        return dict(zip(got["ids"], (vectors @ query_vector).tolist()))

    def search(self, query: str, k: int = 5, mode: Mode = "hybrid") -> Retrieval:
        """The `k` best papers for `query`, each once, best first."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        query_vector = np.asarray(self.embed_model.get_query_embedding(query), dtype=np.float32)
        timings["embed"] = time.perf_counter() - started
        n = min(self.candidates, len(self.chunks))
        tokens = self._tokenize([query], stopwords=QUESTION_STOPWORDS)  # topic words, stemmed, once per question
        terms = {word for word, index in tokens.vocab.items() if tokens.ids and index in tokens.ids[0]}

        rankings: list[tuple[float, list[str]]] = []
        cosine: dict[str, float] = {}
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            dense = self._dense(query_vector.tolist(), n)
            cosine.update(dense)
            rankings.append((self.dense_weight, [chunk_id for chunk_id, _ in dense]))
            timings["dense"] = time.perf_counter() - t
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            rankings.append((1.0, [chunk_id for chunk_id, _ in self._bm25(tokens, n)]))
            rankings.append((1.0, self._exact_names(query)))
            timings["bm25"] = time.perf_counter() - t

        fused: dict[str, float] = {}
        for weight, ranking in rankings:
            for rank, chunk_id in enumerate(ranking):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (self.rrf_k + rank + 1)
        best_chunk: dict[str, str] = {}
        for chunk_id in sorted(fused, key=lambda c: -fused[c]):
            paper = self.chunks[self._row[chunk_id]].paper_id
            best_chunk.setdefault(paper, chunk_id)
            if len(best_chunk) == k:
                break
        missing = [c for c in best_chunk.values() if c not in cosine]
        cosine.update(self._cosines(query_vector, missing))
        papers = [
            self.papers[paper].with_match(self._snippet(query_vector, self.chunks[self._row[chunk_id]].text), round(cosine[chunk_id], 4))
            for paper, chunk_id in best_chunk.items()
        ]
        coverage = self.coverage(terms, papers[:3])
        timings["retrieve"] = time.perf_counter() - started
        return Retrieval(query=query, papers=papers, coverage=coverage, timings=timings)

