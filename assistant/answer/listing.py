"""Which papers a list question lists: every paper naming what it names, or every paper its topic words qualify.

"Which papers use D4RL?" lists every paper whose title or abstract names D4RL, however many, not the top k;
"which papers work with tabular data?" quotes every paper that uses nearly as many of the question's topic words as
the paper using most, including those retrieval ranked too low. Both read the record the engine fills and change
the papers it answers from.
"""

from __future__ import annotations

from dataclasses import replace

from assistant.answer.record import QuestionRecord
from assistant.indexing.lexical import LexicalIndex
from assistant.ingest.papers import Paper
from assistant.retrieval.builds import Build
from assistant.text.questions import asks_for_list
from assistant.text.words import alternatives, listed_names, name_pattern, stems

LISTED = 100  # papers a listing quotes; it counts them all
_LISTED_COVERAGE = 0.6  # a list question's words a paper must use (IDF-weighted) for the words to qualify papers
_COVERAGE_MARGIN = 0.15  # … and how far below the paper using most of them another may come
_FEWEST_TO_DROP = 3  # topic words a list question needs before a paper lacking one of its lighter ones qualifies
_TOPIC_PAPERS = 3  # a list question's topic words are those the best papers retrieval found use
_RARE_SHARE = 0.05  # words at most this share of the chunks use find a list's papers retrieval ranked too low


def list_named(record: QuestionRecord, build: Build, allowed: frozenset[str] | None) -> None:
    """A "which papers use D4RL?" question lists every paper whose abstract names what it asks about, not the top k:
    found through BM25's postings, checked against the text itself, in retrieval's order first, then the index's."""
    names = listed_names(record.question)
    if not names or record.retrieval is None:
        return
    lexical = build.retriever.lexical
    candidates = lexical.papers_using([w for name in names for w in stems(name) if len(w) > 1])
    patterns = [name_pattern(name) for name in names]
    rank = {paper_id: i for i, paper_id in enumerate(record.retrieval.ranking)}
    found: list[tuple[Paper, int]] = []
    count = 0
    for paper_id in sorted(candidates, key=lambda pid: rank.get(pid, len(rank))):
        paper = build.papers.get(paper_id) if allowed is None or paper_id in allowed else None
        if paper is None or not all(p.search(paper.title_and_abstract) for p in patterns):
            continue
        count += 1
        if len(found) == LISTED:  # counted, not quoted: the answer lists the closest ones
            continue
        sentences = build.sentences.split(paper.abstract)
        naming = next((i for i, sentence in enumerate(sentences) if all(p.search(sentence) for p in patterns)), None)
        if naming is None:  # the names in different sentences, or one only in the title
            naming = next((i for i, sentence in enumerate(sentences) if any(p.search(sentence) for p in patterns)), 0)
        found.append((paper.with_match(sentences[naming], 0.0), naming))
    if len(found) < 2:  # one paper is a paper the question names, answered as such
        return
    record.retrieval = replace(record.retrieval, papers=[paper for paper, _ in found], named=set())
    record.listing, record.listed, record.naming = names, count, {i: naming for i, (_, naming) in enumerate(found)}
    record.verdict = replace(record.verdict, answerable=True) if record.verdict else record.verdict


def qualify_listed(record: QuestionRecord, build: Build, allowed: frozenset[str] | None) -> None:
    """A list question ("which papers work with tabular data?") quotes every paper that uses (IDF-weighted) nearly
    as many of its topic words as the paper that uses most, however its best sentence compares with the best
    paper's: those retrieval found, and those it ranked too low (found through the rare words' postings), after them.
    "X or Y" is read both ways, and a paper's share is its best of the two. Where the words leave out the paper
    retrieval ranked first, only those the best papers use count (`_topic`)."""
    if not asks_for_list(record.question) or record.retrieval is None:
        return
    lexical = build.retriever.lexical
    ids = [paper.paper_id for paper in record.papers]
    readings = [build.retriever.terms(text) for text in alternatives(record.query)]  # "A or B": either side qualifies
    found = _qualified(lexical, readings, ids, allowed)
    if found is not None and ids and ids[0] not in found[0]:
        found = _qualified(lexical, [_topic(lexical, terms, record.retrieval.ranking[:_TOPIC_PAPERS]) for terms in readings], ids, allowed)
    if found is None:
        return
    qualified, added = found
    record.add_papers([build.papers[p] for p in added])
    record.qualified = {i for i, paper in enumerate(record.papers) if paper.paper_id in qualified}


def _qualified(lexical: LexicalIndex, readings: list[set[str]], ids: list[str], allowed: frozenset[str] | None) -> tuple[set[str], list[str]] | None:
    """The papers `readings` qualify, and those of them retrieval did not find (`ids`), most words first; None when no
    paper uses most of the words."""
    rare = lexical.papers_using_any(set().union(*readings), max(1, int(_RARE_SHARE * len(lexical))))
    candidates = [*ids, *(p for p in rare if p not in ids and (allowed is None or p in allowed))]
    shares = [lexical.coverages(terms, candidates) for terms in readings]
    coverage = {p: max(share.get(p, 0.0) for share in shares) for p in candidates}
    best = max(coverage.values(), default=0.0)
    if best < _LISTED_COVERAGE:  # no paper uses most of the question's words: nothing to qualify by
        return None
    bar = min(best - _COVERAGE_MARGIN, max(_all_but_a_minor_word(lexical.weights(terms)) for terms in readings))
    qualified = {p for p, share in coverage.items() if share >= bar}
    return qualified, sorted((p for p in candidates if p in qualified and p not in ids), key=lambda p: -coverage[p])[:LISTED]  # ties: as found


def _topic(lexical: LexicalIndex, terms: set[str], best: list[str]) -> set[str]:
    """The words of `terms` that at least one of the `best` papers uses: "actually" or "carry out" in "which papers study
    how transformers actually carry out in-context learning?" are the asker's phrasing, and over the conference they
    qualified papers that say "carried out" and "context" instead of those on in-context learning."""
    return {term for term in terms if any(lexical.coverages({term}, best).values())} or terms


def _all_but_a_minor_word(weights: dict[str, float]) -> float:
    """The share of a question's topic words a paper keeps when it lacks one of the lighter half of them and nothing
    else: "neural operators for solving PDEs" in a paper on neural operators for PDEs that never says "solving", or
    "tabular data" in one on tabular benchmarks. The rarest words are the topic; one common word may be phrased otherwise."""
    ordered = sorted(weights.values(), reverse=True)
    if len(ordered) < _FEWEST_TO_DROP:  # "optimal transport", "tabular data": two words are one term
        return 1.0
    minor = ordered[(len(ordered) + 1) // 2 :]  # the lighter half, the middle word of an odd count among the topic
    return 1.0 - max(minor) / sum(ordered) - 1e-9
