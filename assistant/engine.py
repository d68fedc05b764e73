"""`Assistant`: the loaded index plus the answer step, shared by the API, CLI, UI and evaluation.

An `Assistant` opens the newest complete build of its index once, then
serves any number of threads. It notices when a newer build has been
committed (by `assistant index` in another process) and switches to it
between questions, so re-indexing never interrupts answering.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from assistant import extractive, store
from assistant.embeddings import WordLlamaEmbedding, load_embedding
from assistant.errors import AssistantError, StoreUnavailableError
from assistant.prompts import render
from assistant.questions import clean_question, normalize_history, standalone_query
from assistant.retrieve import HybridRetriever, Retrieval
from assistant.sentences import split_sentences
from assistant.settings import Settings
from assistant.types import Answer, Paper

log = logging.getLogger(__name__)

# Settings a single call may override; the rest describe the index and stay fixed.
PER_CALL_OPTIONS = {"retrieval_mode", "answer_sentences", "abstain_threshold"}


class Assistant:
    """Answers questions from one index; thread-safe and reusable."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._lock = threading.Lock()
        self._retriever: HybridRetriever | None = None
        self._manifest: store.Manifest | None = None
        self._checked_at = 0.0
        self._embed_model: WordLlamaEmbedding | None = None

    @property
    def manifest(self) -> store.Manifest:
        """The manifest of the build currently answering."""
        self._current()
        assert self._manifest is not None
        return self._manifest

    @property
    def embed_model(self) -> WordLlamaEmbedding:
        if self._embed_model is None:
            self._embed_model = load_embedding(self.settings.embed_model, self.settings.embed_batch_size)
        return self._embed_model

    def _open(self) -> tuple[HybridRetriever, store.Manifest]:
        client = store.connect(self.settings)
        collection, manifest = store.active_build(client, self.settings)
        store.check_compatible(manifest, self.settings)
        try:
            retriever = HybridRetriever(collection, self.embed_model, self.settings.candidates, self.settings.rrf_k)
        except AssistantError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(
                f"Index '{manifest.index}' in {store.location(self.settings)} could not be read ({exc}). "
                f"Rebuild it with: {store.rebuild_hint(self.settings)}"
            ) from exc
        split_sentences("Warm up the sentence splitter. It loads once.")
        return retriever, manifest

    def _current(self, force: bool = False) -> HybridRetriever:
        """The retriever for the newest build, reopened when another process committed a newer one."""
        with self._lock:
            due = time.monotonic() - self._checked_at > self.settings.index_check_s
            if self._retriever is None or force:
                self._retriever, self._manifest = self._open()
                self._checked_at = time.monotonic()
            elif due:
                self._checked_at = time.monotonic()
                newest = store.find_active(store.connect(self.settings), self.settings)
                if newest and self._manifest and newest[1].collection != self._manifest.collection:
                    log.info("switching to new build %s", newest[1].collection)
                    self._retriever, self._manifest = self._open()
            return self._retriever

    def search(self, question: str, history: list[Any] | None = None, *, k: int | None = None, mode: str | None = None) -> Retrieval:
        """Retrieval only: the papers for `question`, best first."""
        text = clean_question(question, self.settings.max_question_chars)
        query = standalone_query(text, normalize_history(history, self.settings.max_question_chars))
        return self._search(query, k or self.settings.top_k, mode or self.settings.retrieval_mode)

    def _search(self, query: str, k: int, mode: str) -> Retrieval:
        try:
            return self._current().search(query, k, mode)  # type: ignore[arg-type]
        except AssistantError:
            raise
        except Exception as exc:  # the build may have been pruned under us: reopen once
            log.warning("retrieval failed (%s); reopening the index", exc)
            return self._current(force=True).search(query, k, mode)  # type: ignore[arg-type]

    def ask(self, question: str, history: list[Any] | None = None, *, k: int | None = None, **opts: Any) -> Answer:
        """Answer `question` (a follow-up when `history` is given) with cited papers."""
        answer: Answer | None = None
        for piece in self.stream(question, history, k=k, **opts):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None
        return answer

    def stream(self, question: str, history: list[Any] | None = None, *, k: int | None = None, **opts: Any) -> Iterator[str | Answer]:
        """Yield the answer text piece by piece as it is produced, then the final `Answer`."""
        unknown = set(opts) - PER_CALL_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; per-call options are {', '.join(sorted(PER_CALL_OPTIONS))}")
        settings = self.settings.model_copy(update=opts) if opts else self.settings
        if k is not None and not 1 <= k <= 50:
            raise AssistantError(f"k must be between 1 and 50, got {k}")
        text = clean_question(question, settings.max_question_chars)
        turns = normalize_history(history, settings.max_question_chars)
        self._current()
        started = time.perf_counter()
        query = standalone_query(text, turns)
        retrieval = self._search(query, k or settings.top_k, settings.retrieval_mode)
        timings = {"retrieval": retrieval.timings.get("retrieve", 0.0)}
        papers = retrieval.papers

        if self._abstains(retrieval, settings):
            body = self._no_answer(papers, settings)
            yield body
            timings["total"] = time.perf_counter() - started
            yield Answer(text=body, sources=papers, abstained=True, model="extractive", timings=timings, question=text)
            return

        answer_started = time.perf_counter()
        quotes = extractive.select(query, papers, self.embed_model, settings.answer_sentences)
        pieces = []
        for piece in extractive.render(quotes):
            if not pieces:
                timings["first_token"] = time.perf_counter() - started
            pieces.append(piece)
            yield piece
        cited = [papers[i] for i in extractive.cited_order(quotes)]
        timings["answer"] = time.perf_counter() - answer_started
        timings["total"] = time.perf_counter() - started
        yield Answer(
            text="".join(pieces).strip(),
            citations=cited,
            sources=papers,
            abstained=False,
            model="extractive",
            timings=timings,
            question=text,
        )

    @staticmethod
    def _abstains(retrieval: Retrieval, settings: Settings) -> bool:
        """Too little of the question's topic is in the best papers: say so instead of answering.

        Relevance combines how much of the question's IDF-weighted vocabulary
        the best papers contain with the cosine similarity of the best one;
        the weights and threshold are calibrated on the development set's
        `none` questions (see README, "Abstention").
        """
        if not retrieval.papers:
            return True
        relevance = retrieval.coverage + settings.abstain_cosine_weight * retrieval.papers[0].score
        return relevance < settings.abstain_threshold

    @staticmethod
    def _no_answer(papers: list[Paper], settings: Settings) -> str:
        closest = "\n".join(
            render("closest_match", settings.prompts_dir, label=p.title or p.label, score=p.score) for p in papers[:3]
        )
        return render("no_answer", settings.prompts_dir, closest=closest or "(none)")


_default: Assistant | None = None
_default_lock = threading.Lock()


def default_assistant() -> Assistant:
    """The process-wide `Assistant` built from the environment and `.env`, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Assistant()
        return _default


def ask(question: str, history: list[Any] | None = None, *, k: int | None = None, **opts: Any) -> Answer:
    """Answer `question` with the default assistant; see `Assistant.ask`."""
    return default_assistant().ask(question, history, k=k, **opts)
