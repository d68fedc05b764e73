"""One search over an open build: encode → candidates → fusion → rerank → the top papers with snippets and cosines."""

from __future__ import annotations

import functools
import itertools
import logging
import re
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet

import numpy as np

from assistant.indexing import store
from assistant.indexing.lexical import unknown_names
from assistant.ingest.papers import Paper
from assistant.models.reader import Reader
from assistant.retrieval.builds import Build
from assistant.retrieval.hybrid import COVERAGE_PAPERS, Chunk, HybridRetriever, Mode, Query, Retrieval
from assistant.retrieval.rerank import rerank
from assistant.text.naming import names_author, names_title, names_whole_title, title_text
from assistant.text.questions import about_several_papers, asks_for_several, described_paper
from assistant.text.words import STOPWORDS, stems

log = logging.getLogger(__name__)

_SNIPPET_SENTENCES = 3
_COVERED_HEAD, _COVERED, _COVERAGE_GAP = 5, 0.75, 0.15  # `_fullest_first`: how deep it looks, "most", "a good share"
_WHOLE, _WHOLE_GAP = 0.9, 0.3  # `_lexical_best_first`: "nearly all" of the question's words, "a good share" of them
_TITLE_WORDS, _TITLE_SHARE, _TITLE_CANDIDATES = 3, 0.6, 20  # `title_words`: "most" of a question's words, and where it looks
_DESCRIBED_TITLE_WORDS = 2  # a paper described before "paper" (`described_paper`): two of its words in a title are enough
COINED_PAPERS = 3  # a capitalised term in at most this many abstracts is one paper's own, and its title's names it
_COMPOUND = re.compile(r"(?<![\w-])[a-z]{2,}(?:-[a-z]{2,})+(?![\w-])", re.I)  # "sum-product": one paper may write it alone
_COMPOUND_BEST = 3  # … and BM25 then ranks that paper among this many
_TITLE_WORD_PAPERS = 20  # `_titles_named`: a word in more titles than this ("graph") is read in the candidates only


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
    build: Build, text: str, k: int, mode: Mode = "hybrid", depth: int = 10, reranker: Reader | None = None, rerank_depth: int = 10,
    allowed: AbstractSet[str] | None = None, settled: Callable[[float, float], bool] | None = None, reader_weight: float = 1.0,
) -> Retrieval:
    """The pipeline: encode → candidates → fusion → rerank (if given) → the top `k` with snippets and cosines.

    `ranking` keeps the order to `max(k, depth)` papers, so an evaluation scores what the answer saw.
    `allowed`: search only these papers (`filters.Filters.allowed`). `settled(coverage, best cosine)` of the
    first stage: true when the question uses the abstracts' own words, or it names the best paper; then
    the first stage's order stands and the reranker is not asked (~25 ms, and no model load, saved).
    `reader_weight`: the reader's order against the first stage's (weight 1) where they are fused.
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    retriever = build.retriever
    covering = _covering(text)
    query = retriever.encode(text)
    timings["embed"] = time.perf_counter() - started
    rankings, cosine = retriever.rankings(query, mode, timings, allowed)
    coined = [p for p in build.papers.coined(text, lambda term: _coined(build, term)) if allowed is None or p in allowed]
    titled = [paper_id for paper_id in [*build.papers.titled(text), *_titles_named(build, text)] if allowed is None or paper_id in allowed] + coined
    named = retriever.lexical.named_papers(text, build.papers.owns) if mode != "dense" else set()
    if allowed is not None:
        named &= allowed
    if mode != "dense":
        titled += [p for p in _compounds_written(build, text, query, allowed) if allowed is None or p in allowed]
        if not titled and not named and not asks_for_several(text):  # one paper asked about ("comparing A vs B" may be its title)
            worded = title_words(build, query, rankings)
            coined, titled = coined + worded, titled + worded
    # a title the question quotes names its paper, however little its abstract shares, and so does a name only it uses
    # ("… did Powder need?": a capitalised plain word, which the exact-name search does not hold)
    naming = [*titled, *sorted(named - set(titled))]
    if naming and mode != "dense":
        rankings.append((1.0 + retriever.dense_weight, [
            retriever.lexical.chunk_ids[retriever.lexical.paper_rows[p][0]] for p in naming if p in retriever.lexical.paper_rows
        ]))
    chunks = retriever.papers(rankings, max(k, depth, rerank_depth if reranker else 0))
    common = functools.partial(_common, build)
    by_name = {c.paper_id for c in chunks[:depth] if c.paper_id in coined or _named_by_title_or_author(text, build.papers[c.paper_id], common)}
    if not by_name:  # "Simchi-Levi et al." where no paper found has Simchi-Levi first: the one found with them as co-author
        co_authored = {c.paper_id for c in chunks[:depth] if names_author(text, build.papers[c.paper_id].authors, co_author=True)}
        by_name = co_authored if len(co_authored) == 1 else set()
    if by_name:  # a paper named by its title or authors comes first, in the order the search found them
        named |= by_name
        first = [c for c in chunks if c.paper_id in by_name]
        if len(first) > 1 and not asks_for_several(text):  # "which pruning method do Obando Ceron et al. use?": two of
            # their papers; the one using more of the question's words is asked about
            coverage = retriever.lexical.coverages(query.terms, [c.paper_id for c in first])
            first.sort(key=lambda c: -coverage.get(c.paper_id, 0.0))
        chunks = first + [c for c in chunks if c.paper_id not in by_name]
    elif covering == 1 and mode == "hybrid" and not named:
        chunks = _lexical_best_first(retriever, query, chunks, allowed)
    reader: dict[str, float] = {}
    if reranker is not None and chunks and settled is not None:
        best = chunks[0]
        first_coverage = retriever.lexical.coverage(query.terms, (c.paper_id for c in chunks[:covering]))
        if best.paper_id in named or settled(first_coverage, cosine.get(best.chunk_id, 0.0)):
            reranker = None
            if best.paper_id not in named and covering == 1:
                chunks = _fullest_first(chunks, retriever.lexical.coverages(query.terms, [c.paper_id for c in chunks[:_COVERED_HEAD]]))
    if reranker is not None:
        t = time.perf_counter()
        head = chunks[: max(k, rerank_depth)]
        try:
            order, scores = rerank(reranker, text, [build.papers[c.paper_id].abstract for c in head], retriever.rrf_k, reader_weight)
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
    coverage = retriever.lexical.coverage(query.terms, (p.paper_id for p in papers[:covering]))
    timings["retrieve"] = time.perf_counter() - started
    return Retrieval(
        query=text, papers=papers, coverage=coverage, timings=timings, ranking=[c.paper_id for c in chunks], named=named, reader=reader,
        unknown=unknown_names(retriever.lexical, text, lambda word: bool(build.papers.with_title_word(word))),
        unused_nouns=retriever.unused_nouns(text, query.terms) if reader else {},  # only the reader's verdict weighs them
    )


def _fullest_first(chunks: list[Chunk], coverage: dict[str, float]) -> list[Chunk]:
    """Where the question uses the abstracts' own words, the paper among the first few that holds most of them
    (IDF-weighted) leads one lacking a good share: the dense ranking, weighted most, put "LESS" (KV-cache eviction)
    before "CaM" (cache merging) for "any work on merging kv caches instead of evicting them", though only CaM says
    "merging"."""
    fullest = max(chunks[:_COVERED_HEAD], key=lambda c: coverage.get(c.paper_id, 0.0), default=None)
    if fullest is None or coverage.get(fullest.paper_id, 0.0) < _COVERED or coverage.get(chunks[0].paper_id, 0.0) > coverage[fullest.paper_id] - _COVERAGE_GAP:
        return chunks
    return [fullest, *(c for c in chunks if c is not fullest)]


def _lexical_best_first(retriever: HybridRetriever, query: Query, chunks: list[Chunk], allowed: AbstractSet[str] | None) -> list[Chunk]:
    """BM25's best paper leads where it holds nearly all of a one-paper question's topic words (IDF-weighted) and the
    fused first lacks a good share of them: "what's the cycloid paper about?" was declined over the conference, the
    dense ranking, weighted six times BM25's, putting first a paper using none of its words."""
    rows = retriever.lexical.search(query.tokens, 1, allowed)
    if not rows or not chunks or retriever.lexical.chunk_papers[rows[0]] == chunks[0].paper_id:
        return chunks
    lead = Chunk(retriever.lexical.chunk_ids[rows[0]], retriever.lexical.chunk_papers[rows[0]])
    coverage = retriever.lexical.coverages(query.terms, [chunks[0].paper_id, lead.paper_id])
    if coverage[lead.paper_id] < _WHOLE or coverage[chunks[0].paper_id] > coverage[lead.paper_id] - _WHOLE_GAP:
        return chunks
    return [lead, *(c for c in chunks if c.paper_id != lead.paper_id)]


def _named_by_title_or_author(question: str, paper: Paper, common: Callable[[str], bool]) -> bool:
    return names_title(question, paper.title, common) or names_author(question, paper.authors)


def _titles_named(build: Build, question: str) -> list[str]:
    """Papers whose whole title (or its name before a colon) the question writes, found by a word few titles use:
    "cooperative GNNs" names "Cooperative Graph Neural Networks", whose abstract never says "cooperative", so no
    search for it finds it."""
    found: list[str] = []
    for word in dict.fromkeys(w for w in re.findall(r"[^\W\d_][\w-]{3,}", question) if w.lower() not in STOPWORDS):
        found += [p for p in build.papers.with_title_word(word, _TITLE_WORD_PAPERS) if names_whole_title(question, build.papers[p].title)]
    return list(dict.fromkeys(found))


def _common(build: Build, word: str) -> bool:
    """Whether more chunks use `word` than COINED_PAPERS, a coinage's most: a word of the field ("score", "next", "brain")."""
    return any(build.retriever.lexical.chunks_using(stem) > COINED_PAPERS for stem in stems(word))


def _coined(build: Build, term: str) -> bool:
    """Whether few abstracts write `term` (folded, as titles are): a paper's coinage ("Template Programs": one abstract,
    "Differentiable Model Scaling": one, though hundreds use its three words apart), not a field's name ("Direct
    Preference Optimization": 16 of the conference's)."""
    return len(_writing(build, term, COINED_PAPERS + 1)) <= COINED_PAPERS


def _writing(build: Build, term: str, limit: int) -> list[str]:
    """The first `limit` papers whose abstract writes `term` (folded, as titles are); only abstracts using every word
    of it are read."""
    phrase = title_text(term)
    words = [w for w in stems(term) if len(w) > 1]  # BM25 keeps no one-letter word ("e-invariance")
    using = (p for p in build.retriever.lexical.papers_using(words) if phrase in title_text(build.papers[p].abstract))
    return list(itertools.islice(using, limit))


def title_words(build: Build, query: Query, rankings: list[tuple[float, list[str]]]) -> list[str]:
    """The one candidate whose title holds most of a question's topic words (at least _TITLE_WORDS, and
    _TITLE_SHARE of them), more than any other candidate's title: "theory comparing autoregressive vs masked
    pretraining" is "Look Ahead or Look Around? A Theoretical Comparison Between Autoregressive and Masked
    Pretraining", which MiniLM ranked past its 50th and whose abstract says "SSL", not "pretraining"."""
    described = "" if about_several_papers(query.text) else described_paper(query.text)  # a comparison's sides: `comparing`
    if described and len(writers := _writing(build, described, 2)) == 1:
        return writers  # "does the e-invariance paper need a causal graph?": the one abstract writing the description
    terms = build.retriever.terms(described) if described else query.terms
    least = _DESCRIBED_TITLE_WORDS if described else _TITLE_WORDS
    if len(terms) < least:
        return []
    lexical = build.retriever.lexical
    candidates = dict.fromkeys(lexical.chunk_papers[build.retriever.row[c]] for _, ids in rankings for c in ids[:_TITLE_CANDIDATES])
    titles = build.retriever.terms_of([build.papers[p].title or "" for p in candidates])
    held = sorted(((len(terms & words), p) for p, words in zip(candidates, titles)), reverse=True)
    if not held or held[0][0] < max(least, _TITLE_SHARE * len(terms)):
        return []
    tied = [p for n, p in held if n == held[0][0]]
    if not described:
        return tied if len(tied) == 1 else []
    # a described paper holds all the description's words, and of titles holding as many, it is the one writing them as
    # the question does ("the target network convergence paper" is "Target Networks and Over-parameterization …", not
    # "… Networked Interference via Targeted Learning")
    covered = lexical.coverages(terms, tied)
    asked = _pairs(described)
    fit = {p: len(asked & _pairs(build.papers[p].title or "")) for p in tied if covered[p] == 1.0}
    best = sorted(fit, key=lambda p: fit[p], reverse=True)
    return best[:1] if len(best) == 1 or len(best) > 1 and fit[best[0]] > fit[best[1]] else []


def _pairs(text: str) -> set[tuple[str, str]]:
    """Consecutive topic words of `text`, as stems: how it writes a term ("target network")."""
    words = [w for w in stems(text) if w not in STOPWORDS]
    return set(zip(words, words[1:]))


def _compounds_written(build: Build, question: str, query: Query, allowed: AbstractSet[str] | None) -> list[str]:
    """The papers that alone write a hyphenated compound of the question and that BM25 ranks among its best
    ("DP + sum-product networks?": one abstract of the conference writes "sum-product", BM25's first, while the dense
    ranking, weighted most, put it 35th). A paraphrase's compounds ("near-optimality", "medium-range") are written by
    papers its words as a whole do not find."""
    compounds = list(dict.fromkeys(_COMPOUND.findall(question)))
    if not compounds:
        return []
    lexical = build.retriever.lexical
    best = {lexical.chunk_papers[row] for row in lexical.search(query.tokens, _COMPOUND_BEST, allowed)}
    found: list[str] = []
    for compound in compounds:
        papers = _writing(build, compound, COINED_PAPERS + 1)
        if len(papers) <= COINED_PAPERS:
            found += [p for p in papers if p in best]
    return list(dict.fromkeys(found))


def _covering(question: str) -> int:
    """How many of the best papers must hold the question's topic words between them: one, for a question about one
    paper ("sign" in one abstract and "videos" and "text" in others are no paper translating sign-language videos into
    text; over three, that question was answered at high confidence), or COVERAGE_PAPERS for a list or a comparison."""
    return COVERAGE_PAPERS if about_several_papers(question) else 1
