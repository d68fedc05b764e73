"""Questions that name a paper by its title or its authors, and topic questions that only share its words."""

from __future__ import annotations

import pytest

from assistant.text.naming import (
    capitalised_terms,
    names_author,
    names_title,
    names_whole_title,
    nicknamed,
    own_name,
    proper_words,
    short_names,
    surname,
    without_authors,
    without_calling,
)

NEGATIVE = "Don't be so Negative! Score-based Generative Modeling with Oracle-assisted Guidance"
DIRAC = "DiracDiffusion: Denoising and Incremental Reconstruction with Assured Data-Consistency"
CLUSTER = "Just Cluster It: An Approach for Exploration in High-Dimensions using Clustering and Pre-Trained Representations"


@pytest.mark.parametrize(("question", "title"), [
    ('What does the paper "Don\'t be so Negative!" propose?', NEGATIVE),
    ("What is DiracDiffusion?", DIRAC),
    ("How does Just Cluster It handle exploration in 3-D environments?", CLUSTER),
    ("the one about score based generative modeling with oracle assisted guidance", NEGATIVE),
    ("What does “Incremental Reconstruction” mean in that paper?", DIRAC),
    ("Compare Reflective Policy Optimization with PPO", "Reflective Policy Optimization"),  # a short title, used whole
    ("which four actions can a node take in cooperative GNNs?", "Cooperative Graph Neural Networks"),  # an acronym for its words
])
def test_a_quoted_piece_a_run_of_title_words_or_the_name_before_the_colon_names_the_paper(question: str, title: str) -> None:
    assert names_title(question, title)


@pytest.mark.parametrize(("question", "title"), [
    ("Is there work on diffusion models for planning?", "Diffusion Models for Planning in Robotics"),
    ("Is there work on large language models for speech emotion recognition?", "Large Language Models for Time Series Forecasting"),
    ("How does denoising diffusion reconstruct images?", DIRAC),
    ('What is a "universal critic"?', NEGATIVE),
    ("Is there work on exploration with clustering?", CLUSTER),
    ("Is there work on policy optimization that reflects on past trajectories?", "Reflective Policy Optimization"),
    ("which four actions can a node take in GNNs?", "Cooperative Graph Neural Networks"),
])
def test_a_topic_question_sharing_a_few_title_words_does_not(question: str, title: str) -> None:
    assert not names_title(question, title)


def test_authors_are_named_by_surname_cues() -> None:
    authors = ["Carl Hvarfner", "Erik Orm Hellsten", "Luigi Nardi"]
    assert names_author("What simple change do Hvarfner et al. make?", authors)
    assert names_author("In Nardi's paper, what is the prior?", authors)
    assert names_author("the high-dimensional BO paper by hellsten", authors)
    assert names_author("the high-dimensional BO paper by Erik Hellsten", authors)  # a full name: the surname counts
    assert names_author("What do Hvärfner et al. propose?", authors)  # accents folded
    assert not names_author("What do Nardi et al. propose?", authors)  # "et al." follows the first author
    assert names_author("What do Nardi et al. propose?", authors, co_author=True)  # ... or, failing that, a senior one
    assert not names_author("Does Bayesian optimization work in high dimensions?", authors)
    assert not names_author("Which optimizer did Smith et al. use?", authors)
    assert surname("Hvarfner, Carl") == "Hvarfner" and surname("Carl Hvarfner") == "Hvarfner"


def test_a_capitalised_surname_before_paper_names_its_first_author() -> None:
    """"Korkmaz deep rl diagnosing paper - which environment do they experiment in?" was declined: a surname typed bare,
    before the words calling the paper, was no cue."""
    assert names_author("Korkmaz deep rl diagnosing paper - which environment do they experiment in?", ["Ezgi Korkmaz"])
    assert names_author("what does the Hvarfner BO paper change?", ["Carl Hvarfner", "Luigi Nardi"])
    assert not names_author("what does the Nardi BO paper change?", ["Carl Hvarfner", "Luigi Nardi"])  # not the first author
    assert not names_author("korkmaz deep rl paper?", ["Ezgi Korkmaz"])  # in lower case, any word may stand there


def test_a_full_name_names_a_paper_only_if_its_author_has_that_given_name_too() -> None:
    """"The paper by Zhiqing Sun on easy-to-hard generalization" (none in the conference) was answered about a paper
    with a Jialiang Sun among its authors: the surname alone matched."""
    authors = ["Logan Murphy", "Kaiyu Yang", "Jialiang Sun", "Zhaoyu Li"]
    assert not names_author("the paper by Zhiqing Sun on easy-to-hard generalization", authors, co_author=True)
    assert names_author("the paper by Jialiang Sun on geometry", authors, co_author=True)
    assert names_author("the paper by Sun on geometry", authors, co_author=True)  # a surname alone still names it
    assert names_author("the geometry paper by Sun, Jialiang", ["Sun, Jialiang"])


def test_several_surnames_before_et_al_name_the_first_author() -> None:
    authors = ["Mengzhou Xia", "Sadhika Malladi", "Suchin Gururangan"]
    assert names_author("How do Xia, Malladi et al. pick instruction data?", authors)
    assert names_author("How do Xia and Malladi et al. pick instruction data?", authors)
    assert not names_author("How do Malladi, Xia et al. pick instruction data?", authors)  # the first listed is the first author
    assert names_author("How do Mengzhou Xia et al. pick instruction data?", authors)  # a given name, not a list of surnames
    assert without_authors("How do Xia, Malladi et al. pick instruction data?", authors) == "How do pick instruction data?"


def test_a_plain_word_leading_a_title_names_it_where_the_question_capitalises_it_past_its_start() -> None:
    title = "Seesaw: Compensating for Nonlinear Reduction with Linear Computations for Private Inference"
    assert names_title("How much does Seesaw reduce latency?", title)
    assert not names_title("Seesaw effects in training dynamics?", title)  # a sentence's first word
    assert not names_title("how does seesaw reduce latency?", title)  # lower case: a word


def test_a_name_spelling_a_common_word_names_its_paper_only_as_the_title_writes_it() -> None:
    title = "AND: Audio Network Dissection for Interpreting Deep Acoustic Models"
    assert names_title("What does AND find about acoustic models?", title)
    assert not names_title("Compare DRCT and WAVES: how do their goals differ?", title)  # "and" is a word
    assert names_title("what is drct", "DRCT: Diffusion Reconstruction Contrastive Training towards Universal Detection")
    score = "SCoRe: Submodular Combinatorial Representation Learning"
    common = {"score", "next"}.__contains__  # words many abstracts use
    assert not names_title("What BLEU score does PinNet reach?", score, common)
    assert names_title("What does SCoRe learn?", score, common)
    assert not names_title("how do models forecast where cars will drive next?", "NExT: Teaching Large Language Models to Reason", common)
    position = "Position: Graph Foundation Models Are Already Here"
    assert not names_title("Position of the camera: does it matter for pose estimation?", position, {"position"}.__contains__)  # a plain word


@pytest.mark.parametrize(("question", "terms"), [
    ("How did Template Programs do against task-specific alternatives?", ["template programs"]),
    ("Label Smoothing for partial labels: does it help?", []),  # one word is left past the sentence's start
    ("Does Direct Preference Optimization overfit?", ["direct preference optimization"]),
    ('what does "Tandem Transformers" claim, and is Speculative Decoding faster?', ["speculative decoding"]),
    ("how do tandem transformers work?", []),
])
def test_capitalised_runs_past_the_questions_start_are_the_terms_a_title_may_coin(question: str, terms: list[str]) -> None:
    assert capitalised_terms(question) == terms


def test_surnames_listed_name_a_paper_only_if_all_are_its_authors() -> None:
    authors = ["Aleksandar Petrov", "Philip Torr", "Adel Bibi"]
    assert names_author("What do Petrov, Torr and Bibi show about prompting?", authors)
    assert names_author("What do Bibi and Petrov show?", authors)
    assert names_author("the Petrov, Torr, Bibi paper on prompting", authors)  # listed with commas alone
    assert not names_author("the Petrov, Smith, Bibi paper on prompting", authors)
    assert not names_author("What do Petrov, Torr and Smith show?", authors)
    assert not names_author("How do TENG and DPOT differ?", ["Zhuo Chen", "Jacob McCarran", "Teng Li"])  # two methods


def test_surnames_that_name_the_paper_leave_the_words_its_sentences_are_matched_with() -> None:
    authors = ["Gustaf Ahdritz", "Tian Qin"]
    assert without_authors("How do Ahdritz et al. tell when a model lacks knowledge?", authors) == "How do tell when a model lacks knowledge?"
    assert without_authors("What is Ahdritz's probe trained on?", authors) == "What is probe trained on?"
    # a quoted title stays (its words are the topic), and so does "by <word>" that is no author's name
    kept = 'How does "A Sober Look at LLMs" learn by reconstruction?'
    assert without_authors(kept, authors) == kept


@pytest.mark.parametrize(("question", "words"), [
    ("Are there neural approaches that discover Granger-causal links?", ["Granger-causal"]),
    ("Hi, Is there work by Yoshua Bengio on flow networks?", ["Bengio"]),  # a greeting's function word; a first name
    ('What does "To Cool or not to Cool?" propose?', []),  # a quoted title
    ("Compare PANDA and the Graph Attention Retrospective paper", ["Retrospective"]),
    ("Granger causality in time series?", []),  # a sentence's first word
])
def test_capitalised_words_past_a_sentences_start_are_names(question: str, words: list[str]) -> None:
    assert proper_words(question) == words


GEMINI = ("We propose GeminiFusion, a pixel-wise fusion approach. Evaluations across 3D object detection and segmentation tasks, "
          "including RGB, depth, LiDAR, event data, etc. demonstrate the superior performance of our method.")


@pytest.mark.parametrize(("name", "title", "abstract"), [
    ("MorseDet", "Scale-Free Image Keypoints", "Keypoints matter. Our detector, MorseDet, is the first topology-based learning model."),
    ("SubLoRA", "Non-Vacuous Bounds", "To compress further, we devise SubLoRA, a simple low-dimensional parameterization."),
    ("DataVoyager", "Position: Data-driven Discovery", "Then, through DataVoyager, a proof-of-concept, we demonstrate how it works."),
    ("ALMA-R", "Contrastive Preference Optimization", "We fine-tune. The resulting model, called ALMA-R, matches GPT-4."),
    ("IAI-Med", "Detecting Interactions", "We study VQA. The IAI-Med VQA dataset is now publicly available."),
    ("MCD", "Robust Detection", "Model change detection (MCD) finds shifts. It is cheap."),
    ("GeminiFusion", "GeminiFusion: Efficient Pixel-wise Multimodal Fusion", GEMINI),
    ("CB2M", "Learning to Intervene", "We introduce CB2Ms, which extend concept bottlenecks. CB2Ms remember interventions."),
    ("Moment-10M", "Momentor", "We design a data engine to construct Moment-10M, a large-scale video instruction dataset."),
    ("LTMLE", "Longitudinal Targeted Minimum Loss-based Estimation", "We propose Deep Longitudinal Targeted Minimum "
     "Loss-based Estimation (Deep LTMLE), a novel approach to estimate the counterfactual mean of outcome."),
])
def test_a_name_a_paper_gives_its_work_is_its_own(name: str, title: str, abstract: str) -> None:
    assert own_name(name, title, abstract)


@pytest.mark.parametrize(("name", "title", "abstract"), [
    ("LiDAR", "GeminiFusion: Efficient Pixel-wise Multimodal Fusion", GEMINI),  # listed among inputs, far from "our"
    ("MOS", "DFlow", "Experimental results show the highest MOS score among existing methods. It is fast."),
    ("tieredImageNet", "Fine-grained Classes", "It outperforms baselines, with 22% improvement on the tieredImageNet dataset."),
])
def test_a_term_a_paper_mentions_once_in_passing_is_not_its_name(name: str, title: str, abstract: str) -> None:
    assert not own_name(name, title, abstract)


@pytest.mark.parametrize(("question", "names"), [
    ("the super mario paper", ["super mario"]),
    ("what do the authors of the calibration bottleneck paper find?", ["calibration bottleneck"]),
    ("what two challenges does the discrete prompt optimization paper mention?", ["discrete prompt optimization"]),
    ("in the same paper, what do they find?", []),  # a place in the conversation, not a name
    ("the paper on pruning", []),
    ("two fists one heart paper?", ["two fists one heart"]),  # a title's first words, the question opening with them
    ("the Two Fists, One Heart paper - what do they fuse?", ["two fists one heart"]),
    ("is there a paper on pruning?", []),
])
def test_the_x_paper_calls_a_paper_by_x(question: str, names: list[str]) -> None:
    assert nicknamed(question) == names



@pytest.mark.parametrize(("question", "asked"), [
    ("the GNN editing paper - what property do existing editors lack?", "what property do existing editors lack?"),
    ("Lou, Meng and Ermon's discrete diffusion paper: which model does it outperform?", "which model does it outperform?"),
    ("Teney's selective mixup paper: why does it actually work?", "why does it actually work?"),
    ("what does the paper on graph editing do?", "what does the paper on graph editing do?"),
    ("In the paper showing that gating layers imitate kernel prediction, what PSNR?",
     "In the paper showing that gating layers imitate kernel prediction, what PSNR?"),
])
def test_what_a_question_calls_its_paper_is_not_what_it_asks(question: str, asked: str) -> None:
    assert without_calling(question) == asked


@pytest.mark.parametrize(("question", "names"), [
    ("Reprompting vs Promptbreeder: how does each find better prompts?", ["reprompting", "promptbreeder"]),
    ("Seesaw: what does it reduce?", ["seesaw"]),
    ("How much does Seesaw reduce communication?", ["seesaw"]),
    ("Does label smoothing help?", []),  # a sentence's first word
])
def test_a_question_s_first_word_set_apart_may_be_a_paper_s_short_name(question: str, names: list[str]) -> None:
    """"Reprompting vs Promptbreeder" compared Promptbreeder with a paper on iterative prompting: "Reprompting", the
    question's first word, was read as any sentence's start, though the title "Reprompting: …" leads with it."""
    assert short_names(question) == names


def test_a_whole_title_is_named_with_an_acronym_for_its_words_but_not_by_a_run_of_topic_words() -> None:
    """Found outside retrieval's candidates by a word few titles use, only a title written whole names its paper:
    "text-to-image diffusion models" is four of a title's words in a row, a topic, not "Prompting4Debugging"."""
    assert names_whole_title("which four actions can a node take in cooperative GNNs?", "Cooperative Graph Neural Networks")
    assert names_whole_title("How does Just Cluster It explore?", CLUSTER)
    assert not names_whole_title(
        "The trick text-to-image diffusion models use to stick to the prompt",
        "Prompting4Debugging: Red-Teaming Text-to-Image Diffusion Models by Finding Problematic Prompts")
