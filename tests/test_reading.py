"""The reading step: a chat model's JSON verdict decides the answer, and nothing in it is taken on trust."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assistant.answer import extractive
from assistant.answer.reading import schema
from assistant.engine import Assistant
from assistant.indexing.indexer import build_index
from assistant.settings import Settings
from tests.conftest import GRAPHS, SHARED_DATA, SPIKING, conference_subset, make_settings
from tests.fake_chat import ScriptedChat
from tests.openai_server import Behaviour, ScriptedServer

DATASET = "Which dataset was SpikePrune evaluated on?"
CIFAR = "Experiments on CIFAR show large savings."
MOLECULES = "It improves accuracy on molecular property prediction benchmarks."  # GraphHop's: another paper's sentence


@pytest.fixture
def indexed(small_corpus: Path, tmp_path: Path) -> Settings:
    settings = make_settings(tmp_path, llm_provider="auto")
    build_index(settings, small_corpus, progress=False)
    return settings


def verdict(sentences: list[str], kind: str = "answers", answer: str = "", missing: str = "") -> str:
    return json.dumps({"sentences": sentences, "verdict": kind, "missing": missing, "answer": answer})


def sentence_id(settings: Settings, question: str, sentence: str) -> str:
    """The id ("1.3") the reading prompt for `question` gives `sentence`, read from a probe's request."""
    probe = ScriptedChat(reply=verdict([]))
    Assistant(settings, chat=probe).ask(question)
    line = next(line for line in probe.requests[0][-1]["content"].splitlines() if line.endswith(sentence))
    return line.split(" ", 1)[0]


def weak_reader(settings: Settings, question: str, sentence: str) -> ScriptedChat:
    """A reader whose "not covered" is not final (the embedded model's), answering `question` by pointing to `sentence`."""
    return ScriptedChat(reply=verdict([sentence_id(settings, question, sentence)]), refusals_final=False)


def test_the_answer_is_the_sentence_the_model_points_to_with_its_short_answer(indexed: Settings) -> None:
    cifar = sentence_id(indexed, DATASET, CIFAR)
    chat = ScriptedChat(reply=verdict([cifar], answer="SpikePrune is evaluated on CIFAR [1]."))
    answer = Assistant(indexed, chat=chat).ask(DATASET)
    assert answer.text == f"SpikePrune is evaluated on CIFAR [1].\n\n{CIFAR} [1]"
    assert [p.abstract for p in answer.citations] == [SPIKING] and answer.confidence == "high" and not answer.partial
    assert len(chat.requests) == 1 and answer.timings["reading"] > 0


def test_sentence_ids_it_was_not_shown_are_ignored_and_an_invented_number_is_removed(indexed: Settings) -> None:
    chat = ScriptedChat(reply=verdict(["1.99", "7.1"], answer="SpikePrune saves 93% of energy on ImageNet [1]."))
    answer = Assistant(indexed, chat=chat).ask(DATASET)
    assert "93" not in answer.text and "ImageNet" not in answer.text
    assert answer.model == "extractive" and answer.notice and "pointed to no sentence" in answer.notice
    assert CIFAR in answer.text  # the quotes that replace it hold the asked fact


def test_a_removed_claim_leaves_the_checked_sentences_and_says_so(indexed: Settings) -> None:
    cifar = sentence_id(indexed, DATASET, CIFAR)
    chat = ScriptedChat(reply=verdict([cifar], answer="SpikePrune reaches 97.3% on CIFAR-100 [1]."))
    answer = Assistant(indexed, chat=chat).ask(DATASET)
    assert answer.text == f"{CIFAR} [1]" and answer.confidence == "medium"
    assert answer.notice and "97.3" in answer.notice and answer.unsupported[0]["removed"]


def test_not_covered_declines_and_stands_unless_the_question_uses_the_abstracts_words(indexed: Settings) -> None:
    unsure = indexed.with_overrides(confident_relevance=10.0, relevance_check="none")
    declined = Assistant(unsure, chat=ScriptedChat(reply=verdict([], "not_covered"))).ask("How do spiking networks handle event cameras?")
    assert declined.abstained and declined.confidence == "low" and not declined.citations
    sure = Assistant(indexed.with_overrides(confident_relevance=0.1), chat=ScriptedChat(reply=verdict([], "not_covered")))
    overruled = sure.ask("How does SpikePrune prune spiking networks?")
    assert not overruled.abstained and overruled.model == "extractive" and "regrows" in overruled.text
    stated = sure.ask(DATASET)  # the abstract states the asked dataset: the sentence saying so is the answer
    assert not stated.abstained and stated.model == sure.answering_model() and stated.text == f"{CIFAR} [1]"


def test_lacks_detail_is_a_partial_answer_naming_what_is_missing(indexed: Settings) -> None:
    chat = ScriptedChat(reply=verdict([], "lacks_detail", missing="the number of GPUs"))
    answer = Assistant(indexed, chat=chat).ask("How many GPUs did SpikePrune use for training?")
    assert answer.partial and not answer.abstained and answer.missing == ["the number of GPUs"]
    assert "does not state the number of GPUs" in answer.text and [p.abstract for p in answer.citations] == [SPIKING]


def test_a_sentence_of_another_paper_that_lacks_the_asked_fact_does_not_turn_a_partial_answer_into_one(indexed: Settings) -> None:
    """The subject's abstract states no GPU count; a weak reader points to another paper's sentence that states none either."""
    question = "How many GPUs did SpikePrune use for training?"
    weak = weak_reader(indexed, question, MOLECULES)
    answer = Assistant(indexed, chat=weak).ask(question)
    assert answer.partial and answer.confidence == "medium" and MOLECULES not in answer.text
    assert [p.abstract for p in answer.citations] == [SPIKING] and "GPUs" in answer.missing[0]


def test_another_papers_sentence_stating_the_asked_number_does_not_answer_for_the_paper_the_question_names(indexed: Settings) -> None:
    question = "How many solar farms was SpikePrune tested on?"
    farms = "SunCast reduces forecast error on three solar farms."
    weak = weak_reader(indexed, question, farms)
    answer = Assistant(indexed, chat=weak).ask(question)
    assert answer.partial and farms not in answer.text and [p.abstract for p in answer.citations] == [SPIKING]


def test_an_answer_that_says_its_paper_lacks_the_asked_fact_is_partial_whatever_else_the_reader_adds(indexed: Settings) -> None:
    """The question describes its paper without naming it, so another paper's sentence stating such a number is added;
    the answer still opens by saying the paper it is about lacks it, and is marked partial as that says."""
    question = "How many solar farms was the method that prunes spiking neural networks during training tested on?"
    farms = "SunCast reduces forecast error on three solar farms."
    weak = weak_reader(indexed, question, farms)
    answer = Assistant(indexed, chat=weak).ask(question)
    assert answer.text.startswith(f"{answer.citations[0].title or answer.citations[0].label} [1] is about this, but")
    assert answer.partial and answer.citations[0].abstract == SPIKING and "solar farms" in answer.missing[0]


def test_a_lacks_detail_verdict_is_overruled_when_the_abstract_states_the_asked_fact(indexed: Settings) -> None:
    chat = ScriptedChat(reply=verdict([], "lacks_detail", missing="the dataset"))
    answer = Assistant(indexed, chat=chat).ask(DATASET)
    assert not answer.partial and CIFAR in answer.text and answer.confidence == "high"


def test_a_reply_that_is_not_the_json_asked_for_gets_the_written_answer(indexed: Settings) -> None:
    chat = ScriptedChat(reply="SpikePrune removes whole kernels of spiking networks [1].")
    answer = Assistant(indexed, chat=chat).ask(DATASET)
    assert len(chat.requests) == 2 and answer.text == chat.reply and answer.model == chat.name


def test_reading_off_sends_one_written_answer_request(indexed: Settings) -> None:
    chat = ScriptedChat(reply="SpikePrune removes whole kernels of spiking networks [1].")
    Assistant(indexed.with_overrides(reading=False), chat=chat).ask(DATASET)
    assert len(chat.requests) == 1 and "<source id=" in chat.requests[0][-1]["content"] and ".1 " not in chat.requests[0][-1]["content"]


@pytest.mark.parametrize("rejects", [False, True])
def test_the_schema_travels_as_response_format_over_http(indexed: Settings, rejects: bool) -> None:
    """A real OpenAI-protocol server: the schema is sent; a server that refuses it (HTTP 400) gets the written answer."""
    written = Behaviour(text="SpikePrune removes whole kernels of spiking networks [1].")
    first = Behaviour(kind="status", status=400) if rejects else Behaviour(text=verdict(["1.1"], answer="SpikePrune prunes spiking networks [1]."))
    server = ScriptedServer(script=[first, written]).start()
    try:
        settings = indexed.with_overrides(llm_provider="openai-compatible", openai_base_url=server.base_url, llm_max_retries=0)
        answer = Assistant(settings).ask("How does SpikePrune prune spiking networks?")
    finally:
        server.stop()
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema(writes=True)
    assert len(server.requests) == (2 if rejects else 1) and not answer.notice
    assert answer.text.startswith("SpikePrune")


def test_a_weak_readers_sentences_are_added_to_the_quotes_not_put_in_their_place(indexed: Settings) -> None:
    question = "How are spiking neural networks pruned during training?"
    quoted = Assistant(indexed).ask(question, llm_provider="extractive")
    weak = weak_reader(indexed, question, MOLECULES)
    answer = Assistant(indexed, chat=weak).ask(question)
    assert MOLECULES not in quoted.text and answer.text == f"{quoted.text}\n\n{MOLECULES} [2]" and answer.model == weak.name
    assert [p.abstract for p in answer.citations] == [SPIKING, GRAPHS] and answer.confidence == "high"
    assert answer.passages[1] == [MOLECULES]


def test_a_weak_reader_adds_no_other_papers_sentence_to_an_answer_about_the_paper_the_question_names(indexed: Settings) -> None:
    question = "How does SpikePrune prune spiking neural networks?"
    quoted = Assistant(indexed).ask(question, llm_provider="extractive")
    weak = weak_reader(indexed, question, MOLECULES)
    answer = Assistant(indexed, chat=weak).ask(question)
    assert answer.text == quoted.text and [p.abstract for p in answer.citations] == [SPIKING]


def test_a_reading_that_keeps_the_quotes_is_said_once_not_shown_twice(indexed: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weak reader points to a sentence already quoted: its answer is the evidence again, and the CLI says so."""
    from typer.testing import CliRunner

    from assistant import engine
    from assistant.answer.result import QUOTES_KEPT, Evidence
    from assistant.cli import app

    question = "How does SpikePrune prune spiking neural networks?"
    quoted = Assistant(indexed).ask(question, llm_provider="extractive")
    pointed = next(sentence for sentence in quoted.passages[0])
    weak = weak_reader(indexed, question, pointed)
    pieces = list(Assistant(indexed, chat=weak).stream(question))
    evidence, answer = pieces[0], pieces[-1]
    assert isinstance(evidence, Evidence) and answer.text == quoted.text and evidence.restated_by(answer.text)
    monkeypatch.setattr(engine, "Assistant", lambda settings: Assistant(indexed, chat=weak))  # the CLI's, with this model
    shown = CliRunner().invoke(app, ["ask", question])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.count(pointed) == 1 and QUOTES_KEPT in shown.stdout and "Cited papers" in shown.stdout


def test_a_weak_readers_pointing_does_not_make_an_unsure_match_sure(indexed: Settings) -> None:
    """Admitted without a check (an unsure match, "Closest matches"), the answer stays medium whatever the weak reader says."""
    unsure = indexed.with_overrides(semantic_check_below=10.0, relevance_check="none")
    question = "How can spiking networks be made smaller during training?"
    weak = weak_reader(unsure, question, MOLECULES)
    answer = Assistant(unsure, chat=weak).ask(question)
    assert answer.model == weak.name and MOLECULES in answer.text and answer.confidence == "medium"


def test_naming_sentence_is_where_an_abstract_names_its_contribution() -> None:
    sentences = [
        "Prompt tuning adapts vision-language models with few examples.",
        "Yet test images may come from classes never seen in tuning.",
        "We introduce Decomposed Prompt Tuning (DeCoOp), which adds new-class detectors.",
        "DeCoOp improves accuracy on eleven benchmarks.",
    ]
    assert extractive.naming_sentence(sentences) == 2
    assert extractive.naming_sentence(sentences[:2] + ["We study how BERT and GPT behave."]) is None  # only others' names


@pytest.mark.parametrize(("question", "name"), [
    ("deep image prior for speckle noise w/ multiple looks", "bagged"),
    ('How does "Just Cluster It" handle exploration in 3-D environments?', "DINO"),
])
def test_an_answer_about_one_paper_quotes_the_sentence_naming_its_method(shipped: Assistant, question: str, name: str) -> None:
    answer = shipped.ask(question)
    assert len(answer.citations) == 1 and name.lower() in answer.text.lower()


@pytest.mark.parametrize(("question", "finding"), [
    ('What do the authors of "No Wrong Turns" find about the geometry of neural network optimization paths?',
     "never encounter significant obstacles"),
    ("What is Balestriero et al.'s argument for why learning by reconstruction gives features that are poor for perception?",
     "explaining the observed variance"),
])
def test_a_question_asking_what_a_paper_found_quotes_the_sentence_stating_the_finding(shipped: Assistant, question: str, finding: str) -> None:
    """Not only the sentences that restate the question's topic ("we delve into the geometric properties of …")."""
    answer = shipped.ask(question)
    assert len(answer.citations) == 1 and finding in answer.text, answer.text


def test_a_finding_is_asked_for_by_what_the_authors_found_not_by_finding_papers() -> None:
    from assistant.text.roles import asks_for_finding, reports_finding

    assert asks_for_finding("what did they conclude about the cost of privacy?") and asks_for_finding("What's the main insight of X?")
    assert not asks_for_finding("how do I find papers on diffusion?") and not asks_for_finding("Finding stable profiles is hard: any work?")
    assert not asks_for_finding("provable near-optimality through set-function arguments?")
    assert reports_finding("Our analysis reveals that these quantities behave predictably.") and reports_finding("We show that X beats Y.")
    assert not reports_finding("We focus on two key quantities, the restricted secant inequality and error bound.")


def test_a_quoted_sentence_announcing_a_list_keeps_the_list_whole() -> None:
    """"What two challenges of SAM do they mention?" quoted "SAM encounters two major challenges." and "Secondly, …",
    not "Firstly, …"; a lone "Finally, …" is no list."""
    sentences = ["The Segment Anything Model has advanced semantic segmentation.", "Despite its strengths, SAM encounters two major challenges.",
                 "Firstly, it relies on users to manually input prompts.", "Secondly, SAM struggles on downstream tasks like medical imaging.",
                 "To overcome these limitations, we introduce BLO-SAM.", "Finally, we release our code."]
    quotes = [extractive.Quote(0, 1, sentences[1], 0.9), extractive.Quote(0, 3, sentences[3], 0.8)]
    assert [q.position for q in extractive.whole_lists(quotes, lambda _: sentences)] == [1, 2, 3]
    alone = [extractive.Quote(0, 5, sentences[5], 0.9)]
    assert [q.position for q in extractive.whole_lists(alone, lambda _: sentences)] == [5]
    item = [extractive.Quote(0, 3, sentences[3], 0.9)]  # an item alone brings the announcement and the other item
    assert [q.position for q in extractive.whole_lists(item, lambda _: sentences)] == [1, 2, 3]


def test_a_list_whose_first_item_shares_the_announcing_sentence_is_kept_whole() -> None:
    """"what two changes does SDCD make?" quoted "… improves previous DCD methods in two ways: (1) It employs …" and
    not "(2) It uses a training procedure …"."""
    sentences = ["But existing DCD methods are numerically unstable.",
                 "We propose SDCD, a new method that improves previous DCD methods in two ways: (1) It employs an alternative "
                 "constraint for acyclicity; this constraint is more stable.",
                 "(2) It uses a training procedure tailored for sparse causal graphs.", "We first derive SDCD and prove its stability."]
    quotes = [extractive.Quote(0, 1, sentences[1], 0.9), extractive.Quote(0, 3, sentences[3], 0.8)]
    assert [q.position for q in extractive.whole_lists(quotes, lambda _: sentences)] == [1, 2, 3]
    item = [extractive.Quote(0, 2, sentences[2], 0.9)]
    assert [q.position for q in extractive.whole_lists(item, lambda _: sentences)] == [1, 2]


def test_a_list_of_views_told_as_the_first_and_the_second_is_kept_whole() -> None:
    """"what two views?" quoted "… give two competing visions of what it means to be an (ethical) agent." and neither."""
    sentences = ["What is agency, and why does it matter?",
                 "In this work, we give two competing visions of what it means to be an (ethical) agent.",
                 "The first view, which we term mechanistic, is commonly assumed in AI research.",
                 "Under the second view, which we term volitional, AI can no longer be considered an ethical agent.",
                 "We discuss the implications of each of these views."]
    quotes = [extractive.Quote(0, 1, sentences[1], 0.9), extractive.Quote(0, 4, sentences[4], 0.8)]
    assert [q.position for q in extractive.whole_lists(quotes, lambda _: sentences)] == [1, 2, 3, 4]


def test_a_detail_asked_of_a_described_paper_is_answered_about_it_though_another_states_the_kind(shipped: Assistant) -> None:
    """"which LLMs did the theory of mind representation paper probe?" found that paper first, then was answered about a
    position paper on LLM claims, whose sentences name LLMs: the paper described is the one asked about, partial."""
    answer = shipped.ask("which LLMs did the theory of mind representation paper probe?")
    assert answer.citations[0].title == "Language Models Represent Beliefs of Self and Others", answer.text
    assert answer.partial and "which LLMs" in answer.missing


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_precise_number_the_question_quotes_picks_the_paper_writing_it(tmp_path: Path) -> None:
    """"how long does Stable Audio take to generate 95 seconds of audio?": the abstract never says "Stable Audio", and
    the answer was about a vocoder whose sentences matched the question better; the one writing "95 sec" is asked about."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"Audio|Waveform|Speech", p["title"])))
    answer = assistant.ask("how long does Stable Audio take to generate 95 seconds of audio?")
    assert answer.citations[0].title == "Fast Timing-Conditioned Latent Audio Diffusion", answer.text
    assert "in 8 sec on an A100 GPU" in answer.text
