"""Topics a question names outright: found in the question, looked for in the abstracts, and the abstention they cause."""

from __future__ import annotations

import pytest

from assistant.engine import Assistant
from assistant.text.topics import mentions, named_topics


@pytest.mark.parametrize(
    ("question", "topics"),
    [
        ("What neural methods make smooth slow motion, i.e. video frame interpolation?", ["video frame interpolation"]),
        ("Which diffusion method dresses a person in a garment image (virtual try-on)?", ["virtual try-on"]),
        ("Is there work on recognizing people from their walk, also known as gait recognition?", ["gait recognition"]),
        ("How do models choose settings (initial guesses, solver parameters) for legacy code?", []),  # a list of examples
        ("Can agents agree when views differ (not necessarily identical)?", []),  # an aside opening with a function word
        ("What is PRepBN (PRepBN) and how do NeRFs (NeRFs) compress?", []),  # names: matched exactly by retrieval
        ("Is there work (starting from something as simple as a linear classifier) on boosting?", []),  # a description
        ("Is there work on pruning spiking neural networks?", []),
    ],
)
def test_named_topics(question: str, topics: list[str]) -> None:
    assert named_topics(question) == topics


def test_mentions_needs_every_word_of_a_term_close_together() -> None:
    abstract = "We study video generation. Our model produces frames at high resolution. Temporal interpolation of latent codes helps."
    assert mentions("Recognizing people by gait is hard.", "gait recognition") is False
    assert mentions("Gait recognition from surveillance video.", "gait recognition") is True
    assert mentions(abstract, "video frame interpolation") is False  # the words are there, never together
    assert mentions("A survival model for censored data.", "survival") is True


def test_a_named_topic_no_abstract_mentions_abstains_and_says_so(shipped: Assistant) -> None:
    answer = shipped.ask("What neural methods synthesize in-between frames to turn ordinary footage into smooth slow motion, i.e. video frame interpolation?")
    assert answer.abstained and not answer.citations and answer.confidence == "low"
    assert "None of the retrieved abstracts mentions “video frame interpolation”" in answer.text


def test_a_named_topic_an_abstract_mentions_is_answered(shipped: Assistant) -> None:
    answer = shipped.ask("How can the storage of neural radiance fields on a grid be reduced, i.e. NeRF compression?")
    assert not answer.abstained and "nerf" in (answer.citations[0].title or "").lower()
