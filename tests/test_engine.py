"""The question pipeline with a scripted chat model plugged in: refusals, bad citations, failures mid-answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from bm25s.tokenization import convert_tokenized_to_string_list

from assistant.answer.result import Answer, Evidence
from assistant.engine import Assistant
from assistant.errors import QuestionError
from assistant.indexing import lexical as lexical_module
from assistant.indexing.indexer import build_index
from assistant.retrieval import hybrid as retrieve
from assistant.retrieval.filters import Filters
from assistant.settings import Settings
from tests.conftest import GRAPHS, ROBOTS, SHARED_DATA, SOLAR, SPIKING, conference_subset, make_settings, titled_corpus
from tests.fake_chat import ScriptedChat

QUESTION = "How does SpikePrune prune spiking neural networks?"


@pytest.fixture
def indexed(small_corpus: Path, tmp_path: Path) -> Settings:
    settings = make_settings(tmp_path, llm_provider="auto", reading=False)  # the written answer; tests/test_reading.py reads first
    build_index(settings, small_corpus, progress=False)
    return settings


def _stream(assistant: Assistant, question: str = QUESTION, **opts: object) -> tuple[str, Answer]:
    pieces = list(assistant.stream(question, **opts))
    assert isinstance(pieces[-1], Answer)
    return "".join(p for p in pieces[:-1] if isinstance(p, str)), pieces[-1]


def test_an_injected_chat_model_answers_and_extractive_calls_bypass_it(indexed: Settings) -> None:
    chat = ScriptedChat()
    assistant = Assistant(indexed, chat=chat)
    shown, answer = _stream(assistant)
    assert answer.text == shown.strip() == chat.reply and answer.model == chat.name and answer.notice is None
    assert [p.abstract for p in answer.citations] == [SPIKING]
    assert answer.timings["first_token"] <= answer.timings["total"]
    assert answer.ranking[: len(answer.sources)] == [p.paper_id for p in answer.sources]
    quoted = assistant.ask(QUESTION, llm_provider="extractive")
    assert quoted.model == "extractive" and len(chat.requests) == 1


def test_the_context_budget_comes_from_the_model(indexed: Settings) -> None:
    roomy, tight = ScriptedChat(context_tokens=3000), ScriptedChat(context_tokens=300)
    Assistant(indexed, chat=roomy).ask(QUESTION)
    Assistant(indexed, chat=tight).ask(QUESTION)
    sources = [request[-1]["content"].count("<source id=") for request in (roomy.requests[0], tight.requests[0])]
    assert sources[0] == 4 and sources[1] < sources[0]


def test_a_refusal_abstains_unless_retrieval_is_confident(indexed: Settings) -> None:
    chat = ScriptedChat(reply="NO_ANSWER")
    unsure = Assistant(indexed.with_overrides(confident_relevance=10.0, relevance_check="none"), chat=chat)
    shown, answer = _stream(unsure)
    assert answer.abstained and answer.model == chat.name and not answer.citations and "NO_ANSWER" not in shown
    overruled = Assistant(indexed, chat=chat).ask(QUESTION)
    assert not overruled.abstained and overruled.model == "extractive"
    assert overruled.notice and "declined" in overruled.notice and SPIKING.split(". ")[1] in overruled.text


def test_citations_no_cited_abstract_supports_fall_back_to_quotes(indexed: Settings) -> None:
    chat = ScriptedChat(reply="Forecasting solar farm output from satellite images cuts photovoltaic error [1].")
    answer = Assistant(indexed, chat=chat).ask(QUESTION)
    assert answer.model == "extractive" and answer.notice and "supported" in answer.notice
    assert [p.abstract for p in answer.citations][0] == SPIKING


def test_a_failure_mid_answer_keeps_what_was_shown_then_quotes(indexed: Settings) -> None:
    chat = ScriptedChat(reply="SpikePrune removes whole kernels of spiking networks [1]. It regrows some of them [1].", fail_after=9)
    shown, answer = _stream(Assistant(indexed, chat=chat))
    assert shown.startswith("SpikePrune removes whole") and "the connection dropped" in shown
    assert "It regrows" not in shown  # a sentence cut short was never checked, so never shown
    assert answer.notice == "the connection dropped" and answer.model == "extractive"
    assert answer.text == shown.strip() and "unfinished" in answer.text and "first_token" in answer.timings


def test_one_numbering_for_the_evidence_the_model_and_the_quotes_after_a_failure(indexed: Settings) -> None:
    """The evidence quoted SpikePrune as [1]; the model, citing GraphHop first, calls it [2]; the quotes after its failure keep [1]."""
    chat = ScriptedChat(reply="GraphHop rewires graphs with virtual nodes [2]. More words follow here", fail_after=8)
    pieces = list(Assistant(indexed, chat=chat).stream(QUESTION))
    evidence, answer = pieces[0], pieces[-1]
    assert isinstance(evidence, Evidence) and evidence.text.endswith("[1]") and [p.abstract for p in evidence.citations] == [SPIKING]
    shown = "".join(p for p in pieces if isinstance(p, str))
    assert answer.text == shown.strip() and answer.evidence == evidence.text
    assert [p.abstract for p in answer.citations] == [SPIKING, GRAPHS]
    head, tail = answer.text.split("unfinished")
    assert "[2]" in head and "[1]" in tail and "[2]" not in tail
    assert answer.timings["first_text"] < answer.timings["first_token"]  # the evidence came before the model's first word


def test_a_follow_up_is_read_with_the_conversation_without_a_model_call(indexed: Settings) -> None:
    """The model is asked once, for the answer: nothing waits on another model call before the first text."""
    chat = ScriptedChat(reply="GraphHop rewires graphs with virtual nodes [1].")
    history = ["Is there work on long-range dependencies in graph neural networks?"]
    answer = Assistant(indexed, chat=chat).ask("And how does it rewire them?", history)
    assert answer.query == f"{history[0]} And how does it rewire them?" and len(chat.requests) == 1
    assert answer.sources[0].abstract == GRAPHS and answer.citations[0].abstract == GRAPHS


def test_a_dead_model_is_replaced_on_the_next_question(indexed: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.chat import providers

    made: list[ScriptedChat] = []

    def fresh(settings: Settings) -> ScriptedChat:
        made.append(ScriptedChat())
        return made[-1]

    monkeypatch.setattr(providers, "chat_model", fresh)
    assistant = Assistant(indexed)
    assistant.ask(QUESTION)
    assistant.ask(QUESTION)
    assert len(made) == 1  # cached while alive
    made[0].healthy = False
    assert assistant.ask(QUESTION).notice is None and len(made) == 2


def test_a_detail_the_abstract_lacks_makes_the_answer_partial_in_both_modes(indexed: Settings) -> None:
    question = "How many GPU hours did training SpikePrune take, and which GPU was used?"
    quoted = Assistant(indexed).ask(question, llm_provider="extractive")
    assert quoted.partial and not quoted.abstained and quoted.missing == ["how many GPU hours", "which GPU"]
    assert [p.abstract for p in quoted.citations] == [SPIKING] and "does not state how many GPU hours or which GPU" in quoted.text
    assert quoted.to_dict()["partial"] is True
    chat = ScriptedChat(reply="SpikePrune prunes spiking networks, but its abstract does not report compute [1].")
    written = Assistant(indexed, chat=chat).ask(question)
    assert written.partial and written.model == chat.name and written.missing == ["how many GPU hours", "which GPU"]
    assert "does not state how many GPU hours or which GPU" in chat.requests[0][-1]["content"]


def test_a_detail_the_abstract_states_is_answered(indexed: Settings) -> None:
    answer = Assistant(indexed).ask("Which dataset was SpikePrune evaluated on?", llm_provider="extractive")
    assert not answer.partial and not answer.missing and "CIFAR" in answer.text


def test_a_model_saying_the_abstract_lacks_something_marks_the_answer_partial(indexed: Settings) -> None:
    chat = ScriptedChat(reply="SpikePrune prunes channels of spiking networks, but the abstract does not state its licence [1].")
    answer = Assistant(indexed, chat=chat).ask(QUESTION)
    assert answer.partial and not answer.abstained and answer.missing == []


def test_a_weak_readers_refusal_is_checked_against_the_e5_match(indexed: Settings) -> None:
    settings = indexed.with_overrides(confident_relevance=10.0, semantic_check_below=10.0)  # only the E5 match can overrule
    unnamed = "How can convolutional kernels of spiking networks be pruned and regrown during training?"  # names no paper
    reader = Assistant(settings, chat=ScriptedChat(reply="NO_ANSWER")).ask(unnamed)
    assert reader.abstained and (reader.relevance.get("reader") or reader.relevance.get("semantic"))  # a model that reads well decides
    weak = Assistant(settings, chat=ScriptedChat(reply="NO_ANSWER", refusals_final=False)).ask(unnamed)
    assert not weak.abstained and weak.model == "extractive" and weak.notice and "declined" in weak.notice


def test_each_citation_carries_the_abstract_sentences_that_back_it_verbatim(indexed: Settings) -> None:
    """A model's paraphrase is backed by the abstract's own closest sentence; a quote by itself."""
    chat = ScriptedChat(reply="SpikePrune prunes and regrows kernels of spiking networks while training [1]. GraphHop adds virtual nodes [2].")
    answer = Assistant(indexed, chat=chat).ask(QUESTION)
    assert len(answer.passages) == len(answer.citations) == 2
    assert answer.passages[0] == ["We propose SpikePrune, a channel pruning method that removes and regrows convolutional kernels of "
                                  "spiking networks during training."]
    assert answer.passages[1] == ["We introduce GraphHop, a message passing scheme that rewires graphs with virtual nodes."]
    quoted = Assistant(indexed).ask(QUESTION, llm_provider="extractive")
    for paper, sentences in zip(quoted.citations, quoted.passages):
        assert sentences and all(s in paper.abstract and s in quoted.text for s in sentences)


def test_filters_choose_the_papers_searched(indexed: Settings) -> None:
    assistant = Assistant(indexed)
    everything = assistant.search("Is there work on graphs?", k=4)
    graphs = next(p.paper_id for p in everything.papers if p.abstract == GRAPHS)
    only = assistant.search("Is there work on spiking networks?", k=4, filters={"paper_ids": [graphs]})
    assert [p.paper_id for p in only.papers] == [graphs]
    with pytest.raises(QuestionError, match="matches the filters"):
        assistant.ask(QUESTION, filters={"title": "no such words"})


@pytest.mark.parametrize(("per_chunk", "depth_max"), [(0, 10_000), (1000, 10_000), (1000, 50)], ids=["exact", "deeper-unfiltered", "too-deep-so-exact"])
@pytest.mark.parametrize("share", [0.6, 0.2, 0.05])
def test_a_filtered_dense_search_finds_what_chromas_own_filter_finds(
    shipped: Assistant, monkeypatch: pytest.MonkeyPatch, share: float, per_chunk: int, depth_max: int
) -> None:
    """Chroma's `$in` filter costs ~100 ms at 100k chunks and fails past 32,766 ids, so the dense search scores a
    few admitted chunks exactly, or keeps a deeper unfiltered search's hits of theirs: the same chunks either way."""
    build = shipped.index.current()
    ordered = sorted(build.papers)
    allowed = frozenset(ordered[: round(share * len(ordered))])
    vector = build.retriever.encode("Is there work on pruning spiking neural networks?").vector
    chromas = build.collection.query(query_embeddings=[vector.tolist()], n_results=20, include=["distances"], where={"paper_id": {"$in": sorted(allowed)}})
    monkeypatch.setattr(retrieve, "_DEEPER_PER_CHUNK", per_chunk)
    monkeypatch.setattr(retrieve, "FILTERED_DEPTH_MAX", depth_max)
    found = build.retriever.nearest(vector, 20, allowed)
    assert [chunk for chunk, _ in found] == chromas["ids"][0]
    assert [score for _, score in found] == pytest.approx([1 - d for d in chromas["distances"][0]], abs=1e-4)


@pytest.mark.parametrize("share", [0.6, 0.2, 0.05])
def test_a_filtered_bm25_search_finds_what_a_mask_finds(shipped: Assistant, monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """Scoring the admitted chunks alone, or a deeper unfiltered BM25 search kept to them, ranks them as bm25s's
    own weight mask does: the same chunks in the same order, the best by bm25s's own scores."""
    lexical = shipped.index.current().retriever.lexical
    ordered = sorted(lexical.paper_rows)
    allowed = frozenset(ordered[: round(share * len(ordered))])
    tokens = lexical.tokenize(["pruning spiking neural networks during training with sparse regrowth"])
    monkeypatch.setattr(lexical_module, "_SCORED_ALONE_SHARE", 1.0)
    alone = lexical.search(tokens, 20, allowed)
    monkeypatch.setattr(lexical_module, "_SCORED_ALONE_SHARE", 0.0)
    deeper = lexical.search(tokens, 20, allowed)
    monkeypatch.setattr(lexical_module, "FILTERED_DEPTH_MAX", 0)
    masked = lexical.search(tokens, 20, allowed)
    assert alone == deeper == masked and len(masked) >= 10
    mask = np.zeros(len(lexical), dtype=np.float32)
    mask[lexical.rows_of(allowed)] = 1.0
    scores = lexical.bm25.get_scores(convert_tokenized_to_string_list(tokens)[0], weight_mask=mask)
    assert scores[alone].tolist() == sorted(scores[alone].tolist(), reverse=True) and scores[alone[-1]] >= np.sort(scores)[-len(alone)]


def test_a_build_remembers_what_a_filter_admits(shipped: Assistant) -> None:
    build = shipped.index.current()
    orals = Filters(status=["Oral"])
    first = build.admitted(orals)
    assert first and all(build.papers[pid].status == "Oral" for pid in first)
    assert build.admitted(Filters(status=["Oral"])) is first
    assert build.admitted(Filters(status=["Spotlight"])).isdisjoint(first)


@pytest.mark.parametrize(
    ("question", "follow_up"),
    [
        ("What training objective does that method introduce?", True),
        ("How much does it retain after distillation?", True),
        ("And on ImageNet?", True),
        ("How can a grid-based NeRF be compressed?", False),
        ("Is there work on forecasting solar power?", False),
    ],
)
def test_a_new_question_in_a_conversation_is_searched_alone(indexed: Settings, question: str, follow_up: bool) -> None:
    from assistant.text.questions import is_follow_up

    assert is_follow_up(question) is follow_up
    answer = Assistant(indexed).ask(question, ["Is there work on long-range dependencies in graph neural networks?"], llm_provider="extractive")
    assert (answer.query != question) is follow_up


@pytest.mark.parametrize(("history", "question", "fact"), [
    ("Is there work on forecasting solar power output from satellite images?", "How many farms did they test it on?", "three solar farms"),
    ("Any paper on rewiring graphs with virtual nodes for long-range dependencies?", "which benchmarks does it improve on", "molecular property prediction"),
    ("Is there work on pruning spiking neural networks?", "And what data are the experiments on?", "CIFAR"),
])
def test_a_follow_up_quotes_the_sentence_that_holds_the_asked_fact(indexed: Settings, history: str, question: str, fact: str) -> None:
    """The conversation finds the paper; the last turn picks the sentence: not the ones most like the first question."""
    answer = Assistant(indexed).ask(question, [history], llm_provider="extractive")
    assert not answer.abstained and fact in answer.text, (answer.query, answer.relevance, answer.text)
    assert len(answer.citations) == 1  # about the paper the conversation found


def test_a_follow_up_after_a_follow_up_stays_with_the_paper_the_conversation_found(indexed: Settings) -> None:
    history = ["Is there work on forecasting solar power output from satellite images?", "What is the core idea of that method?"]
    answer = Assistant(indexed).ask("How many farms did they test it on?", history, llm_provider="extractive")
    assert "three solar farms" in answer.text and [p.abstract for p in answer.citations] == [SOLAR]


def test_the_first_turn_sets_the_topic_even_when_it_says_they(tmp_path: Path) -> None:
    """"… generators they never saw" reads like a follow-up, but nothing came before it: the conversation's paper is
    the one it is answered about, not one that shares the words of "What's the core idea of that method?"."""
    detector = ("Detectors of generated images fail on generators unseen in training. We propose DetX, which trains the detector "
                "on images reconstructed by a generator, so it keeps working on new generators. We release a dataset built with 9 diffusion models.")
    wordy = "The core idea of that method is simple: what is the core idea of a method that releases a dataset covering 25 diffusion models?"
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("\n\n".join([SPIKING, GRAPHS, ROBOTS, SOLAR, detector, wordy]) + "\n", encoding="utf-8")
    settings = make_settings(tmp_path, llm_provider="extractive")
    build_index(settings, folder, progress=False)
    history = ["How can detectors of generated images keep working on generators they never saw in training?", "What's the core idea of that method?"]
    answer = Assistant(settings).ask("Did they release a dataset for it, and how many diffusion models does it cover?", history)
    assert [p.abstract for p in answer.citations] == [detector] and "9 diffusion models" in answer.text


def test_a_name_the_paper_never_mentions_makes_the_answer_partial(indexed: Settings) -> None:
    answer = Assistant(indexed).ask("Does SpikePrune beat its baselines on ImageNet-1k?", llm_provider="extractive")
    assert answer.partial and answer.missing == ["anything about ImageNet-1k"] and [p.abstract for p in answer.citations] == [SPIKING]


def test_a_follow_up_is_about_the_latest_topic_not_a_paper_an_older_turn_named(indexed: Settings) -> None:
    history = ["What is SpikePrune?", "Is there work on forecasting solar power output from satellite images?"]
    answer = Assistant(indexed).ask("How many farms did they test it on?", history, llm_provider="extractive")
    assert "three solar farms" in answer.text and [p.abstract for p in answer.citations] == [SOLAR]


@pytest.mark.parametrize(("question", "title"), [
    ("what does the interpretable one distill?", "InterpreTabNet"),
    ("and the anomaly-detection one, what does it compare?", "Beyond Individual Input for Deep Anomaly Detection"),
    ("what about the one on anomaly detection?", "Beyond Individual Input for Deep Anomaly Detection"),
])
def test_a_follow_up_on_the_one_a_word_describes_is_about_that_paper_of_the_list(shipped: Assistant, question: str, title: str) -> None:
    """After a list, "the interpretable one" is one of the listed papers: the one the words describe, not the first
    of the list (the conversation's thread) nor one of other papers on interpretability (searched alone, its four
    words of its own read as a new question)."""
    history = ["Which papers work with tabular data?"]
    listed = [paper.title for paper in shipped.ask(history[0]).citations]
    answer = shipped.ask(question, history)
    assert any(t.startswith(title) for t in listed) and answer.citations[0].title.startswith(title), [p.title for p in answer.citations]


@pytest.mark.parametrize(("question", "place"), [
    ("the second one - what does it do?", 1),
    ("and the third paper?", 2),
    ("what about the last one?", -1),
])
def test_a_follow_up_on_the_second_one_is_about_the_second_paper_the_last_answer_showed(shipped: Assistant, question: str, place: int) -> None:
    """"The second one - what does it do?" after a list was answered about the list's first paper (the conversation's
    thread): which one is second is what the last answer showed, in its order."""
    asked = "Which papers work with tabular data?"
    shown = shipped.ask(asked)
    history = [{"role": "user", "content": asked}, {"role": "assistant", "content": shown.text}]
    answer = shipped.ask(question, history)
    assert len(shown.citations) >= 4 and answer.citations[0].paper_id == shown.citations[place].paper_id, [p.title for p in answer.citations]
    assert answer.ranking[0] == answer.sources[0].paper_id == answer.citations[0].paper_id  # it leads what an evaluation scores


@pytest.mark.parametrize(("history", "question", "title"), [
    ("Which papers work with tabular data?", "which of them detect anomalies?", "Beyond Individual Input for Deep Anomaly Detection"),
    ("papers on time series forecasting or classification?", "which of these handle missing data?", "Graph-based Forecasting with Missing Data"),
])
def test_which_of_them_answers_with_the_papers_of_the_list_that_fit_not_its_first(shipped: Assistant, history: str, question: str, title: str) -> None:
    """"Which of them detect anomalies?" asks for some of the list's papers: it was answered about the paper the list
    question alone is answered about (the conversation's thread), one on tabular data for images."""
    listed = [paper.title for paper in shipped.ask(history).citations]
    answer = shipped.ask(question, [history])
    assert any(t.startswith(title) for t in listed) and answer.citations[0].title.startswith(title), [p.title for p in answer.citations]


@pytest.mark.parametrize(("history", "question", "title"), [
    ("Is there work on anomaly detection?", "what about for tabular data?", "Beyond Individual Input for Deep Anomaly Detection"),
    ("Is there a paper on watermarking generated images?", "what about for LLM text?", "Watermark Stealing in Large Language Models"),
    ("paper arguing satellite data is its own modality", "what about a position paper on using large generative models for data-driven discovery?",
     "Position: Data-driven Discovery with Large Generative Models"),
])
def test_what_about_for_something_else_asks_for_the_conversations_kind_of_work_on_it(shipped: Assistant, history: str, question: str, title: str) -> None:
    """"What about for tabular data?" after anomaly detection asks for anomaly detection on tabular data: searched
    alone, its words found another paper on tabular data; over the whole conference, "what about for tabular data?"
    after test-time adaptation found a tabular foundation-model position paper instead of TabLog. The paper it is
    about leads the sources as well: ranked by both turns' words together, another came first."""
    answer = shipped.ask(question, [history])
    assert answer.citations and answer.citations[0].title.startswith(title), [p.title for p in answer.citations]
    assert answer.sources[0].title.startswith(title), [p.title for p in answer.sources]  # the card beside it leads too
    assert answer.ranking[0] == answer.citations[0].paper_id  # and the ranking an evaluation scores


@pytest.mark.parametrize(("history", "question", "title"), [
    ("sequential goodness of fit test that works on streaming data by betting",
     "is there a method that steers a pretrained flow matching model without retraining it?", "D-Flow"),
    ("graph contrastive learning augmentation that keeps community structure intact",
     "what about a cheap hessian diagonal approximation that can scale step sizes in RL?", "Revisiting Scalable Hessian Diagonal"),
    ("any work on protein structure generation with diffusion models?",
     "How do Ahdritz et al. tell when a language model lacks knowledge rather than facing inherent randomness?", "Distinguishing the Knowable"),
    ("cheap hessian diagonal approx for rl, used for step size scaling",
     "how does it compare with Adam and other second-order optimizers on Atari games?", "Revisiting Scalable Hessian Diagonal"),
    ('How does "Chatbot Arena" collect the judgements it ranks models with?',
     "how many votes had they collected, and do they check crowd answers against expert ratings?", "Chatbot Arena"),
])
def test_a_new_question_in_a_conversation_is_answered_as_if_asked_alone(shipped: Assistant, history: str, question: str, title: str) -> None:
    """Every question after the first in a chat has a conversation: one whose "that" or "it" points inside itself ("a
    method that steers … without retraining it") or that names a paper by its authors is a new question, answered
    about what it finds alone (before, 69 of 125 single-paper questions asked after an unrelated turn were answered
    from that turn's paper); one that points back before saying what it is about ("how does it compare …") stays."""
    answer = shipped.ask(question, [history])
    assert answer.citations and answer.citations[0].title.startswith(title), [p.title for p in answer.citations]


@pytest.mark.parametrize("question", [
    "Which papers run experiments on MuJoCo?",
    "Which papers do anomaly detection?",
    "How do InterpreTabNet and the NPT-based anomaly detector differ in what they do with tabular data?",
])
def test_a_list_or_a_comparison_asked_in_a_conversation_is_answered_as_if_asked_alone(shipped: Assistant, question: str) -> None:
    """Lists and comparisons were built only for a question without a conversation: after one unrelated turn, "which
    papers run experiments on MuJoCo?" cited one paper (none of the five it cites alone), and 23 of 48 list and
    comparison questions lost papers."""
    alone = shipped.ask(question)
    asked = shipped.ask(question, ["any work on protein structure generation with diffusion models?"])
    assert len(alone.citations) >= 2
    assert [p.paper_id for p in asked.citations] == [p.paper_id for p in alone.citations], [p.title for p in asked.citations]


def test_a_follow_up_is_about_the_paper_the_answer_to_its_topic_turn_led_with(shipped: Assistant) -> None:
    """"it" is the paper the user was shown first: asked alone, "steer a pretrained flow matching model …" is answered
    leading with D-Flow, the paper ranked first, but its follow-up was answered about the paper holding the sentence
    closest to the topic turn (Scaling Rectified Flow Transformers). Where the conversation holds that answer, the paper
    it led with is "it", whatever the ranking says now."""
    topic = "steer a pretrained flow matching model w/o retraining by backprop thru the sampling to the noise"
    question = "is it slower than classifier guidance, and what tasks do they show it on?"
    assert shipped.ask(topic).citations[0].title.startswith("D-Flow")
    answer = shipped.ask(question, [topic])
    assert answer.citations[0].title.startswith("D-Flow"), [p.title for p in answer.citations]
    shown = "**Scaling Rectified Flow Transformers for High-Resolution Image Synthesis**: Diffusion models create data … [1]"
    answer = shipped.ask(question, [{"role": "user", "content": topic}, {"role": "assistant", "content": shown}])
    assert answer.citations[0].title.startswith("Scaling Rectified Flow Transformers"), [p.title for p in answer.citations]


@pytest.mark.parametrize("with_answers", [False, True])
def test_a_follow_up_after_a_new_question_is_about_the_new_question_s_paper(shipped: Assistant, with_answers: bool) -> None:
    """"is there a model that rewrites a molecule into one that can be synthesized?" set a topic of its own, though its
    "that" reads as pointing back; the next turn, "how does it do that?", went back to the first turn's paper."""
    turns = ["graph contrastive learning augmentation that keeps community structure intact",
             "is there a model that rewrites a proposed molecule into one that can actually be synthesized?"]
    history: list = turns
    if with_answers:
        history = [m for turn in turns for m in ({"role": "user", "content": turn}, {"role": "assistant", "content": shipped.ask(turn).text})]
    answer = shipped.ask("how does it do that?", history)
    assert answer.citations[0].title.startswith("Projecting Molecules into Synthesizable"), [p.title for p in answer.citations]


def test_who_wrote_a_paper_how_it_was_presented_and_where_to_read_it_come_from_its_record(shipped: Assistant) -> None:
    """Asked who wrote a paper, the answer quoted its abstract, which never says; the index's record does."""
    answer = shipped.ask("who wrote the Chatbot Arena paper?")
    assert answer.text.startswith("Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference [1]: by Wei-Lin Chiang, Lianmin Zheng")
    assert answer.citations[0].title.startswith("Chatbot Arena") and not answer.partial
    history = ["graph contrastive learning augmentation that keeps community structure intact"]
    link = shipped.ask("link?", history)
    assert "[1]: https://openreview.net/forum?id=" in link.text and link.citations[0].title.startswith("Community-Invariant")
    status = shipped.ask("is it an oral or a poster?", history)
    assert "[1]: presented as a" in status.text


def test_a_hosted_model_s_answer_opens_with_the_record_it_was_asked_for(shipped_settings: Settings) -> None:
    """With a hosted model, "who wrote the Chatbot Arena paper?" got the model's prose only: it is not shown the
    record, and a sentence naming authors its cited abstract lacks would be removed as invented."""
    chat = ScriptedChat(reply="It is an open platform that ranks LLMs by crowdsourced pairwise votes [1].")
    answer = Assistant(shipped_settings, chat=chat).ask("who wrote the Chatbot Arena paper?", llm_provider="auto", reading=False)
    assert answer.text.startswith("Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference [1]: by Wei-Lin Chiang"), answer.text
    assert answer.text.endswith(chat.reply) and answer.model == chat.name and not answer.partial and not answer.unsupported
    assert "already sees" in chat.requests[0][-1]["content"]  # the model is told, so it does not say the abstract lacks them


def test_a_model_failing_after_the_record_s_line_leaves_that_line_said_once(shipped_settings: Settings) -> None:
    """The record's line is shown before the model writes; when the model then fails, the quotes that follow it began
    with the same line again."""
    chat = ScriptedChat(reply="It ranks LLMs by votes [1].", fail_after=0)
    answer = Assistant(shipped_settings, chat=chat).ask("who wrote the Chatbot Arena paper?", llm_provider="auto", reading=False)
    assert answer.text.count("by Wei-Lin Chiang") == 1 and "the connection dropped" in answer.text, answer.text
    assert answer.citations[0].title.startswith("Chatbot Arena") and not answer.abstained


def test_a_record_without_authors_makes_who_wrote_it_partial(indexed: Settings) -> None:
    answer = Assistant(indexed).ask("who wrote the paper on pruning spiking neural networks?", llm_provider="extractive")
    assert answer.partial and "the index lists no authors for it" in answer.text, answer.text


@pytest.mark.parametrize("question", ["how does it differ from TopDis?", "how does it compare with TopDis on disentanglement?"])
def test_a_follow_up_comparing_its_paper_with_one_it_names_quotes_both(shipped: Assistant, question: str) -> None:
    """"how does it differ from TopDis?" after a question on graph contrastive learning sets the conversation's paper
    against TopDis's: it was answered from the first alone, or (with more words of its own) switched to TopDis."""
    answer = shipped.ask(question, ["graph contrastive learning augmentation that keeps community structure intact"])
    titles = [p.title for p in answer.citations]
    assert len(titles) == 2 and titles[0].startswith("Community-Invariant") and titles[1].startswith("Disentanglement Learning via Topology"), titles


def test_it_is_the_paper_the_last_answer_led_with_and_an_earlier_turn_s_names_are_not_asked_again(shipped: Assistant) -> None:
    """After "which one does docking?" picked a paper of a list, "how does it handle flexible proteins?" went back to
    the list's first paper; after "how fast is it compared to DPS?" (partial: the abstract never names DPS), "is there
    code?" was partial about DPS again, the name coming from the earlier turn read with it."""
    def converse(turns: list[str]) -> Answer:
        history: list[dict[str, str]] = []
        for turn in turns[:-1]:
            history += [{"role": "user", "content": turn}, {"role": "assistant", "content": shipped.ask(turn, history).text}]
        return shipped.ask(turns[-1], history)

    picked = converse(["any papers on diffusion models for molecules?", "which one does docking?"])
    answer = converse(["any papers on diffusion models for molecules?", "which one does docking?", "how does it handle flexible proteins?"])
    assert answer.citations[0].paper_id == picked.citations[0].paper_id != shipped.ask("any papers on diffusion models for molecules?").citations[0].paper_id
    code = converse(["what is DiracDiffusion?", "how fast is it compared to DPS?", "is there code?"])
    assert "DPS" not in code.text and code.citations[0].title.startswith("DiracDiffusion")


@pytest.mark.parametrize(("question", "title"), [
    ("anything on speculative decoding?", "Tandem Transformers"),
    ("thanks. what about papers on continual learning?", "Federated Continual Learning"),
])
def test_chat_fillers_are_no_topic_words(shipped: Assistant, question: str, title: str) -> None:
    """"anything" and "thanks" weighed as topic words no abstract uses: both questions were declined, answered without them."""
    answer = shipped.ask(question, ["Is there work on LLM watermarking?"])
    assert not answer.abstained and answer.citations[0].title.startswith(title), answer.text[:200]


def test_a_new_question_in_a_conversation_that_nothing_answers_is_declined_and_one_naming_a_paper_is_about_it(shipped: Assistant) -> None:
    """After a question on protein generation, a near-miss ("which models recognize a speaker's emotional state … from
    their voice?", declined alone) was answered from the protein paper, and "does Score identity Distillation beat
    consistency models on ImageNet 64x64 …?" too: the protein paper lacks ImageNet, and so does SiD's abstract, so the
    names did not move it; a paper the question names by its title is what it is about."""
    opening = "any work on protein structure generation with diffusion models?"
    history = [{"role": "user", "content": opening}, {"role": "assistant", "content": shipped.ask(opening).text}]
    assert shipped.ask("Which models recognize a speaker's emotional state, like anger or sadness, from the sound of their voice?").abstained
    assert shipped.ask("Which models recognize a speaker's emotional state, like anger or sadness, from the sound of their voice?", history).abstained
    sid = shipped.ask("Does Score identity Distillation beat consistency models on ImageNet 64x64, and what FID does its one-step generator reach there?", history)
    assert sid.citations[0].title.startswith("Score identity Distillation"), [p.title for p in sid.citations]


def test_a_follow_up_naming_what_no_paper_mentions_is_partial_about_its_paper_not_declined(shipped: Assistant) -> None:
    """"does their augmentation help on benchmarks like Cora?": no abstract writes Cora, so the question alone is declined;
    pointing back at the conversation's paper, it asks a detail that paper's abstract does not give. A question that
    may be a new one ("… when it also obeys the HJB equation …") is not answered from the conversation's paper."""
    answer = shipped.ask("does their augmentation also help on node classification benchmarks like Cora?",
                         ["graph contrastive learning augmentation that keeps community structure intact"])
    assert answer.partial and not answer.abstained and "Cora" in answer.text
    assert answer.citations[0].title.startswith("Community-Invariant Graph Contrastive Learning")
    graphcl = shipped.ask("did they compare it with GraphCL?", ["graph contrastive learning augmentation that keeps community structure intact"])
    assert graphcl.partial and "GraphCL" in graphcl.text  # a comparison with what no abstract names asks what this one does not say
    new = shipped.ask("which paper shows the value update in offline RL behaves better when it also obeys the HJB equation from continuous-time control?",
                      ["Can learning-based models estimate how much energy it takes for atoms to rearrange in metallic glasses?"])
    assert not new.citations or not new.citations[0].title.startswith("Predicting and Interpreting Energy Barriers")


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_question_that_moves_on_to_a_topic_of_its_own_leads_with_the_paper_ranked_first(tmp_path: Path) -> None:
    """Over the conference's decoding and attention papers, "what about pairing a small autoregressive model with a
    big one?" after a question on merging attention heads is searched alone and found Tandem Transformers first, but
    was answered from the paper holding the closest sentence (Lookahead Decoding), as no question in a conversation
    was led by its first paper; asked alone, it was."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"decod|speculative|attention|inference", p["title"].lower())))
    history = ["any work on speeding up llm inference by merging attention heads that attend to the same tokens"]
    answer = assistant.ask("What about pairing a small autoregressive model with a big one to decode faster?", history)
    assert answer.citations[0].title.startswith("Tandem Transformers"), [p.title for p in answer.citations]


def test_a_follow_up_naming_what_its_conversations_paper_never_mentions_is_about_a_paper_that_does(small_corpus: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    build_index(settings, small_corpus, progress=False)
    assistant = Assistant(settings)
    history = ["Is there work on pruning spiking neural networks?"]
    switched = assistant.ask("Anything like that for graphs, with GraphHop and virtual nodes?", history)
    assert switched.citations[0].abstract == GRAPHS and not switched.partial
    stayed = assistant.ask("Did they test it on CIFAR?", history)  # names what the conversation's paper does mention
    assert stayed.citations[0].abstract == SPIKING


def test_a_number_the_question_quotes_brings_the_sentence_writing_it(tmp_path: Path) -> None:
    """"Which model gets up to 2.19% better?" after the Student Float paper quoted three sentences on SF4 and LLaMA2,
    not the one that says Phi-2 gains 2.19%."""
    student_float = (
        "The increasing size of large language models (LLMs) traditionally requires low-precision integer formats to meet "
        "strict latency and power demands. Yet recently, alternative formats such as Normal Float (NF4) have increased "
        "model accuracy at the cost of increased chip area. In this work, we first conduct a large-scale analysis of LLM "
        "weights and activations across 30 networks and conclude that most distributions follow a Student's "
        "t-distribution. We then derive a new theoretically optimal format, Student Float (SF4), that improves over NF4 "
        "across modern LLMs, for example increasing the average accuracy on LLaMA2-7B by 0.76% across tasks. Using this "
        "format as a high-accuracy reference, we then propose augmenting E2M1 with two variants of supernormal support for "
        "higher model accuracy. Finally, we explore the quality and efficiency frontier across 11 datatypes by evaluating "
        "their model accuracy and hardware complexity. We discover a Pareto curve composed of INT4, E2M1, and E2M1 with "
        "supernormal support, which offers a continuous tradeoff between model accuracy and chip area. For example, E2M1 "
        "with supernormal support increases the accuracy of Phi-2 by up to 2.19% with 1.22% area overhead, enabling more "
        "LLM-based applications to be run at four bits."
    )
    assistant = titled_corpus(tmp_path, [("Learning from Students", student_float), ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS)])
    answer = assistant.ask("which model gets up to 2.19% better?", ["student float format for LLMs"])
    assert "Phi-2 by up to 2.19%" in answer.text, answer.text


def test_a_question_naming_what_the_first_paper_writes_is_not_answered_from_one_that_does_not(tmp_path: Path) -> None:
    """"How is the Deep LTMLE transformer trained?" was answered about "Trainable Transformer in Transformer" (whose
    sentence came closest), not about the paper ranked first, the one writing LTMLE."""
    ltmle = ("We estimate counterfactual mean outcomes under dynamic treatment policies in longitudinal settings. Following "
             "the TMLEX framework, the bias of an initial estimate is corrected; the estimate comes from a heterogeneous "
             "transformer learned by temporal-difference learning.")
    tint = ("Recent work explains in-context learning by a transformer simulating an internal model. We show how a "
            "transformer is trained to simulate and fine-tune another transformer during inference.")
    assistant = titled_corpus(tmp_path, [("Longitudinal Estimation", ltmle), ("Trainable Transformer in Transformer", tint),
                                         ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS)])
    answer = assistant.ask("how is the TMLEX transformer trained?")
    assert answer.citations[0].abstract == ltmle and "temporal-difference" in answer.text, [p.title for p in answer.citations]


def test_the_x_paper_names_the_one_paper_whose_title_holds_x(tmp_path: Path) -> None:
    """"The super mario paper" was declined: its abstract never says "Super Mario", its title does."""
    mario = ("We show that language models can acquire new abilities by assimilating parameters from homologous models "
             "without retraining or GPUs. DARE drops delta parameters and rescales the rest before merging.")
    assistant = titled_corpus(tmp_path, [
        ("Language Models are Super Mario: Absorbing Abilities from Homologous Models as a Free Lunch", mario),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask("the super mario paper")
    assert not answer.abstained and answer.citations[0].abstract == mario, answer.text


GNN_EDITING = (
    "Suppose a self-driving car is crashing into pedestrians; the stakeholders will want to patch these errors as soon as "
    "possible. Model editing, the study of efficiently patching model behaviors, has seen considerable activity in CV and NLP. "
    "However, the graph learning community has fallen behind with just one GNN-specific model editing method available. "
    "We argue that the impracticality of these methods lies in their lack of Sequential Editing Robustness: the ability to "
    "edit multiple errors sequentially. In this paper, we delve into the reasons behind the difficulty of editing GNNs in "
    "succession and observe the root cause to be model overfitting. We propose SEED-GNN, the first GNN model editing "
    "method that scales practically, and frame the task paradigm of GNN editing."
)


@pytest.mark.parametrize("question", [
    "the GNN editing paper - what property do existing editors lack?",
    "Zhong and Le's GNN editing paper: what property do existing editors lack?",
])
def test_what_a_question_calls_its_paper_does_not_choose_the_answer_s_sentences(tmp_path: Path, question: str) -> None:
    """"The GNN editing paper - what property do existing editors lack?" quoted the sentences about editing GNNs, which
    the words calling the paper matched, and not the one naming the property."""
    assistant = titled_corpus(tmp_path, [
        ("GNNs Also Deserve Editing, and They Need It More Than Once", GNN_EDITING),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask(question)
    assert "Sequential Editing Robustness" in answer.text, answer.text



def test_of_two_papers_a_question_names_by_their_authors_the_one_using_its_words_is_asked_about(tmp_path: Path) -> None:
    """"Which pruning method do Obando Ceron et al. use?" names two of their papers; it was answered from the one on
    mixtures of experts, which cites "Puigcerver et al." ("et" and "al" weighed as the question's rarest words)."""
    authors = ["Johan Obando Ceron", "Aaron Courville", "Pablo Samuel Castro"]
    moe = ("We demonstrate that incorporating Mixture-of-Expert modules, and in particular Soft MoEs (Puigcerver et al., "
           "2023), into value-based networks results in more parameter-scalable models.")
    pruned = ("Deep reinforcement learning agents have difficulty using their network parameters. We demonstrate that "
              "gradual magnitude pruning enables value-based agents to maximize parameter effectiveness.")
    corpus = tmp_path / "papers.jsonl"
    rows = [{"title": "Mixtures of Experts Unlock Parameter Scaling for Deep RL", "abstract": moe, "authors": authors},
            {"title": "In value-based deep reinforcement learning, a pruned network is a good network", "abstract": pruned,
             "authors": authors}, *({"title": t, "abstract": a} for t, a in [("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS)])]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    settings = make_settings(tmp_path)
    build_index(settings, corpus, progress=False)
    answer = Assistant(settings).ask("which pruning method do Obando Ceron et al. use?")
    assert answer.citations[0].abstract == pruned and "gradual magnitude pruning" in answer.text, answer.text


def test_a_question_going_on_with_and_stays_with_the_conversation_s_paper(shipped: Assistant) -> None:
    """"and with truncated trajectories instead of complete ones?" after a question about one paper was searched alone
    (enough words of its own) and led with a pedestrian-trajectory paper; opening with "and", it goes on from the last."""
    history = ["does a target network plus overparameterized linear approximation make TD converge off-policy?"]
    answer = shipped.ask("and with truncated trajectories instead of complete ones?", history)
    assert [p.title.split(" ")[0] for p in answer.citations] == ["Target"], answer.text
