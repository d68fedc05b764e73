"""`Assistant`: the question pipeline over an open index, shared by the API, CLI, UI and evaluation.

clean question → standalone query → retrieve (`retrieve.py`) → judge
(`relevance.py`) → answer (`answerers.py`) → `Answer` (`record.py`). The
index handle follows newer builds committed by `assistant index` in another
process, so re-indexing never interrupts answering.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from assistant.answer import comparing, extractive, listing
from assistant.answer import table as tables
from assistant.answer.answerers import Answerer, Chat, ChatAnswerer, ExtractiveAnswerer, WithFallback, no_answer_text
from assistant.answer.citations import passages
from assistant.answer.reading import ReadingAnswerer
from assistant.answer.record import Draft, QuestionRecord
from assistant.answer.result import Answer, Evidence
from assistant.chat.providers import provider_name
from assistant.errors import (
    AssistantError,
    ModelError,
    QuestionError,
    StoreUnavailableError,
    component_failure,
    native_panic,
)
from assistant.indexing import store
from assistant.indexing.store import Manifest
from assistant.infra.deadline import Deadline
from assistant.infra.loading import Lazy
from assistant.ingest.papers import Paper
from assistant.models.encoders import (
    ArrayEmbedding,
    MPNetInt8Embedding,
    load_encoder,
    question_reader,
    reader_precision,
)
from assistant.models.reader import Reader, reader_for, wanted
from assistant.options import PER_CALL_SETTINGS, AskOptions
from assistant.retrieval.builds import Build, IndexHandle
from assistant.retrieval.filters import Filters
from assistant.retrieval.hybrid import RANKING_DEPTH, Retrieval
from assistant.retrieval.relevance import E5Scorer, judge, settled
from assistant.retrieval.search import retrieve
from assistant.settings import Settings
from assistant.text import details
from assistant.text.questions import (
    FEW_TOPIC_WORDS,
    Message,
    about_several_papers,
    asks_for_several,
    asks_for_some_of_them,
    clean_question,
    content_text,
    described_one,
    described_paper,
    has_own_topic,
    may_be_new,
    moves_on,
    normalize_history,
    placed_one,
    points_back_in_itself,
    standalone_query,
    topic_words,
    with_earlier_turns,
)
from assistant.text.topics import closing_application, lacks_application, share_used
from assistant.text.words import GENERIC_NAMES, compact, names_in

log = logging.getLogger(__name__)
_SWITCH_CANDIDATES = 3  # papers a follow-up on a new subject ("anything like that for X?") is matched against
_OWN_WORDS = 0.5  # share of a question's own words a paper must use to be what it asks about



class Assistant:
    """Answers questions from one index; thread-safe and reusable.

    Models are passed in or made from `settings` on first use: `chat` (any
    object with the `answerers.Chat` shape) answers instead of the configured
    provider, except where a call asks for `llm_provider="extractive"`.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        chat: Chat | None = None,
        embedder: ArrayEmbedding | None = None,
        sentence_model: ArrayEmbedding | None = None,
        scorer: E5Scorer | None = None,
        reranker: Reader | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self._lock = threading.Lock()
        self._chat = chat
        self._chat_models: dict[tuple, Chat | None] = {}
        # the index's model (EMBED_MODEL) embeds questions; WordLlama scores sentences (snippets, quotes, citation support)
        self.embedder = Lazy(lambda: embedder or load_encoder(self.settings.embed_model, self.settings.model_dir))
        self.sentence_model = Lazy(lambda: sentence_model or load_encoder("wordllama", self.settings.model_dir))
        self.reader_model = Lazy(lambda: question_reader(self.settings.model_dir, self.settings.reader_precision))
        # abstracts without a vector yet (`warm`): the int8 copy where a build would use it, else the questions' model
        abstracts = Lazy(lambda: MPNetInt8Embedding(self.settings.model_dir)
                         if reader_precision(self.settings.reader_precision) == "int8" else self.reader_model.get())
        self.reranker = Lazy(lambda: reranker or reader_for(self.settings, abstracts.get, self.reader_model.get))
        self.scorer = scorer or E5Scorer()
        self.index = IndexHandle(self.settings, self.embedder.get, self.sentence_model.get)
        self.answering = Answering()

    @property
    def manifest(self) -> Manifest:
        """The manifest of the build currently answering."""
        return self.index.current().manifest

    def check_store(self) -> None:
        """Raise `StoreDamagedError` if the store fails SQLite's check (cached until the file changes), so a health
        probe reports a store that can no longer answer even while the build it opened before stays in memory."""
        store.check_intact(self.settings)

    def papers(self) -> list[Paper]:
        """Every paper in the index currently answering."""
        return list(self.index.current().papers.scan())

    def paper(self, paper_id: str) -> Paper | None:
        """One paper of the index currently answering, by id."""
        return self.index.current().papers.get(paper_id)

    def check_question(self, question: str) -> str:
        """The question as it will be answered (control characters removed, trimmed); `QuestionError` if empty or too long."""
        return clean_question(question, self.settings.max_question_chars)

    @property
    def provider(self) -> str:
        """The configured chat-model provider made concrete (`auto` resolved): openai, openai-compatible, local or extractive."""
        return provider_name(self.settings)

    def index_names(self) -> list[str]:
        """The indexes in this assistant's store with a complete build, by name."""
        return store.index_names(store.connect(self.settings))

    def manifests(self) -> dict[str, Manifest]:
        """Each index of this store with a complete build, by name, with the manifest of its newest build."""
        client = store.connect(self.settings)
        found = {name: store.find_active(client, self.settings.with_overrides(collection=name)) for name in store.index_names(client)}
        return {name: build[1] for name, build in found.items() if build}

    def sibling(self, collection: str) -> Assistant:
        """An assistant over another index of the same store, sharing this one's loaded models where they fit.

        The other index may have been built with another embedding model or chunking: its manifest says which.
        """
        found = store.find_active(store.connect(self.settings), self.settings.with_overrides(collection=collection))
        manifest = found[1] if found else None
        shape = {"embed_model": manifest.embed_model, "chunk_size": manifest.chunk_size, "chunk_overlap": manifest.chunk_overlap} if manifest else {}
        settings = self.settings.with_overrides(collection=collection, **shape)
        same_model = settings.embed_model == self.settings.embed_model
        return Assistant(settings, chat=self._chat, embedder=self.embedder.get() if same_model else None,
                         sentence_model=self.sentence_model.get(), scorer=self.scorer)

    def answering_model(self) -> str:
        """Who writes answers with the current settings: the chat model's name once started, else the provider."""
        if self.settings.llm_provider == "extractive":
            return "extractive"
        if self._chat is not None:
            return self._chat.name
        with self._lock:
            started = [model.name for model in self._chat_models.values() if model is not None]
        return started[0] if started else f"{provider_name(self.settings)} (starts with the first question)"

    def search(
        self, question: str, history: list[Any] | None = None, *, k: int | None = None, mode: str | None = None, reranker: str | None = None,
        filters: Filters | dict[str, Any] | None = None,
    ) -> Retrieval:
        """Retrieval only: the papers for `question` (with earlier user turns as context), best first."""
        text = clean_question(question, self.settings.max_question_chars)
        query = standalone_query(text, normalize_history(history, self.settings.max_question_chars))
        settings = self.settings.with_overrides(reranker=reranker) if reranker else self.settings
        build = self.index.current()
        chosen = call_options(None, k, filters)
        return self._retrieve(build, query, chosen.k or settings.top_k, mode or settings.retrieval_mode, settings, _allowed(build, chosen.filters))

    def _retrieve(self, build: Build, query: str, k: int, mode: str, settings: Settings, allowed: frozenset[str] | None = None) -> Retrieval:
        reranker = self.reranker.get() if wanted(settings, len(build.papers)) else None

        def run(build: Build) -> Retrieval:
            return retrieve(  # type: ignore[arg-type]
                build, query, k, mode, RANKING_DEPTH, reranker, settings.rerank_depth, allowed, settled(settings), settings.reader_weight,
            )

        try:
            return run(build)
        except AssistantError:
            raise
        except BaseException as exc:
            if component_failure(exc):
                store.check_intact(settings)
            if native_panic(exc):
                raise StoreUnavailableError(f"The index store failed while searching ({exc}). {store.damaged_hint(settings)}") from exc
            if not isinstance(exc, Exception):
                raise
            # the build may have been pruned under us: reopen once
            log.warning("retrieval failed (%s); reopening the index", exc)
            return run(self.index.current(reopen=True))

    def ask(
        self, question: str, history: list[Any] | None = None, *, k: int | None = None, filters: Filters | dict[str, Any] | None = None,
        options: AskOptions | None = None, **opts: Any,
    ) -> Answer:
        """Answer `question` (a follow-up when `history` is given) with cited papers, from the papers `filters` admit.

        Per-call options come as `options` or as keywords (`k`, `filters`, and the settings in `PER_CALL_SETTINGS`).
        """
        answer: Answer | None = None
        for piece in self.stream(question, history, k=k, filters=filters, options=options, evidence=False, **opts):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None
        return answer

    def stream(
        self, question: str, history: list[Any] | None = None, *, k: int | None = None, filters: Filters | dict[str, Any] | None = None,
        options: AskOptions | None = None, evidence: bool = True, **opts: Any,
    ) -> Iterator[str | Evidence | Answer]:
        """Yield the answer text piece by piece as it is produced, then the final `Answer`.

        The pipeline: clean → standalone query → retrieve → judge → answer.
        With a chat model, an `Evidence` (the abstracts' best sentences, quoted
        with [n]) comes first, within milliseconds; the pieces after it are the
        model's tokens, numbered as the evidence is. If the model fails at any
        point, what it wrote stays, a notice and an extractive answer follow,
        and the final `Answer` says why in `notice`. `evidence=False` (what a
        caller that shows only the answer wants, such as `ask()` or the
        OpenAI endpoint): no `Evidence`, and the model numbers from [1].
        """
        with self.answering.one():
            yield from self._stream(question, history, call_options(options, k, filters, opts), evidence)

    def _stream(
        self, question: str, history: list[Any] | None, options: AskOptions, evidence: bool,
    ) -> Iterator[str | Evidence | Answer]:
        overrides = options.overrides()
        settings = self.settings.with_overrides(**overrides) if overrides else self.settings
        k, filters = options.k, options.filters
        record = QuestionRecord(clean_question(question, settings.max_question_chars), normalize_history(history, settings.max_question_chars))
        several = asks_for_several(record.question)
        k = k or (settings.list_top_k if several else settings.top_k)
        chosen = comparing.chosen_to_compare(record.question, filters)
        k = max(k, len(chosen))
        build = self.index.current()
        record.started = time.perf_counter()
        chat, reason = self._chat_for(settings)
        record.deadline = Deadline(settings.llm_timeout_s)
        # the conversation, read without a model call; papers the reader chose are "they" whatever came before
        moving = moves_on(record.question)  # "what about for tabular data?": searched alone first, then with the conversation
        record.query = record.question if chosen or moving else standalone_query(record.question, record.turns)
        allowed = _allowed(build, filters)
        if allowed is not None and filters is not None:  # the filters chose the papers: their words are not the topic
            record.query = filters.without_filter_words(record.query)
        self._search(record, build, record.query, k, settings, allowed)
        if allowed is not None and not record.verdict.answerable and record.papers and share_used(record.papers[0].abstract, record.query) >= _OWN_WORDS:
            # among the papers the filters admit, the best one uses most of the question's words: the filter
            # narrowed the search, so the judge's corpus-wide bar does not decline it (an unsure match)
            record.verdict = replace(record.verdict, answerable=True, unchecked=True)
        if record.turns and not chosen and record.query == record.question and (not record.verdict.answerable or moving):
            # a question the words of which read as new ("And what data are the experiments on?") but which nothing
            # answers alone, or one that moves on ("what about for tabular data?"), is read with the conversation, and
            # kept that way if one of the papers found so uses most of its own words, and no fewer than the one found
            # alone ("thanks. what about papers on continual learning?" after LLM watermarking is a new topic)
            alone = (record.retrieval, record.verdict)
            found_alone = share_used(record.papers[0].abstract, record.question) if record.verdict.answerable and record.papers else 0.0
            self._search(record, build, with_earlier_turns(record.question, record.turns), k, settings, allowed)
            subject, share = _uses_own_words(record.question, record.papers)
            if record.verdict.answerable and share >= max(_OWN_WORDS, found_alone):  # the paper it is about leads the sources too
                record.retrieval = _led_by(record.retrieval, record.papers[subject], k)
                record.query, record.carried, record.subject = record.retrieval.query, True, 0
            else:
                record.retrieval, record.verdict = alone
        elif record.turns and record.query != record.question:
            thread = None if asks_for_some_of_them(record.question) else self._thread(record, build, k, settings, allowed)
            self._switch_topic(record, build, thread[0] if thread else None, k, settings, allowed)
            if record.query != record.question and thread:
                self._keep_thread(record, *thread, k, settings)
                comparing.compare_with_conversation(record, build, allowed)
        if record.read_alone and several:
            listing.list_named(record, build, allowed)
        if chosen and record.papers:  # the reader ticked these papers to compare: each is quoted, whatever the question's words
            record.verdict = replace(record.verdict, answerable=True, unchecked=True)
            record.compared, record.chosen = list(range(len(record.papers))), True
        elif record.read_alone and record.papers and not record.listing:
            listing.qualify_listed(record, build, allowed)
            comparing.compare_sides(record, build, allowed, settings.retrieval_mode)
            if record.sides_found and not record.verdict.answerable:  # each side is a paper, though no paper holds them all
                record.verdict = replace(record.verdict, answerable=True, unchecked=True)

        # a chat model reads the sources and decides; before it, only clearly off-topic questions stop here
        reads = chat is not None and chat.refusals_final
        verdict = record.verdict
        admitted = verdict.lexical >= settings.prefilter_threshold and not verdict.unmentioned if reads else verdict.answerable
        admitted = admitted or record.chosen or record.sides_found
        if not admitted:
            body = no_answer_text(record.papers, settings.prompts_dir, verdict.unmentioned, verdict.lacking)
            yield body
            yield record.to_answer(Draft(text=body, model=chat.name if chat else "extractive", abstained=True))
            return
        self._choose_subject(record, build)
        self._check_details(record, build)
        quoter = ExtractiveAnswerer(build.sentences, settings.answer_sentences, settings.prompts_dir)
        answerer = self._answerer(chat, reason, quoter, build, settings)
        if chat is not None and evidence:  # the quotes first, within milliseconds; the model's answer follows with the same numbers
            record.evidence = quoter.quotes(record)
            quoted = record.evidence.citations
            yield Evidence(record.evidence.text, quoted, record.sources(quoted), record.evidence.passages, chat.ahead(),
                           _table(record, quoted, build, settings))
        for piece in answerer.answer(record):
            if isinstance(piece, Draft):
                if piece.citations and not piece.passages:  # quotes know theirs; a model's claims are matched to the abstracts
                    piece.passages = passages(piece.text, piece.citations, build.sentences)
                if not piece.abstained:
                    piece.table = _table(record, piece.citations, build, settings)
                yield record.to_answer(piece)
            else:
                yield piece

    def _search(self, record: QuestionRecord, build: Build, query: str, k: int, settings: Settings, allowed: frozenset[str] | None) -> None:
        """Retrieve for `query` and judge whether the papers answer it; in a conversation where `query` differs from
        the question's usual reading (`standalone_query`), that reading counts in the judge's second opinion too."""
        record.retrieval = self._retrieve(build, query, k, settings.retrieval_mode, settings, allowed)
        record.timings["retrieval"] = record.timings.get("retrieval", 0.0) + record.retrieval.timings.get("retrieve", 0.0)
        carried = standalone_query(record.question, record.turns) if record.turns else query
        with record.timed("relevance"):
            used_by = None if record.turns else _used_by_some(build)  # a topic typed alone, not a conversation's turns joined
            record.verdict = judge(record.retrieval, settings, self.scorer, also=[carried] if carried != query else [], used_by=used_by)

    def _switch_topic(
        self, record: QuestionRecord, build: Build, thread: Paper | None, k: int, settings: Settings, allowed: frozenset[str] | None,
    ) -> None:
        """A follow-up that asks about another paper is searched alone and kept so where what it found alone fits it
        better than the conversation's paper: one naming what that paper never mentions ("anything like that for CLIP
        prompt tuning?"), kept if the best paper found alone mentions every name; one saying more of its own, kept if it
        names that paper by title or authors ("How do Ahdritz et al. tell …"), or if it points back only through words
        of its own ("a memory layer storing word pairs oscillates when it is trained, why?") at a topic the
        conversation's paper mostly does not use, and the paper found alone uses more of it or the conversation's paper
        is not among those found alone (and declined where nothing answers it alone). The conversation's paper is
        `thread`, else (for "which of them …") the one of the first few papers that uses most of its topic turn's words."""
        topic = _topic_turn(record.turns)
        current = thread or (record.papers[_uses_own_words(topic, record.papers)[0]] if record.papers and topic else None)
        if current is None:
            return
        names = details.unmentioned_names(record.question, current.title_and_abstract)
        if not names and len(topic_words(record.question)) <= FEW_TOPIC_WORDS:
            return
        if comparing.sets_against_conversation(record.question):
            return  # "how does it compare with TopDis?": the conversation's paper is one side (`comparing.compare_with_conversation`)
        used = share_used(current.abstract, record.question)
        own = may_be_new(record.question) and used < _OWN_WORDS
        carried = (record.retrieval, record.verdict)
        self._search(record, build, record.question, k, settings, allowed)
        best = record.papers[0] if record.verdict.answerable and record.papers else None
        elsewhere = current.paper_id not in record.retrieval.ranking[:k]  # the conversation's paper is not among those found alone
        if best is None:
            new = own and elsewhere  # a new question nothing answers alone is not answered from an unrelated conversation's paper
        elif best.paper_id in record.retrieval.named and best.paper_id != current.paper_id:
            new = True  # it names another paper by its title or authors
        elif names:
            new = not details.unmentioned_names(record.question, best.title_and_abstract)
        else:
            new = own and (elsewhere or share_used(best.abstract, record.question) > used)
        if new:
            record.query = record.question
        else:
            record.retrieval, record.verdict = carried

    def _thread(self, record: QuestionRecord, build: Build, k: int, settings: Settings, allowed: frozenset[str] | None) -> tuple[Paper, Retrieval] | None:
        """The paper a follow-up that points back ("Did they release a dataset for it?") is about, and what its
        conversation's topic turn found alone: the paper the last answer since that turn led with (as the conversation
        shows it), else the one that turn asked alone is answered about. "The forward-only one" is the one of the topic
        turn's papers (as many as its answer showed) it describes; "the second one", the second of those the last answer
        showed."""
        topic = _topic_turn(record.turns)
        described, place = described_one(record.question), placed_one(record.question)
        depth = max(k, settings.list_top_k) if (described or place is not None) and about_several_papers(topic) else k
        found = self._retrieve(build, topic, depth, settings.retrieval_mode, settings, allowed) if topic else None
        if not found or not found.papers or record.retrieval is None:
            return None
        shown = build.papers.shown(_last_answer(record.turns)) if place is not None else []
        if place is not None and -len(shown) <= place < len(shown):  # "the second one" of those the last answer showed, in its order
            return _paper_in(found, shown[place], build), found
        picked = extractive.best_match(described, found.papers, build.sentences, record.question) if described else None
        if picked is not None:
            return found.papers[picked], found
        # the paper the last answer since the topic turn led with ("which one does docking?" picked one)
        led = build.papers.shown(_last_answer(_since(topic, record.turns)))[:1]
        return (_paper_in(found, led[0], build) if led else found.papers[_led_with(topic, found, build)]), found

    def _keep_thread(self, record: QuestionRecord, thread: Paper, found: Retrieval, k: int, settings: Settings) -> None:
        """A follow-up that points back is about its conversation's paper (`_thread`). The turns' words together can
        rank others above it in a large index (over the whole conference a distillation paper came before DRCT), so it
        goes first."""
        record.retrieval = _led_by(record.retrieval, thread, k)
        record.thread = True
        if not record.verdict.answerable and (not record.verdict.unmentioned or not points_back_in_itself(record.question)):
            # the topic turn alone is answered about this paper, so a follow-up on it is too ("which models did they
            # test it on?"), though both turns' words together match it less well; a detail it lacks makes it partial,
            # and so does a name it never mentions where the question points back at it ("does their augmentation help
            # on benchmarks like Cora?"), not where it may be a new question ("… when it also obeys the HJB equation")
            with record.timed("relevance"):
                alone = judge(found, settings, self.scorer)
            if alone.answerable:
                record.verdict = alone

    def _choose_subject(self, record: QuestionRecord, build: Build) -> None:
        """The paper the question is about: for a question read with the conversation only after it found nothing
        alone ("And for streaming data?"), the one of the first few that uses most of its own words; for a follow-up,
        the paper its latest earlier turn with a topic of its own is answered about (`_keep_thread` put it first; an
        older turn's topic is past); else one it names; else the paper holding the sentence that best matches the
        query, not always the top-ranked one."""
        if not record.papers:
            return
        if record.carried or record.listing:  # chosen when the conversation's reading was kept; a listing's come in its order
            return
        if not record.read_alone:  # a follow-up: "they" are the paper that its latest turn with a topic of its own was about
            topic = _topic_turn(record.turns)
            record.subject = 0 if record.thread or not topic else _uses_own_words(topic, record.papers)[0]
            return
        record.subject = _subject_of(record.query, record.retrieval, build)

    def _check_details(self, record: QuestionRecord, build: Build) -> None:
        """Find what the question asks that its subject paper's abstract does not state (`record.missing`)."""
        if not record.papers or record.listing or record.compared:  # a listing's papers state what it asks; a comparison's are several
            return
        paper = record.papers[record.subject]
        record.asks_of_record = details.record_asks(record.question)
        asks = record.asks = details.asks(record.question)
        others = [p.title_and_abstract for i, p in enumerate(record.papers) if i in record.named and i != record.subject]
        unknown = [name for name in record.retrieval.unknown if name in record.question]  # not an earlier turn's
        unmentioned = details.unmentioned_names(record.question, paper.title_and_abstract, others, unknown)
        application = closing_application(record.question) if record.subject in record.named and not record.turns else ""
        if application and lacks_application(paper.title_and_abstract, application, _used_by_some(build)):
            # "fair off-policy learning for medical treatment recommendations" names the fair off-policy paper by its title,
            # which never mentions medicine: the paper is about this, the application asked is not in its abstract
            unmentioned.append(details.Ask("mention", (application.lower(),), f"anything about {application}"))
        sentences = list(build.sentences.split(paper.abstract))  # the texts alone: no sentence vectors are needed here
        quoting = details.quoting(record.question, sentences)  # "which model gets up to 2.19% better?": where it says 2.19%
        if not asks and not unmentioned and not quoting:
            return
        findings = details.check(record.question, asks, sentences)
        record.missing, record.detail_sentences = findings.missing + unmentioned, sorted({*findings.stated, *quoting})

    def _answerer(self, chat: Chat | None, reason: str | None, extractive: ExtractiveAnswerer, build: Build, settings: Settings) -> Answerer:
        if chat is None and reason is None:
            return extractive
        embedded = self._chat is None and provider_name(settings) == "local"
        sentences = settings.local_source_sentences if embedded else settings.source_sentences
        primary: Answerer | None = None
        if chat is not None:
            primary = writer = ChatAnswerer(chat, build.sentences, settings.prompts_dir, settings.confident_relevance, sentences)
            if settings.reading:
                writes = settings.local_writes or not embedded
                quoter = None if chat.refusals_final else extractive  # a weak reader's sentences are added to the quotes
                primary = ReadingAnswerer(chat, writer, build.sentences, settings.prompts_dir, settings.confident_relevance, sentences, writes, quoter)
        return WithFallback(primary, extractive, settings.prompts_dir, reason)

    def warm(self, stop: threading.Event | None = None) -> None:
        """Open the index and load what a first question needs, the configured chat model included.

        For the embedded model that starts its llama.cpp server (~15 s), so `assistant serve` calls this in the
        background at start instead of making the first question wait; setting `stop` ends the reader's part early,
        and the reader waits while questions are being answered.
        """
        build = self.index.current()  # loads the question and sentence models with it
        _, reason = self._chat_for(self.settings)
        if reason:
            log.warning("chat model unavailable (%s); answers will quote the abstracts", reason)
        if wanted(self.settings, len(build.papers)):
            # an index built without the reader's vectors (`assistant serve`'s first start, an older version) gets them now
            try:
                added = self.reranker.get().warm([paper.abstract for paper in build.papers.scan()], stop=stop, idle=self.answering.idle)
            except Exception as exc:
                log.warning("the reader is unavailable (%s); answers use the first stage's ranking", exc)
            else:
                if added:
                    log.info("the reader embedded %d abstracts", added)

    def _chat_for(self, settings: Settings) -> tuple[Chat | None, str | None]:
        """The chat model for these settings (cached), or None and why not; a dead local server is restarted."""
        if settings.llm_provider == "extractive":
            return None, None
        if self._chat is not None:
            return self._chat, None
        from assistant.chat.providers import chat_model  # the OpenAI SDK loads only when a model is used

        key = (settings.llm_provider, settings.openai_base_url, settings.llm_model, settings.llm_temperature, settings.llm_max_tokens, settings.llm_timeout_s, settings.llm_max_retries)
        with self._lock:
            cached = self._chat_models.get(key)
            if key in self._chat_models and (cached is None or cached.alive()):
                return cached, None
        try:
            model = chat_model(settings)
        except ModelError as exc:
            return None, exc.reason
        with self._lock:
            self._chat_models[key] = model
        return model, None



class Answering:
    """The questions being answered now; `idle` is set while there are none (background work waits for it)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()

    @contextmanager
    def one(self) -> Iterator[None]:
        with self._lock:
            self._count += 1
            self.idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
                if not self._count:
                    self.idle.set()


def _used_by_some(build: Build) -> Callable[[str], float]:
    """The share of `build`'s chunks using a word (a stem)."""
    lexical = build.retriever.lexical
    return lambda word: lexical.chunks_using(word) / max(len(lexical), 1)


def _table(record: QuestionRecord, cited: list[Paper], build: Build, settings: Settings) -> tables.Table | None:
    """The cited papers side by side, when ANSWER_TABLE wants one for this question."""
    several = about_several_papers(record.question) or bool(record.listing)
    if not tables.wanted(settings.answer_table, len(cited), several):
        return None
    return tables.build(record.asked, cited, build.sentences.split)


def _subject_of(query: str, retrieval: Retrieval | None, build: Build) -> int:
    """The paper a question is answered about, as an index into `retrieval.papers`: the first it names, else the one
    holding the sentence that best matches it (not always the top-ranked one; among those writing every name the
    question uses, when the top-ranked one does)."""
    if retrieval is None or not retrieval.papers:
        return 0
    named = [i for i, paper in enumerate(retrieval.papers) if paper.paper_id in retrieval.named]
    if named:
        return named[0]
    quoting = [i for i, paper in enumerate(retrieval.papers) if details.quotes_number(query, paper.abstract)]
    if len(quoting) == 1:  # "how long does Stable Audio take to generate 95 seconds of audio?": the one writing "95 sec"
        return quoting[0]
    if described := described_paper(query):  # "which LLMs did the theory of mind representation paper probe?": the paper
        # holding the whole description, not one stating LLMs (a position paper on LLM claims)
        lexical = build.retriever.lexical
        covered = lexical.coverages(build.retriever.terms(described), [p.paper_id for p in retrieval.papers])
        fitting = [i for i, paper in enumerate(retrieval.papers) if covered.get(paper.paper_id) == 1.0]
        if fitting:
            return fitting[0]
    writing = _writing_names(query, retrieval.papers)
    candidates = writing if 0 in writing else list(range(len(retrieval.papers)))  # the first ranked writes them: not one that does not
    best = extractive.select(query, [retrieval.papers[i] for i in candidates], build.sentences, 1)
    return candidates[best[0].paper] if best else 0


def _led_with(question: str, retrieval: Retrieval, build: Build) -> int:
    """The paper the answer to `question`, asked alone, leads with: the one ranked first (`extractive.ranked_first_leads`),
    else the one it is answered about (`_subject_of`)."""
    if extractive.ranked_first_leads(question, bool(retrieval.named), bool(details.asks(question))):
        return 0
    return _subject_of(question, retrieval, build)


def _paper_in(retrieval: Retrieval, paper_id: str, build: Build) -> Paper:
    """The paper `paper_id` as `retrieval` found it, else from the index (with no passage matched)."""
    return next((p for p in retrieval.papers if p.paper_id == paper_id), None) or build.papers[paper_id].with_match("", 0.0)


def _writing_names(query: str, papers: list[Paper]) -> list[int]:
    """The papers that write every name the question uses, where it uses one ("how is the Deep LTMLE transformer
    trained?": the paper ranked first writes LTMLE; one on "Trainable Transformer in Transformer" held the sentence
    closest to the question). Where the first ranked lacks one, the name may be the detail asked ("what PSNR does …
    reach?"), and the papers writing it need not be the one described."""
    names = [compact(name) for name in names_in(query) if name not in GENERIC_NAMES]
    if not names:
        return []
    return [i for i, paper in enumerate(papers) if all(name in compact(paper.title_and_abstract) for name in names)]


def _topic_turn(turns: list[Message]) -> str:
    """The latest user turn that named its own topic ("What's the core idea of that method?" names none; the first
    always does, whatever its words: "… generators they never saw"), else the latest user turn; "" when there is none."""
    asked = [m["content"] for m in turns if m["role"] == "user"]
    own = [text for i, text in enumerate(asked) if i == 0 or has_own_topic(text)]
    return (own or asked or [""])[-1]


def _led_by(retrieval: Retrieval, lead: Paper, k: int) -> Retrieval:
    """`retrieval` with `lead` first among its papers (as many as before, at least `k`) and in its ranking, the rest in
    their order: the paper a conversation is about leads the sources and what an evaluation scores."""
    papers = [lead, *(p for p in retrieval.papers if p.paper_id != lead.paper_id)][: max(k, len(retrieval.papers))]
    ranking = [lead.paper_id, *(p for p in retrieval.ranking if p != lead.paper_id)]
    return replace(retrieval, papers=papers, ranking=ranking)


def _last_answer(turns: list[Message]) -> str:
    """The latest assistant turn's text, "" when the conversation holds none (a client may send user turns alone)."""
    return next((m["content"] for m in reversed(turns) if m["role"] == "assistant"), "")


def _since(question: str, turns: list[Message]) -> list[Message]:
    """The turns from the latest user turn `question` on (all of them when it is not there)."""
    at = next((i for i in reversed(range(len(turns))) if turns[i]["role"] == "user" and turns[i]["content"] == question), 0)
    return turns[at:]


def _uses_own_words(question: str, papers: list[Paper]) -> tuple[int, float]:
    """Which of the first few papers uses most of `question`'s own words, and what share of them."""
    shares = [share_used(paper.abstract, question) for paper in papers[:_SWITCH_CANDIDATES]]
    best = max(range(len(shares)), key=lambda i: (shares[i], -i)) if shares else 0
    return best, shares[best] if shares else 0.0


def message_text(content: Any) -> str:
    """A chat message's text, given as a string or as a list of content parts (OpenAI's, Gradio's): for front ends."""
    return content_text(content) or ""


def call_options(options: AskOptions | None, k: Any = None, filters: Filters | dict[str, Any] | None = None, opts: dict[str, Any] | None = None) -> AskOptions:
    """One call's options, from an `AskOptions` or from keywords; a clear error for a bad value, TypeError for an unknown name."""
    opts = dict(opts or {})
    unknown = set(opts) - set(PER_CALL_SETTINGS)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; per-call options are {', '.join(sorted(PER_CALL_SETTINGS))}")
    if options is not None:
        given = options.model_dump(exclude_unset=True)
        opts = {**given, **opts, **{key: value for key, value in (("k", k), ("filters", filters)) if value is not None}}
    else:
        opts = {**opts, "k": k, "filters": filters}
    if isinstance(opts.get("k"), str) and opts["k"].strip().isdigit():
        opts["k"] = int(opts["k"])  # "3" from a form or a query string
    try:
        return AskOptions.model_validate(opts)
    except ValidationError as exc:
        for error in exc.errors():
            where = error["loc"][0]
            if where == "k":
                raise AssistantError(f"k must be a whole number between 1 and 50, got {opts['k']!r}") from exc
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise QuestionError(problems) from exc


def _allowed(build: Build, filters: Filters | None) -> frozenset[str] | None:
    """The papers `filters` admit (None: all of them); a clear error when they admit none."""
    if filters is None or not filters.active():
        return None
    allowed = build.admitted(filters)
    if not allowed:
        raise QuestionError(f"No paper in the index matches the filters ({filters.describe()}).")
    return allowed


_default: Lazy[Assistant] = Lazy(Assistant)


def default_assistant() -> Assistant:
    """The process-wide `Assistant` built from the environment and `.env`, created on first use."""
    return _default.get()


def ask(
    question: str, history: list[Any] | None = None, *, k: int | None = None, filters: Filters | dict[str, Any] | None = None,
    options: AskOptions | None = None, **opts: Any,
) -> Answer:
    """Answer `question` with the default assistant; see `Assistant.ask`."""
    return default_assistant().ask(question, history, k=k, filters=filters, options=options, **opts)
