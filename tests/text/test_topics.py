"""Topics a question names outright: found in the question, looked for in the abstracts, and the abstention they cause."""

from __future__ import annotations

import pytest

from assistant.engine import Assistant
from assistant.text.topics import closing_application, closing_topic, lacks_application, mentions, named_topics


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


@pytest.mark.parametrize(("question", "application"), [
    ("bandits for recommender systems", "recommender systems"),
    ("detecting adversarial examples in medical imaging", "medical imaging"),
    ("a model that can explain why grokking happens on modular addition", "modular addition"),  # the last phrase
    ("any work on spiking neural networks?", ""),  # the whole topic, nothing before it
    ("time series forecasting with learnable decomposition instead of moving average kernels", ""),  # a contrast
    ("What FID does D-Flow reach on ImageNet?", ""),  # a name: a detail asked of a paper
    ("Jessica Dai's position paper on agency - what two views?", ""),
    ("How can a language model be made to forget specific passages it memorized during training, such as copyrighted "
     "books?", ""),  # a long question's last phrase may be an aside
])
def test_the_application_a_short_topic_question_closes_on(question: str, application: str) -> None:
    assert closing_application(question) == application


def test_a_paper_lacks_the_application_when_it_uses_none_of_its_words_the_corpus_knows() -> None:
    bandit = "Multi-armed Bandits with Offline Data. We leverage biased offline data to speed up online bandit learning."
    assert lacks_application(bandit, "recommender systems", used_by=lambda stem: 0.01)
    assert not lacks_application(bandit, "recommender systems", used_by=lambda stem: 0.0)  # words no paper uses: phrasing
    assert not lacks_application("DWN runs on an FPGA-based accelerator.", "fpgas", used_by=lambda stem: 0.01)  # "FPGA-based"
    jl = "The sparse Johnson-Lindenstrauss transform embeds points while preserving all pairwise distances."
    assert lacks_application(jl, "privacy-preserving record linkage", used_by=lambda stem: 0.01)  # a hyphenated word counts whole
    assert not lacks_application("We recommend items to users of recommender systems.", "recommender systems", used_by=lambda stem: 0.01)
    backdoor = "Tampering with a pretrained model's weights compromises the privacy of the finetuning data of learning."
    common = {"learn": 0.5}  # "learning", in half the chunks, is no application's word
    assert lacks_application(backdoor, "federated learning clients", used_by=lambda stem: common.get(stem, 0.01))


def test_a_short_topic_question_whose_application_the_closest_paper_never_mentions_abstains_and_says_so(shipped: Assistant) -> None:
    """"bandits for recommender systems" was answered at high confidence with a bandit paper that never mentions
    recommendation: its words are the question's but for the application asked about."""
    answer = shipped.ask("bandits for recommender systems")
    assert answer.abstained and "does not mention “recommender systems”" in answer.text, answer.text
    assert not shipped.ask("bandits with offline data").abstained


def test_a_paper_named_by_its_title_words_lacking_the_application_asked_is_a_partial_answer(shipped: Assistant) -> None:
    """"deep gaussian processes for weather forecasting" names the deep GP paper by its title's words, and was answered
    in full, though its abstract never mentions weather: about this paper, but not the application asked."""
    answer = shipped.ask("deep gaussian processes for weather forecasting")
    assert not answer.abstained and answer.partial and "weather forecasting" in " ".join(answer.missing), answer.text
    assert answer.citations[0].title.startswith("Sparse Inducing Points in Deep Gaussian Processes")


@pytest.mark.parametrize(("question", "topic"), [
    ("machine unlearning for diffusion models", "machine unlearning"),
    ("any work on generating knitting patterns with machine learning", "generating knitting patterns"),
    ("Is there a model that detects potholes in road images?", ""),  # a clause, not a topic's name
    ("What FID does D-Flow reach on ImageNet?", ""),  # no application closes it
])
def test_the_topic_a_short_question_asks_about_before_its_application(question: str, topic: str) -> None:
    assert closing_topic(question, closing_application(question)) == topic


def test_a_short_topic_question_whose_method_the_closest_paper_never_mentions_abstains_and_says_so(shipped: Assistant) -> None:
    """"machine unlearning for diffusion models" was answered at high confidence with a paper on diffusion models'
    reproducibility: the application was there, what is asked about it was not."""
    answer = shipped.ask("machine unlearning for diffusion models")
    assert answer.abstained and "does not mention “machine unlearning”" in answer.text, answer.text
    assert not shipped.ask("watermarking images generated by diffusion models").abstained
