"""An answerer that needs no generative model: it quotes the abstracts' most relevant sentences.

Every sentence it outputs is copied verbatim from the abstract it cites, so
the answer is grounded by construction. It is deterministic, takes a few
milliseconds, and is the fallback whenever a chat model fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass

from assistant.ingest.papers import Paper
from assistant.models.sentence_vectors import SentenceVectors
from assistant.text.details import compares, initials
from assistant.text.naming import BRACKETED_NAME, OWN_VOICE
from assistant.text.questions import asks_for_list, asks_for_several
from assistant.text.roles import asks_for_finding, reports_finding
from assistant.text.sentences import content_words
from assistant.text.words import CLAIM_STOPWORDS, GENERIC_NAMES, names_in, stem

_MIN_WORDS = 5
_CONTRIBUTION_VERB = re.compile(r"\b(?:we|this (?:paper|work))\s+(?:\w+\s+)?(?:propose|introduce|present|develop|call|name|dub|term)s?\b", re.I)
_ACRONYM = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9]{1,5}(?![A-Za-z0-9])")  # "SAM", "GNN", "T5"
_LEXICAL_WEIGHT = 0.3
_PAPER_RANK_PENALTY = 0.03
_CONTRIBUTION_BONUS = 0.10  # dev set: cites a gold paper 0.972 -> 1.000, keyword hits 0.662 -> 0.676
_FINDING_BONUS = 0.10  # "what do they find …": the sentence stating the finding, not the one restating the topic
# How close to the best sentence another paper's best must come to be quoted too.
_SINGULAR_MARGIN = 0.08
_PLURAL_MARGIN = 0.25
_LIST_MARGIN = 0.2  # a "which papers…" question quotes one sentence of every paper this close to the best
LIST_PAPERS = 8  # … up to this many


@dataclass(frozen=True)
class Quote:
    """A sentence chosen from a paper's abstract."""

    paper: int  # index into the papers given to `select`
    position: int  # sentence index within the abstract
    text: str
    score: float


def select(
    question: str, papers: list[Paper], sentence_vectors: SentenceVectors, max_sentences: int, spread: bool = False, lead: int | None = None,
    each: bool = False, include: Set[int] = frozenset(), ranked_first: bool = False,
) -> list[Quote]:
    """The sentences that best answer `question`, at most `max_sentences`, in citation order.

    The paper with the best sentence (with `spread`, an unsure match, or `ranked_first`, a question on one topic that
    asks for no detail: the paper ranked first, which ranking read whole) gives up to `lead` (by default 3 for a
    question about one paper, where the asked fact is often a result stated after the two sentences most like the
    question; 2 when several are asked for or quoted, leaving room for them); any other paper whose
    best sentence comes close gives one, with a wider margin when the question
    asks for several papers ("which papers…"). `each`: every paper gives its best
    sentence (the papers a question names), however far from the best; `include`: so do these papers (those a
    list question's topic words qualify, `listing.qualify_listed`).
    """
    if not papers:
        return []
    q_vector = sentence_vectors.query(question)
    candidates: list[tuple[int, int, str, float]] = []
    for p, paper in enumerate(papers):
        sentences, vectors = sentence_vectors.get(paper.abstract)
        cosines = vectors @ q_vector
        candidates.extend((p, i, s, float(c)) for i, (s, c) in enumerate(zip(sentences, cosines)) if len(s.split()) >= _MIN_WORDS)
    if not candidates:
        return []
    q_words = content_words(question)
    finding_asked = asks_for_finding(question)
    scored = [
        Quote(
            p,
            i,
            s,
            c
            + _LEXICAL_WEIGHT * len(q_words & content_words(s)) / max(len(q_words), 1)
            + (_CONTRIBUTION_BONUS if OWN_VOICE.search(s) else 0.0)
            + (_FINDING_BONUS if finding_asked and reports_finding(s) else 0.0)
            - _PAPER_RANK_PENALTY * p,
        )
        for p, i, s, c in candidates
    ]
    per_paper: dict[int, list[Quote]] = {}
    for quote in sorted(scored, key=lambda q: -q.score):
        per_paper.setdefault(quote.paper, []).append(quote)
    # a list's papers its topic words qualify come first: "which papers study mixup?" led with a paper on how papers
    # are read, whose sentence about "papers" came closest
    by_score = sorted(per_paper, key=lambda p: (p not in include, -per_paper[p][0].score))
    best = max(quotes[0].score for quotes in per_paper.values())
    # an unsure match, or one topic, leads with the paper the search ranked first (read whole), not the best sentence's
    ranked = sorted(per_paper) if spread or ranked_first else by_score
    listing = asks_for_list(question) and not each
    several = (each and len(papers) > 1) or asks_for_several(question)
    margin = _LIST_MARGIN if listing else _PLURAL_MARGIN if spread or several or compares(question) else _SINGULAR_MARGIN
    lead = lead if lead is not None else 2 if several else 3
    chosen: list[Quote] = per_paper[ranked[0]][:lead]
    others = [p for p in by_score if p != ranked[0]]  # the closest sentences come first when room is short
    chosen.extend(per_paper[p][0] for p in others if p in include)  # and before them, those `include` names
    chosen.extend(per_paper[p][0] for p in others if p not in include and (each or per_paper[p][0].score >= best - margin))
    room = max_sentences + (1 if spread and not several else 0)  # an unsure match keeps room for the runner-up's best sentence
    if listing:  # "which papers…": every paper that comes close, one sentence each (the best one two), and all of `include`
        room = max(room, LIST_PAPERS, lead + len(include))
    chosen = chosen[: max(room, len(ranked) if each else 0)]
    order = {p: i for i, p in enumerate(ranked)}
    return sorted(chosen, key=lambda q: (order[q.paper], q.position))


def ranked_first_leads(question: str, names_a_paper: bool, asks_a_detail: bool) -> bool:
    """Whether the answer to `question` leads with the paper the search ranked first (which ranking read whole), not the
    one holding the closest sentence: a question on one topic that names no paper, asks no detail and not for several
    (over the conference, one sentence of another paper sharing more of the question's words led as often as the right
    paper did)."""
    return not names_a_paper and not asks_a_detail and not asks_for_several(question)


def best_match(description: str, papers: list[Paper], sentence_vectors: SentenceVectors, context: str = "") -> int | None:
    """The paper `description` fits best ("the one saying benchmarking is limited in RL research"), whatever its rank
    (`match_scores`)."""
    scores = match_scores(description, papers, sentence_vectors, context)
    return max(range(len(papers)), key=scores.__getitem__) if papers else None


def match_scores(description: str, papers: list[Paper], sentence_vectors: SentenceVectors, context: str = "") -> list[float]:
    """How well `description` fits each paper: its best sentence's cosine, plus the share of the description's words
    its title and abstract use (both read with `context`, what every side shares: "three GFlowNet papers"; an acronym
    counts where they spell it out: "GNN" for "graph neural networks") and the share its title uses (a description
    retells a title: "the paper that studies zero-shot interpolation in DDPMs"), and most of all whether they use the
    description word for word (a method's name: "Deep LoRA")."""
    read = f"{description} {context}".strip()
    q_vector = sentence_vectors.query(read)
    q_words = _description_words(read)
    verbatim = re.compile(rf"(?<!\w){re.escape(' '.join(description.split()))}(?!\w)", re.I)
    scores = []
    for paper in papers:
        _, vectors = sentence_vectors.get(paper.abstract)
        text = paper.title_and_abstract
        cosine = float((vectors @ q_vector).max()) if len(vectors) else 0.0
        shared = words_used(read, text)
        titled = len(q_words & {stem(w) for w in content_words(paper.title or "")}) / max(len(q_words), 1)
        scores.append(cosine + _LEXICAL_WEIGHT * (shared + titled) + (1.0 if verbatim.search(text) else 0.0))  # "Deep LoRA", word for word
    return scores


def words_used(description: str, text: str) -> float:
    """The share of `description`'s words (stems, and the acronyms too short for a content word: "the SAM-with-lookahead
    paper") that `text` uses, an acronym also where `text` spells it out ("GNN" for "graph neural networks")."""
    words = _description_words(description)
    acronyms = set(_ACRONYM.findall(description))
    spelled = initials(text) if acronyms else set()
    written = {a for a in acronyms if re.search(rf"(?<![A-Za-z0-9]){a}(?![A-Za-z0-9])", text) or a.lower() in spelled}
    return (len(words & {stem(w) for w in content_words(text)}) + len(written)) / max(len(words) + len(acronyms), 1)


def _description_words(description: str) -> set[str]:
    """Stems of a description's content words, not "paper" or "with"; "process" as "processes"."""
    return {stem(w) for w in content_words(description, CLAIM_STOPWORDS)}


def naming_sentence(sentences: Sequence[str]) -> int | None:
    """The sentence in which an abstract names what it contributes ("we introduce … (DeCoOp)", "we propose SUDA"):
    a contribution phrase and a name of its own in one sentence; None when it names nothing."""
    for i, sentence in enumerate(sentences):
        if _CONTRIBUTION_VERB.search(sentence) and (BRACKETED_NAME.search(sentence) or any(n not in GENERIC_NAMES for n in names_in(sentence))):
            return i
    return None


def with_sentences(quotes: list[Quote], paper: int, positions: list[int], sentences: tuple[str, ...] | list[str]) -> list[Quote]:
    """`quotes` plus the given sentences of `papers[paper]` (those that state what was asked), in citation order."""
    have = {(q.paper, q.position) for q in quotes}
    added = [Quote(paper, i, sentences[i], 0.0) for i in positions if (paper, i) not in have and i < len(sentences)]
    order = {p: n for n, p in enumerate(dict.fromkeys([paper] + [q.paper for q in quotes]))}
    return sorted(quotes + added, key=lambda q: (order[q.paper], q.position))


# A sentence announcing a few things it then lists ("SAM encounters two major challenges."), and one listing them
# ("Firstly, …", "(ii) …"): a quote of either keeps the others, or "the two challenges" are told one and a half.
_ANNOUNCES = re.compile(
    r"\b(?:two|three|four|[234])\s+(?:[\w-]+\s+){0,2}(?:challenges|contributions|components|problems|issues|steps|stages|"
    r"innovations|limitations|questions|advantages|ideas|parts|elements|modules|techniques|properties|findings|insights|"
    r"aspects|strategies|phases|benefits|drawbacks|shortcomings|obstacles|goals|objectives|views|visions|ways|types|kinds|"
    r"categories|variants|perspectives|factors)\b[^.;:]*[.:]?\s*$", re.I)
_OPENS_LIST = re.compile(r"[:;,]\s*(?:\(?(?:1|i)\)|first(?:ly)?,)\s", re.I)  # "in two ways: (1) It employs …": the first item inside
_LISTS = re.compile(
    r"^\s*(?:First(?:ly)?|Second(?:ly)?|Third(?:ly)?|Fourth(?:ly)?|Finally|Lastly|\(?(?:i{1,3}|iv|[1-4])\)|"
    r"(?:(?:Under|In|For)\s+)?the\s+(?:first|second|third|fourth)\s+[\w-]+)[\s,:]", re.I)  # "The first view, which …"
_LISTED_MOST = 4


def _announces(sentence: str) -> bool:
    return bool(_ANNOUNCES.search(sentence) or _OPENS_LIST.search(sentence))


def whole_lists(quotes: list[Quote], sentences_of: Callable[[int], Sequence[str]]) -> list[Quote]:
    """`quotes` with the rest of any list a quoted sentence announces or belongs to ("Despite its strengths, SAM
    encounters two major challenges." and its "Firstly, …", "Secondly, …"), each paper's sentences in order."""
    added: list[Quote] = []
    for paper in dict.fromkeys(q.paper for q in quotes):
        sentences, quoted = sentences_of(paper), {q.position for q in quotes if q.paper == paper}
        wanted: set[int] = set()
        for position in quoted:
            start = position
            while start > 0 and _LISTS.match(sentences[start]) and position - start < _LISTED_MOST:
                start -= 1  # back to the sentence announcing the list
            if start != position and not _LISTS.match(sentences[start]) and not _announces(sentences[start]):
                start += 1  # the sentence before the list's first item announces nothing: the list starts at that item
            if start == position and not _announces(sentences[position]) and not _LISTS.match(sentences[position]):
                continue
            end = position + 1
            while end < len(sentences) and _LISTS.match(sentences[end]) and end - start <= _LISTED_MOST:
                end += 1
            wanted.update(range(start, end))
        added += [Quote(paper, i, sentences[i], 0.0) for i in sorted(wanted - quoted)]
    order = {p: n for n, p in enumerate(dict.fromkeys(q.paper for q in quotes))}
    return sorted(quotes + added, key=lambda q: (order[q.paper], q.position))


def render(quotes: list[Quote], titles: Sequence[str | None] = ()) -> Iterator[str]:
    """Paragraphs of quoted sentences, each followed by its `[n]`, numbered by first appearance, each opened by its
    paper's title where `titles` (by paper index) gives one (`paragraph`)."""
    numbers: dict[int, int] = {}
    for quote in quotes:
        numbers.setdefault(quote.paper, len(numbers) + 1)
    for paper, number in numbers.items():
        lines = [f"{q.text} [{number}]" for q in quotes if q.paper == paper]
        yield paragraph(" ".join(lines), titles[paper] if paper < len(titles) else None) + "\n\n"


def paragraph(quoted: str, title: str | None) -> str:
    """One paper's quoted sentences, opened by its title: "which papers…" is answered by naming them, and a reader
    tells the papers quoted apart without matching numbers to the cards."""
    return f"**{title}**: {quoted}" if title else quoted


def cited_order(quotes: list[Quote]) -> list[int]:
    """Indices of the cited papers in the order their numbers were given."""
    return list(dict.fromkeys(q.paper for q in quotes))
