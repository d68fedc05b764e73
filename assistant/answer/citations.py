"""Citation markers in model output: renumbered as they stream, then checked against the abstracts.

The model cites sources by their position in the prompt ([3] = third source).
Readers want [1], [2], … in order of first appearance, matching
`Answer.citations`, and they want the streamed text to be the final text, so
renumbering happens token by token. Numbers that name no source are dropped
and reported. Afterwards each cited sentence is compared with the abstract it
cites; one that shares too little with it is reported as unsupported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from assistant.answer.result import MARKER, marker_numbers
from assistant.ingest.papers import Paper
from assistant.models.sentence_vectors import SentenceVectors
from assistant.text.sentences import content_words, split_sentences
from assistant.text.words import CLAIM_STOPWORDS

_PARTIAL = re.compile(r"[ \t]*(?:\[[\d\s,;]*)?$")  # held back: a marker cut mid-stream, and spaces that may precede one
_TRACKED = re.compile(r"[ \t]*" + MARKER.pattern)  # a marker with the spaces before it, which go when it is dropped
_LEADING_MARKERS = re.compile(r"\s*(?:" + MARKER.pattern + r"\s*)+")  # markers opening a sentence
# A cited sentence counts as supported when its best-matching abstract sentence
# is this similar (WordLlama cosine) or shares this share of its content words.
# On the dev set (benchmarks/calibrate.py) 0.60 flags 95% of sentences attributed
# to the wrong retrieved paper; the word-overlap rule keeps faithful paraphrases.
SUPPORT_COSINE = 0.60
SUPPORT_OVERLAP = 0.5


class CitationTracker:
    """Feed streamed text in; get it back with source numbers rewritten to citation numbers."""

    def __init__(self, n_sources: int) -> None:
        self.n_sources = n_sources
        self.order: list[int] = []  # 0-based source indices, in citation-number order
        self.invalid: list[int] = []
        self._pending = ""

    def _rewrite(self, match: re.Match[str]) -> str:
        """The marker renumbered; dropped with its leading spaces when it names no source ("claim [99]." → "claim.")."""
        out = []
        for number in marker_numbers(match):
            if not 1 <= number <= self.n_sources:
                self.invalid.append(number)
                continue
            if number - 1 not in self.order:
                self.order.append(number - 1)
            out.append(f"[{self.order.index(number - 1) + 1}]")
        leading = match.group(0)[: match.group(0).index("[")]
        return leading + "".join(out) if out else ""

    def feed(self, text: str) -> str:
        """Rewritten text that is safe to show; a marker split across pieces is held back."""
        text = self._pending + text
        partial = _PARTIAL.search(text)
        if partial and len(text) - partial.start() < 16:
            self._pending, text = text[partial.start() :], text[: partial.start()]
        else:
            self._pending = ""
        return _TRACKED.sub(self._rewrite, text)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return _TRACKED.sub(self._rewrite, rest)


@dataclass(frozen=True)
class Unsupported:
    """A sentence whose cited abstract does not appear to say it."""

    number: int
    sentence: str
    score: float


def cited_numbers(text: str) -> list[int]:
    """The citation numbers in `text`, in order ("[1, 3] … [2]" gives 1, 3, 2)."""
    return [number for match in MARKER.finditer(text) for number in marker_numbers(match)]


def strip_markers(text: str) -> str:
    """`text` without its citation markers."""
    return MARKER.sub("", text).strip()


def claims(text: str) -> list[tuple[str, list[int]]]:
    """Each sentence of `text` with the citation numbers it carries.

    A marker after the full stop ("… sparsity. [1]", as quotes are written) belongs to the sentence before it,
    though the sentence splitter puts it at the start of the next one.
    """
    sentences: list[str] = []
    for sentence in split_sentences(text):
        lead = _LEADING_MARKERS.match(sentence)
        if lead and sentences:
            sentences[-1] += " " + lead.group().strip()
            sentence = sentence[lead.end() :]
        sentences.append(sentence)
    found = []
    for sentence in sentences:
        plain = strip_markers(sentence)
        if len(plain.split()) >= 3:
            found.append((plain, cited_numbers(sentence)))
    return found


def support(sentence: str, abstract: str, sentence_vectors: SentenceVectors, vector: np.ndarray | None = None) -> tuple[float, float]:
    """How well `abstract` backs `sentence`: best sentence cosine, and share of the sentence's content words it uses."""
    vector = sentence_vectors.query(sentence) if vector is None else vector
    cosine = float(np.max(sentence_vectors.get(abstract)[1] @ vector))
    words = content_words(sentence, CLAIM_STOPWORDS)
    overlap = len(words & content_words(abstract, CLAIM_STOPWORDS)) / len(words) if words else 1.0
    return cosine, overlap


def is_supported(cosine: float, overlap: float, cosine_threshold: float = SUPPORT_COSINE) -> bool:
    """The support rule: similar enough, or sharing enough words (a faithful paraphrase)."""
    return cosine >= cosine_threshold or overlap >= SUPPORT_OVERLAP


# How a writer says a source is on the subject but lacks what was asked: "… but its abstract does not report the dataset".
SAYS_UNSTATED = re.compile(
    r"\b(?:does not|doesn't|do not|don't|did not|is not|are not)\s+(?:\w+\s+)?(?:state|report|mention|specify|give|say|provide|"
    r"include|name|disclose|stated|reported|mentioned|specified|given)\b",
    re.I,
)
_BUT = re.compile(r",?\s+\b(?:but|however|although|though|while|yet)\b", re.I)


def stated_part(sentence: str) -> str:
    """What a sentence claims the source says: all of it, or the part before "… but it does not state X"; "" if nothing."""
    lacking = SAYS_UNSTATED.search(sentence)
    if not lacking:
        return sentence
    head = _BUT.split(sentence[: lacking.start()])[0].strip()
    return head if len(head.split()) >= 4 else ""


def check_support(sentences: list[tuple[str, list[int]]], citations: list[Paper], sentence_vectors: SentenceVectors) -> tuple[list[Unsupported], bool]:
    """Unsupported citations among an answer's `claims`, and whether it makes claims without citing anything."""
    unsupported: list[Unsupported] = []
    for claim, numbers in sentences:
        sentence = stated_part(claim)
        if not sentence:
            continue
        vector = sentence_vectors.query(sentence) if numbers else None
        for number in numbers:
            if not 1 <= number <= len(citations):
                continue
            cosine, overlap = support(sentence, citations[number - 1].abstract, sentence_vectors, vector)
            if not is_supported(cosine, overlap):
                unsupported.append(Unsupported(number, sentence, round(max(cosine, overlap), 3)))
    ungrounded = bool(sentences) and not any(numbers for _, numbers in sentences)
    return unsupported, ungrounded


def passages(text: str, citations: list[Paper], sentence_vectors: SentenceVectors) -> list[list[str]]:
    """For each citation, the abstract's own sentences that best back the claims citing it, verbatim.

    What a reader should see highlighted in the source: never the answer's
    wording, always the abstract's. A sentence quoted word for word is found
    as itself; a paraphrase finds its closest abstract sentence.
    """
    found: list[list[str]] = [[] for _ in citations]
    for claim, numbers in claims(text):
        stated = stated_part(claim)
        if not stated:
            continue
        vector = sentence_vectors.query(stated)
        for number in dict.fromkeys(numbers):
            if not 1 <= number <= len(citations):
                continue
            sentences, vectors = sentence_vectors.get(citations[number - 1].abstract)
            exact = [s for s in sentences if s.strip() == stated.strip()]
            best = exact[0] if exact else sentences[int(np.argmax(vectors @ vector))]
            if best not in found[number - 1]:
                found[number - 1].append(best)
    return found


def continue_numbering(text: str, citations: list[Paper], earlier: list[Paper]) -> tuple[str, list[Paper]]:
    """`text`'s markers renumbered to follow `earlier`'s numbers, and the citation list both then share.

    A paper `earlier` already cites keeps its number; the others are numbered after it, in order.
    """
    combined = list(earlier)
    ids = [p.paper_id for p in combined]
    mapping: dict[int, int] = {}
    for number, paper in enumerate(citations, start=1):
        if paper.paper_id not in ids:
            combined.append(paper)
            ids.append(paper.paper_id)
        mapping[number] = ids.index(paper.paper_id) + 1

    def rewrite(match: re.Match[str]) -> str:
        numbers = [mapping.get(n, n) for n in marker_numbers(match)]
        return "[" + ", ".join(map(str, numbers)) + "]"

    return MARKER.sub(rewrite, text), combined
