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
from typing import TYPE_CHECKING, Any

from assistant import extractive, local_model, store
from assistant.citations import CitationTracker, check_support, claims
from assistant.context import build_prompt, condense_messages
from assistant.embeddings import WordLlamaEmbedding, load_embedding
from assistant.errors import AssistantError, ModelError, StoreUnavailableError
from assistant.prompts import render
from assistant.providers import chat_model, provider_name
from assistant.questions import Message, clean_question, clean_text, normalize_history, standalone_query
from assistant.relevance import Verdict, judge
from assistant.rerank import MODEL as RERANK_MODEL
from assistant.rerank import Reranker, wanted
from assistant.retrieve import HybridRetriever, Retrieval
from assistant.settings import Settings
from assistant.types import Answer, Paper

if TYPE_CHECKING:
    from assistant.llm import ChatModel

log = logging.getLogger(__name__)

# Settings a single call may override; the rest describe the index and stay fixed.
PER_CALL_OPTIONS = {
    "retrieval_mode", "answer_sentences", "abstain_threshold", "relevance_check", "semantic_threshold",
    "llm_provider", "llm_temperature", "llm_max_tokens", "reranker",
}
NO_ANSWER = "NO_ANSWER"  # what prompts/system.md tells the model to reply when the sources don't answer


class Assistant:
    """Answers questions from one index; thread-safe and reusable."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._lock = threading.Lock()
        self._retriever: HybridRetriever | None = None
        self._manifest: store.Manifest | None = None
        self._checked_at = 0.0
        self._embed_model: WordLlamaEmbedding | None = None
        self._chat_models: dict[tuple, ChatModel | None] = {}
        self._reranker: Reranker | None = None

    @property
    def manifest(self) -> store.Manifest:
        """The manifest of the build currently answering."""
        self._current()
        assert self._manifest is not None
        return self._manifest

    @property
    def retriever(self) -> HybridRetriever:
        """The retriever of the build currently answering (opened on first use)."""
        return self._current()

    def papers(self) -> list[Paper]:
        """Every paper in the index currently answering."""
        return list(self._current().papers.values())

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
            retriever = HybridRetriever(collection, self.embed_model, self.settings.candidates, self.settings.rrf_k, self.settings.dense_weight)
        except AssistantError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(
                f"Index '{manifest.index}' in {store.location(self.settings)} could not be read ({exc}). "
                f"Rebuild it with: {store.rebuild_hint(self.settings)}"
            ) from exc
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

    def search(self, question: str, history: list[Any] | None = None, *, k: int | None = None, mode: str | None = None, reranker: str | None = None) -> Retrieval:
        """Retrieval only: the papers for `question`, best first."""
        text = clean_question(question, self.settings.max_question_chars)
        query = standalone_query(text, normalize_history(history, self.settings.max_question_chars))
        settings = self.settings.with_overrides(reranker=reranker) if reranker else self.settings
        return self._search(query, k or settings.top_k, mode or settings.retrieval_mode, settings)

    def _search(self, query: str, k: int, mode: str, settings: Settings) -> Retrieval:
        retriever = self._current()
        rerank = wanted(settings.reranker, len(retriever.papers), settings.rerank_min_papers)
        depth = max(k, settings.rerank_depth) if rerank else k
        try:
            retrieval = retriever.search(query, depth, mode)  # type: ignore[arg-type]
        except AssistantError:
            raise
        except Exception as exc:  # the build may have been pruned under us: reopen once
            log.warning("retrieval failed (%s); reopening the index", exc)
            retrieval = self._current(force=True).search(query, depth, mode)  # type: ignore[arg-type]
        if rerank:
            started = time.perf_counter()
            retrieval.papers = self.reranker.rerank(query, retrieval.papers)
            retrieval.timings["rerank"] = time.perf_counter() - started
            retrieval.timings["retrieve"] += retrieval.timings["rerank"]
        retrieval.papers = retrieval.papers[:k]
        return retrieval

    @property
    def reranker(self) -> Reranker:
        """The second-stage reranker (RERANKER), created on first use."""
        with self._lock:
            if self._reranker is None:
                self._reranker = Reranker(self.settings.cache_dir / f"embeddings-{RERANK_MODEL}.json", self.settings.rrf_k)
            return self._reranker

    def ask(self, question: str, history: list[Any] | None = None, *, k: int | None = None, **opts: Any) -> Answer:
        """Answer `question` (a follow-up when `history` is given) with cited papers."""
        answer: Answer | None = None
        for piece in self.stream(question, history, k=k, **opts):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None
        return answer

    def stream(self, question: str, history: list[Any] | None = None, *, k: int | None = None, **opts: Any) -> Iterator[str | Answer]:
        """Yield the answer text piece by piece as it is produced, then the final `Answer`.

        With a chat model the pieces are its tokens (citation numbers already
        renumbered); if the model fails at any point, a notice and an
        extractive answer follow, and the final `Answer` says why in `notice`.
        """
        unknown = set(opts) - PER_CALL_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; per-call options are {', '.join(sorted(PER_CALL_OPTIONS))}")
        settings = self.settings.with_overrides(**opts) if opts else self.settings
        if k is not None and not 1 <= k <= 50:
            raise AssistantError(f"k must be between 1 and 50, got {k}")
        text = clean_question(question, settings.max_question_chars)
        turns = normalize_history(history, settings.max_question_chars)
        self._current()
        started = time.perf_counter()
        timings: dict[str, float] = {}
        chat, notice = self._chat(settings)
        query = self._standalone(text, turns, chat, settings, timings)
        retrieval = self._search(query, k or settings.top_k, settings.retrieval_mode, settings)
        timings["retrieval"] = retrieval.timings.get("retrieve", 0.0)
        papers = retrieval.papers
        checked = time.perf_counter()
        carried = standalone_query(text, turns) if turns else query  # a rewritten follow-up is also judged with its turns
        verdict = judge(retrieval, settings, also=[carried] if carried != query else [])
        timings["relevance"] = time.perf_counter() - checked
        base = {"question": text, "sources": papers, "timings": timings, "relevance": verdict.scores()}

        if not verdict.answerable:
            body = self._no_answer(papers, settings)
            yield body
            timings["total"] = time.perf_counter() - started
            yield Answer(text=body, abstained=True, model=chat.name if chat else "extractive", **base)
            return

        if chat is not None:
            shown: list[str] = []
            try:
                for piece in self._generate(chat, text, turns, papers, settings, timings, started, verdict):
                    if isinstance(piece, Answer):
                        piece.question, piece.sources, piece.timings, piece.relevance = text, papers, timings, base["relevance"]
                        timings["total"] = time.perf_counter() - started
                        yield piece
                        return
                    shown.append(piece)
                    yield piece
            except ModelError as exc:
                notice = exc.reason
                log.warning("chat model failed, answering extractively: %s", exc.reason)
                if shown:
                    yield "\n\n"
            timings.pop("first_token", None)

        prefix = render("fallback_notice", settings.prompts_dir, reason=notice) + "\n\n" if notice else ""
        if prefix:
            yield prefix
        answer_started = time.perf_counter()
        quotes = extractive.select(query, papers, self._current().sentences, settings.answer_sentences)
        pieces = []
        for piece in extractive.render(quotes):
            timings.setdefault("first_token", time.perf_counter() - started)
            pieces.append(piece)
            yield piece
        timings["answer"] = time.perf_counter() - answer_started
        timings["total"] = time.perf_counter() - started
        cited = [papers[i] for i in extractive.cited_order(quotes)]
        yield Answer(text=prefix + "".join(pieces).strip(), citations=cited, model="extractive", notice=notice, **base)

    def _chat(self, settings: Settings) -> tuple[ChatModel | None, str | None]:
        """The chat model for these settings (cached), or None and why not; a dead embedded server is restarted."""
        key = (settings.llm_provider, settings.openai_base_url, settings.llm_model, settings.llm_temperature, settings.llm_max_tokens, settings.llm_timeout_s, settings.llm_max_retries)
        crashed = provider_name(settings) == "local" and local_model.exited()
        with self._lock:
            if key in self._chat_models and not crashed:
                return self._chat_models[key], None
        try:
            model = chat_model(settings)
        except ModelError as exc:
            return None, exc.reason
        with self._lock:
            self._chat_models[key] = model
        return model, None

    def _standalone(self, text: str, turns: list[Message], chat: ChatModel | None, settings: Settings, timings: dict[str, float]) -> str:
        """The question to retrieve with: rewritten by the chat model for a follow-up, else turns + question."""
        if not turns:
            return text
        if chat is not None:
            started = time.perf_counter()
            try:
                rewritten = chat.complete(condense_messages(text, turns, settings.prompts_dir))
                timings["condense"] = time.perf_counter() - started
                if rewritten and len(rewritten) <= settings.max_question_chars:
                    return clean_text(rewritten)
            except ModelError as exc:
                log.warning("could not rewrite the follow-up (%s); using the conversation's terms", exc.reason)
        return standalone_query(text, turns)

    def _generate(
        self, chat: ChatModel, text: str, turns: list[Message], papers: list[Paper], settings: Settings, timings: dict[str, float], started: float, verdict: Verdict
    ) -> Iterator[str | Answer]:
        """Stream the chat model's answer with renumbered citations, then yield the checked `Answer`.

        Raises `ModelError` (so the caller answers extractively) when the
        answer is unusable: no text, citations none of which the cited
        abstracts support, or a refusal although retrieval is confident.
        """
        budget = settings.local_context_tokens if provider_name(settings) == "local" else settings.context_tokens
        prompt = build_prompt(text, turns, papers, budget, settings.prompts_dir)
        tracker = CitationTracker(len(prompt.papers))
        generation_started = time.perf_counter()
        held: str | None = ""  # the first characters wait until we know the model is not saying NO_ANSWER
        pieces: list[str] = []
        for token in chat.stream(prompt.messages):
            timings.setdefault("first_token", time.perf_counter() - started)
            if held is not None:
                held += token
                if NO_ANSWER.startswith(held.lstrip()) or held.lstrip().startswith(NO_ANSWER):
                    continue
                token, held = held, None
            out = tracker.feed(token)
            if out:
                pieces.append(out)
                yield out
        if held is not None and held.strip().startswith(NO_ANSWER):
            if verdict.confident(settings.confident_relevance):
                raise ModelError(f"the model declined, but the best abstracts match the question ({verdict.describe()})")
            body = self._no_answer(papers, settings)
            yield body
            yield Answer(text=body, abstained=True, model=chat.name)
            return
        rest = tracker.feed(held) if held else ""
        rest += tracker.flush()
        if rest:
            pieces.append(rest)
            yield rest
        timings["answer"] = time.perf_counter() - generation_started
        body = "".join(pieces).strip()
        sentences = claims(body)
        if not sentences:
            raise ModelError(f"the model '{chat.name}' returned no usable answer text")
        citations = [prompt.papers[i] for i in tracker.order]
        unsupported, ungrounded = check_support(sentences, citations, self._current().sentences)
        cited_claims = sum(len(set(numbers)) for _, numbers in sentences)
        if unsupported and len(unsupported) >= cited_claims:
            raise ModelError("none of the model's citations is supported by the abstract it cites")
        yield Answer(
            text=body,
            citations=citations,
            model=chat.name,
            unsupported=[u.__dict__ for u in unsupported],
            ungrounded=ungrounded,
            invalid_citations=tracker.invalid,
        )

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
