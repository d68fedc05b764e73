"""A follow-up's retrieval query: the turns that set its topic, and no older one; whether a question asks for papers."""

from __future__ import annotations

import pytest

from assistant.text.questions import (
    asks_for_several,
    asks_for_some_of_them,
    described_one,
    has_own_topic,
    is_follow_up,
    moves_on,
    placed_one,
    points_back_in_itself,
    standalone_query,
)

PREPBN = "What is PRepBN and what problem does it solve in Transformers?"
NERF = "Is there a paper about shrinking the storage footprint of grid-based neural radiance field models?"


def _turns(*questions: str) -> list[dict[str, str]]:
    return [message for q in questions for message in ({"role": "user", "content": q}, {"role": "assistant", "content": "An answer [1]."})]


def test_a_new_question_before_a_follow_up_ends_the_earlier_topic() -> None:
    """Carrying the PRepBN question into "what objective does it introduce?" after the NeRF one sent the search to a third paper."""
    assert standalone_query("What training objective does it introduce?", _turns(PREPBN, NERF)) == f"{NERF} What training objective does it introduce?"


def test_a_chain_of_follow_ups_keeps_the_question_that_set_the_topic() -> None:
    assert standalone_query("And what does it compare against?", _turns(PREPBN, NERF, "What objective does it use?")) == (
        f"{NERF} What objective does it use? And what does it compare against?"
    )
    assert standalone_query(NERF, _turns(PREPBN)) == NERF  # a question with its own topic is its own query


@pytest.mark.parametrize(("question", "several"), [
    ("any works on pruning spiking networks?", True),
    ("Which works study label noise on graphs?", True),
    ("sequential goodness of fit test that works on streaming data", False),  # the verb
    ("does it still work if it works on text only?", False),
    ("which of them quantize the cache?", True),
    ("which of these handle missing data?", True),
    ("which one is distribution-preserving?", True),
    ("how many benchmarks is RPO tested on and which ones?", False),  # the benchmarks it counts, named
])
def test_works_asks_for_papers_only_as_a_noun(question: str, several: bool) -> None:
    assert asks_for_several(question) is several


@pytest.mark.parametrize(("question", "follow_up"), [
    ("which LLMs do better there, open or closed source ones?", True),
    ("what datasets are used there", True),
    ("what are the two methods called?", True),
    ("what is the unified model called?", True),  # "called" asks for a name: two words of its own
    ("how many control tasks?", True),  # "how many" is the question's form
    ("how many control tasks does CoIn use?", False),
    ("what is the uncertainty-aware reward model called?", False),
    ("what is the proposed loss?", True),
    ("what's the overlooked aspect?", True),  # two words of its own: "what" and "what's" are none
    ("Is there work on pruning spiking neural networks?", False),
    ("Has there been any work on graph rewiring with virtual nodes?", False),
    ("Which papers do anomaly detection?", False),  # a list is asked of the whole index: one word of its own is enough
    ("Which papers use MuJoCo?", False),
    ("which papers use it?", True),
    ("any other papers?", True),
    ("and in the finite horizon case?", True),  # a question going on from the last: "and", "but", "also"
    ("And is there work on pruning spiking neural networks?", False),
])
def test_there_or_the_two_methods_point_back_unless_it_asks_whether_work_exists(question: str, follow_up: bool) -> None:
    assert is_follow_up(question) is follow_up


@pytest.mark.parametrize(("question", "follow_up"), [
    ("does the forward-only one need backprop?", True),
    ("and the second one, what data does it train on?", True),
    ("how do the GAN-based ones compare?", True),
    ("which ones are about LLMs?", True),
    ("Is anyone building a one-shot pruning method for LLMs?", False),
    ("which single-stage detectors use one anchor per location?", False),
    ("what is the best one-shot pruning method for LLMs?", False),
])
def test_the_one_described_by_a_word_points_back(question: str, follow_up: bool) -> None:
    """"the forward-only one" after a list of test-time adaptation papers is one of them: searched alone, the
    question (four words of its own) was declined."""
    assert is_follow_up(question) is follow_up


@pytest.mark.parametrize(("question", "moving"), [
    ("what about for tabular data?", True),
    ("And how about graphs?", True),
    ("ok and what about defenses?", True),
    ("and for transformers?", True),
    ("And for streaming data, where you can't keep everything in memory?", True),
    ("and for how long did they train it?", False),
    ("And on ImageNet?", False),
    ("anything similar for diffusion-generated images?", True),
    ("thanks. what about papers on continual learning?", True),
    ("hmm ok, what about graphs?", True),
    ("is there something like that for speech?", True),
    ("What about the loss makes it robust?", False),
    ("Is there work on similar molecules?", False),
    ("what is known about tabular data?", False),
])
def test_what_about_or_anything_similar_moves_the_conversation_on(question: str, moving: bool) -> None:
    assert moves_on(question) is moving


@pytest.mark.parametrize(("question", "some"), [
    ("which of them quantize the cache?", True),
    ("which ones are about LLMs?", True),
    ("which one is distribution-preserving?", True),
    ("which one-shot pruning methods work for LLMs?", False),
    ("Which papers study machine unlearning?", False),
])
def test_which_of_them_or_which_one_asks_for_some_of_the_conversations_papers(question: str, some: bool) -> None:
    assert asks_for_some_of_them(question) is some


@pytest.mark.parametrize(("question", "described"), [
    ("does the forward-only one need backprop?", "forward-only"),
    ("how do the GAN-based ones compare?", "GAN-based"),
    ("what about the one on anomaly detection?", "anomaly detection"),
    ("and the one that uses logic rules, how does it work?", "uses logic rules"),
    ("tell me more about the second one", ""),  # a place, not a description
    ("which one is best?", ""),
])
def test_the_one_a_follow_up_points_back_at_is_described_by_its_words(question: str, described: str) -> None:
    assert described_one(question) == described


@pytest.mark.parametrize(("question", "place"), [
    ("the second one - what does it do?", 1),
    ("what about the last paper?", -1),
    ("and the 3rd one?", 2),
    ("what does the last layer do?", None),  # a place in the model, not among the papers
    ("what is the first step?", None),
])
def test_a_place_among_the_papers_shown_is_read_from_the_second_one(question: str, place: int | None) -> None:
    assert placed_one(question) == place



@pytest.mark.parametrize(("question", "in_itself"), [
    ("is there a model that rewrites a proposed molecule into one that can actually be synthesized?", True),
    ("a memory layer storing pairs of word vectors shows oscillations when it is trained, why is that?", True),
    ("Among substitutes for backprop that encode errors as activity differences, is there an analysis of the approach?", True),
    ("What training objective does that method introduce?", False),
    ("How much of the teacher's performance does it retain after distillation?", False),
    ("in how many games does it beat humans", False),
    ("which LLMs do better there, open or closed source ones?", False),
    ("How do the authors measure calibration?", False),
])
def test_a_pronoun_after_the_question_s_own_words_may_point_at_them(question: str, in_itself: bool) -> None:
    """"a model that …" and "… when it is trained" point inside the question; a pronoun before the question has said
    what it is about points back at the conversation."""
    assert points_back_in_itself(question) is in_itself


@pytest.mark.parametrize(("turn", "own"), [
    ("is there a model that rewrites a proposed molecule into one that can actually be synthesized?", True),
    ("Is there work on pruning spiking neural networks?", True),
    ("What training objective does that method introduce to exploit the uneven importance of the grid?", False),
    ("is it faster?", False),
])
def test_an_earlier_turn_whose_pointing_words_point_inside_it_set_a_topic_of_its_own(turn: str, own: bool) -> None:
    assert has_own_topic(turn) is own


def test_a_paper_s_counted_methods_are_no_papers_asked_for() -> None:
    from assistant.text.questions import asks_for_several

    assert not asks_for_several("which three pretraining methods does UniCorn unify?")
    assert asks_for_several("which methods prune spiking networks?") and asks_for_several("which two papers study pruning?")
