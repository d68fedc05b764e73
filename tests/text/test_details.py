"""What a question asks for, and whether an abstract states it: the rules behind partial answers."""

from __future__ import annotations

import pytest

from assistant.text import details
from assistant.text.details import asks, check, listed, record_asks, unmentioned_names
from assistant.text.sentences import split_sentences

ABSTRACT = split_sentences(
    "Large language models (LLMs) are costly to serve. We introduce SparQ Attention, which fetches only part of the "
    "cached history. SparQ Attention brings up to 8x savings in data transfers when evaluating Llama 2 and Mistral "
    "models on a wide range of tasks. We employ a large language model (GPT-4) to describe the masks. Experiments "
    "on 31 benchmark tabular datasets and six sensor datasets show gains of 4.5% on average."
)


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        ("How many GPU hours did training take, and which GPU was used?", ["how many GPU hours", "which GPU"]),
        ("What BLEU score does it reach?", ["what BLEU score"]),
        ("Under which open-source licence is the code released?", ["which open-source licence"]),
        ("For SelMatch, which network architecture produced the expert trajectories?", ["which network architecture"]),
        ("What does generating the instructions cost in API fees per task?", ["what it costs"]),
        ("What compute budget did Albatross need for training?", ["what compute budget"]),  # an amount of a measure
        ("What's the name of the algorithm Chaudhury et al. design?", ["what it is called"]),
        ("How many benchmarks is RPO tested on and which ones?", ["how many benchmarks", "which benchmarks"]),  # their names too
        ("What do they conclude about the cost of privacy?", []),  # a finding about the cost, not an amount
        ("Is there work on pruning spiking neural networks?", []),
        ("Is there a decoding scheme in which the model writes the ending first?", []),  # a relative clause
        ("What does learning theory say about how many samples are needed?", []),  # an indirect question
        ("Which papers propose new neuron models for spiking networks?", []),  # asks for papers, not a detail
    ],
)
def test_asks_finds_the_facts_a_question_asks_for(question: str, phrases: list[str]) -> None:
    assert [ask.phrase for ask in asks(question)] == phrases


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        ("How much does SparQ Attention save, and which models was it evaluated on?", []),
        ("On how many benchmark tabular datasets was it evaluated?", []),
        ("How many sensor datasets were used?", []),  # "six" counts
        ("Which large language model describes the masks?", []),  # GPT-4 names one; "(LLMs)" only spells a kind
        ("How many tasks was it evaluated on?", ["how many tasks"]),  # "a wide range of tasks" is no count
        ("How many reviews were analysed?", ["how many reviews"]),
        ("Which licence is the code under?", ["which licence"]),
        ("How many parameters does SparQ Attention add?", ["how many parameters"]),
        ("Which GPU was used?", ["which GPU"]),
        ("How many datasets gave 4.5% gains?", []),
        ("What is SparQ Attention's speedup in tokens per second?", ["what speedup"]),  # whose speedup is not what is asked
    ],
)
def test_check_lists_what_the_abstract_does_not_give(question: str, missing: list[str]) -> None:
    assert [ask.phrase for ask in check(question, asks(question), ABSTRACT).missing] == missing


def test_asks_are_listed_as_one_phrase() -> None:
    assert listed(["which GPU"]) == "which GPU"
    assert listed(["which GPU", "how many days", "what BLEU score"]) == "which GPU, how many days or what BLEU score"


@pytest.mark.parametrize(
    ("question", "unmentioned"),
    [
        ("Does SpikePrune beat its baselines on HPO-B?", ["anything about HPO-B"]),
        ("Was SpikePrune tested on CIFAR, and with ResNet-18?", ["anything about ResNet-18"]),
        ("How large is the GSM8K-based benchmark SpikePrune uses?", ["anything about GSM8K"]),
        ("How does SpikePrune compare with LP relaxations?", []),  # two letters name a kind of method
        ("How do SpikePrune and GraphHop differ?", []),  # each name is its own paper's
        ("How does SpikePrune prune spiking networks?", []),
        ("Was SpikePrune compared with OPT-1.3B or GPT-3.5?", ["anything about GPT-3.5", "anything about OPT-1.3B"]),  # a version is the name's
        ("Was SpikePrune tested on CIFAR-10.1?", ["anything about CIFAR-10.1"]),
    ],
)
def test_names_a_question_uses_that_the_paper_never_mentions(question: str, unmentioned: list[str]) -> None:
    spiking = "SpikePrune: channel pruning for spiking networks. Experiments on CIFAR show large savings."
    assert [ask.phrase for ask in unmentioned_names(question, spiking)] == unmentioned


def test_x2y_shorthand_is_written_as_x_to_y() -> None:
    """"Gradient based prompt optimisation for text2image diffusion" was answered "its abstract does not state anything
    about text2image" of a paper on "text-to-image diffusion models"."""
    abstract = "This paper introduces the first gradient-based framework for prompt optimization in text-to-image diffusion models."
    assert unmentioned_names("gradient based prompt optimisation for text2image diffusion", abstract) == []
    assert [ask.phrase for ask in unmentioned_names("prompt optimisation for text2video diffusion", abstract)] == ["anything about text2video"]


def test_a_name_another_paper_the_question_names_holds_is_not_missing() -> None:
    assert not unmentioned_names("Is SpikePrune faster than GraphHop?", "SpikePrune prunes.", ["GraphHop rewires graphs."])


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        ("What replay ratio exactly does it train at, and how often are the networks reset?", ["what replay ratio", "how often"]),
        ("On which speech datasets did it get its best MOS, and what was the exact MOS value?", ["which speech datasets", "what MOS"]),
        ("How long does pretraining take?", ["how long"]),
    ],
)
def test_asks_read_past_filler_words_and_ask_how_often_or_how_long(question: str, phrases: list[str]) -> None:
    assert [ask.phrase for ask in asks(question)] == phrases


def test_a_name_the_question_uses_is_stated_by_a_sentence_that_spells_it() -> None:
    """A "mention" ask (a name the subject's abstract lacks) is found in another sentence however it is hyphenated."""
    question = "Does SparQ Attention beat its baselines on HPO-B?"
    (mention,) = unmentioned_names(question, " ".join(ABSTRACT))
    assert check(question, [mention], ["Results on HPOB show gains."]).stated == [0]
    assert check(question, [mention], list(ABSTRACT)).missing == [mention]


def test_which_domains_is_answered_by_the_experiments_sentence_not_the_method_one() -> None:
    """A method sentence names its parts ("Monte Carlo Tree Search"); the domains are where the experiments are reported."""
    sentences = [
        "We use Monte Carlo Tree Search for Safe Policy Improvement with Baseline Bootstrapping in multi-agent domains.",
        "An empirical evaluation on multi-agent SysAdmin and multi-UAV Delivery shows that the approach scales to large domains.",
    ]
    question = "Which domains do they use to show that it scales?"
    assert check(question, asks(question), sentences).stated == [1]



def test_a_unit_the_question_names_must_be_in_the_stating_sentence() -> None:
    question = "What running time in seconds does Fast-Sampling take on one million points?"
    assert [ask.phrase for ask in asks(question)] == ["how many seconds"]
    assert check(question, asks(question), ["A 4-approximate solution is found in time O(ndk) with O(k) centers."]).missing
    assert check(question, asks(question), ["It clusters one million points in 12 seconds."]).stated == [0]


@pytest.mark.parametrize("sentence", [
    "From this analysis, we developed a tuning-free 2bit KV cache quantization algorithm, named KIVI.",
    "Weights are stored with 4-bit integers and activations with 8 bits.",
])
def test_how_many_bits_is_stated_by_a_count_of_bit_written_in_the_singular(sentence: str) -> None:
    """"How many bits does it use?" of KIVI was answered partial: "bits" is too short to lose its "s", and the
    abstract writes "a tuning-free 2bit KV cache quantization algorithm"."""
    question = "how many bits does it use?"
    assert check(question, asks(question), [sentence]).stated == [0]


@pytest.mark.parametrize(("question", "phrase"), [
    ("and what about their memory capacity?", "what memory"),
    ("What about its runtime?", "what runtime"),
    ("what is their accuracy on ImageNet?", "what accuracy"),
])
def test_what_about_its_or_their_thing_asks_for_that_thing(question: str, phrase: str) -> None:
    """"And what about their memory capacity?" was answered "its abstract does not state what about"."""
    assert [ask.phrase for ask in asks(question)] == [phrase]


def test_how_long_with_nothing_after_it_is_stated_by_a_duration_not_by_any_number() -> None:
    """"How long does X-Oscar take to generate an avatar?" was answered in full: "3D" and the digits of the
    abstract's project page ("anonymous1440.github.io") counted as the amount asked for."""
    question = "how long does X-Oscar take to generate an avatar?"
    sentences = [
        "Recent advancements in automatic 3D avatar generation guided by text have made significant progress.",
        "Our anonymous project page: https://anonymous1440.github.io/.",
        "It generates an avatar in 12 minutes on one GPU.",
    ]
    assert check(question, asks(question), sentences[:2]).missing
    assert check(question, asks(question), sentences).stated == [2]


def test_what_context_length_asks_for_a_length_but_a_length_complexity_measure_does_not() -> None:
    """"What context length does LoCoCo extend to?" asked for nothing, and the answer left out "extended the context
    length from 4K to 32K"; "length" is a quantity only as the last word of what is asked."""
    question = "what context length does LoCoCo extend to?"
    sentences = [
        "Experiments demonstrate that LoCoCo maintains consistently outstanding performance across various context lengths.",
        "During post-training tuning, we also effectively extended the context length from 4K to 32K using a KV cache of fixed size 512.",
    ]
    assert [ask.phrase for ask in asks(question)] == ["what context length"]
    assert check(question, asks(question), sentences).stated == [1]
    assert asks("What is the 'length complexity' measure in Malach's paper?") == []


def test_which_board_or_gpu_is_answered_by_a_name_beside_the_device() -> None:
    question = "Which FPGA board did they use for the accelerator?"
    far = ["We evaluate it on an FPGA-based hardware accelerator, and on a microcontroller, where it beats XGBoost in accuracy."]
    assert [ask.phrase for ask in check(question, asks(question), far).missing] == ["which FPGA board"]
    assert check(question, asks(question), ["We deploy the network on a Xilinx Zynq-7020 FPGA board."]).stated == [0]
    assert check("Which GPU was used?", asks("Which GPU was used?"), ["Training takes two days on 8 NVIDIA A100 GPUs."]).stated == [0]


def test_which_datasets_is_not_answered_by_a_name_in_a_sentence_that_reports_no_experiments() -> None:
    sentences = [
        "The expressivity of EGNNs has been explored with geometric variants of the Weisfeiler-Leman isomorphism test.",
        "Experiments on real-world datasets substantiate our analysis.",
    ]
    question = "Which molecular datasets do the experiments use?"
    assert [ask.phrase for ask in check(question, asks(question), sentences).missing] == ["which molecular datasets"]
    assert check(question, asks(question), [*sentences, "Experiments on QM9 and MD17 confirm it."]).stated == [2]


@pytest.mark.parametrize(("question", "stated"), [
    ("How much better is the online solver than its offline equivalent?", [0]),
    ("How much faster does it train?", [1]),
    ("How much smaller is the compressed model?", [2]),
    ("How much better is it on ImageNet?", []),  # a number, but no change stated beside it
])
def test_how_much_better_or_faster_is_stated_as_the_change_a_sentence_reports(question: str, stated: list[int]) -> None:
    sentences = [
        "The online solver shows a 1.72× improvement in theorems proved over an offline equivalent.",
        "Training gets a 2.3× speedup on 8 GPUs.",
        "Pruning reduces the model to 40% of its parameters.",
        "We evaluate on 3 datasets.",
    ]
    findings = check(question, asks(question), sentences[:3] if stated else sentences[3:])
    assert findings.stated == stated and bool(findings.missing) is not stated

@pytest.mark.parametrize(("question", "several"), [
    ("How do TENG and DPOT differ?", True),
    ("Compare the barycenter paper with Charms", True),
    ("What is the difference between A2Q+ and SqueezeLLM?", True),
    ("Contrast the two position papers", True),
    ("How many parallel sentences does Contrastive Preference Optimization need?", False),  # a method's name
    ("Which differentiable renderer does the paper train?", False),
    ("Is its accuracy comparable to full fine-tuning?", False),
    ("Is SpikePrune compared to magnitude pruning?", False),  # a baseline of one paper
])
def test_a_question_compares_papers_by_its_words_not_by_words_sharing_their_stems(question: str, several: bool) -> None:
    assert details.compares(question) is several


def test_a_precise_number_the_question_quotes_finds_the_sentence_writing_it() -> None:
    sentences = ["SF4 improves accuracy on LLaMA2-7B by 0.76%.", "It increases the accuracy of Phi-2 by up to 2.19% with 1.22% overhead."]
    assert details.quoting("which model gets up to 2.19% better?", sentences) == [1]
    assert details.quoting("is it 13x faster on top-5?", ["A 13x speedup.", "Top-5 accuracy rises."]) == [0]
    assert details.quoting("which 2 models do they compare?", ["We compare 2 models."]) == []  # not precise enough



@pytest.mark.parametrize(("question", "asked"), [
    ("who wrote the Chatbot Arena paper?", ["authors"]),
    ("which authors wrote TopDis?", ["authors"]),
    ("is Chatbot Arena an oral or a poster?", ["status"]),
    ("link to the paper?", ["link"]),
    ("who proposed DiracDiffusion, and is there a pdf?", ["authors", "link"]),
    ("What do the authors of the Catapults paper find about generalization?", []),
    ("how do the authors measure it?", []),
    ("Is there an oral on diffusion?", []),
    ("is Xu, Zeng and Paisley's DGP paper an oral?", ["status"]),  # the paper named by authors and a topic
    ("is there an oral paper on diffusion?", []),
    ("Which papers do link prediction?", []),
    ("Which models predict missing links?", []),
])
def test_what_a_question_asks_of_a_paper_s_record(question: str, asked: list[str]) -> None:
    assert record_asks(question) == asked


def test_which_model_it_outperforms_is_stated_by_a_sentence_that_sets_it_against_one() -> None:
    """"Which model does it outperform?" was answered by the sentence naming the paper's own models in capitals ("our
    Score Entropy Discrete Diffusion models (SEDD)"), not by the one saying what they beat."""
    sentences = [
        "Experimentally, we test our Score Entropy Discrete Diffusion models (SEDD) on standard language modeling tasks.",
        "For comparable model sizes, SEDD beats existing language diffusion paradigms and is competitive with "
        "autoregressive models, in particular outperforming GPT-2.",
    ]
    for question in ("Lou, Meng and Ermon's discrete diffusion paper: which model does it outperform?",
                     "which models does SEDD beat?", "which baseline models is it compared against?"):
        assert check(question, asks(question), sentences).stated == [1], question


def test_a_name_with_a_superscript_is_written_by_the_abstract_however_the_latex_reads() -> None:
    """"AD^epsilon" is the abstract's "AD$^\\varepsilon$" (stored as "AD^varepsilon"), not a name it lacks."""
    abstract = "In order to address this problem, we propose AD^varepsilon, a new data acquisition approach."
    assert unmentioned_names("what does AD^epsilon do for in-context RL?", abstract) == []
    assert unmentioned_names("what does S2IP-LLM align?", "We propose S^2IP-LLM to align the spaces.") == []


def test_a_rate_in_big_o_states_how_many() -> None:
    """A theory paper states how many iterations or samples as a rate ("within O(ε^-2) iterations")."""
    sentences = ["We answer these questions in a general framework of tangential Block Majorization-Minimization (tBMM).",
                 "We establish that tBMM converges to an ε-stationary point within O(ε^-2) iterations."]
    question = "how many iterations does tBMM need to reach an epsilon-stationary point?"
    assert check(question, asks(question), sentences).stated == [1]
    question = "what switching cost does the adaptivity constraints paper achieve?"  # "\\widetilde{\\mathcal{O}}" as stored
    sentence = "For the rare policy switch constraint, we achieve a widetildeO(log K) switching cost with a widetildeO(√K) regret."
    assert check(question, asks(question), [sentence]).stated == [0]


def test_a_rate_stated_in_words_states_what_rate() -> None:
    """"what rate of convergence does the hierarchical IPM achieve?" was partial: "a parametric rate of convergence"."""
    sentences = ["We propose a new distance that achieves a parametric rate of convergence.", "It metrizes weak convergence."]
    question = "what rate of convergence does the hierarchical IPM achieve?"
    assert check(question, asks(question), sentences) == details.Findings([0], [])
    assert check("what accuracy does it reach?", asks("what accuracy does it reach?"), sentences).missing  # no rate asked


def test_what_the_question_says_a_named_thing_does_finds_the_sentence_naming_it() -> None:
    """"Which model powers it?" was partial: "AnyTool is powered by … GPT-4" says no "model"; it says "powered"."""
    sentences = ["We introduce AnyTool, a large language model agent designed to revolutionize the utilization of tools.",
                 "AnyTool is powered by the function calling feature of GPT-4, eliminating the need for training external modules."]
    question = "which model powers it?"
    assert check(question, asks(question), sentences).stated == [1]
    question = "which model do they use?"  # "use" says nothing: the sentence must speak of a model
    assert check(question, asks(question), sentences[1:]).stated == []


def test_what_a_named_thing_is_done_for_is_read_past_the_question_s_subject() -> None:
    """"which LLM do they optimize instructions for?" quoted the sentences about optimizing instructions for "LLMs":
    the verb comes after "do they" / "does INSTINCT", "optimize" is written "optimization", and the words spelling the
    paper's own name ("INSTruction … Coupled with Transformers (INSTINCT)") name no model it is used for."""
    sentences = ["These motivate us to propose our INSTruction optimization usIng Neural bandits Coupled with Transformers (INSTINCT) algorithm.",
                 "We perform instruction optimization for ChatGPT and use extensive experiments to show that INSTINCT outperforms baselines."]
    for question in ("which LLM do they optimize instructions for?", "which LLM does INSTINCT optimize instructions for?"):
        assert [ask.verbs for ask in asks(question)] == [("optimize",)], question
        assert check(question, asks(question), sentences).stated == [1], question
    assert [ask.verbs for ask in asks("which LLMs did the in-context unlearning paper test?")] == [()]  # no verb of the subject's


def test_a_generic_kind_written_possessive_is_no_name() -> None:
    """"the LLM's computation" names no language model the question asks for."""
    sentence = "We introduce a framework called Patchscopes and show how it can answer questions about an LLM's computation."
    question = "Which language models, and at what sizes, was Patchscopes demonstrated on?"
    assert [ask.phrase for ask in check(question, asks(question), [sentence]).missing] == ["which language models", "what sizes"]


def test_a_language_model_is_a_model_not_a_language() -> None:
    """The last noun of a compound names the kind asked for: "which language model" asks for a model."""
    assert [ask.kind for ask in asks("which language model do they fine-tune?")] == ["model"]
    assert [ask.kind for ask in asks("which languages does the benchmark cover?")] == ["language"]
    assert [ask.kind for ask in asks("which benchmark datasets do they use?")] == ["dataset"]


def test_an_acronym_the_abstract_writes_out_is_not_a_name_it_lacks() -> None:
    """"bayesian uncertainty in MCTS planning" was partial, "does not state anything about MCTS": the abstract writes
    "Monte Carlo tree search"."""
    abstract = "The combination of Monte Carlo tree search and neural networks has revolutionized online planning."
    assert unmentioned_names("bayesian uncertainty in MCTS planning with thompson sampling", abstract) == []
    assert [a.phrase for a in unmentioned_names("does it beat MCTS on Go?", "We plan with a learned model.")] == ["anything about MCTS"]


@pytest.mark.parametrize(("question", "sentence"), [
    ("which research domains?",
     "It consists of 15 datasets spanning 3 research domains: computer vision, natural language processing, and graph learning."),
    ("what application domains does the SOQO paper mention?",
     "This problem class has connections to application domains including smart grid management and adaptive control."),
    ("which library does the attack rely on?",
     "Notably, our approach relies solely on information available in commonly used libraries such as scikit-learn."),
    ("what application areas of LP do they mention?",
     "Solving large-scale LP problems is important in various areas such as communication networks, power systems and finance."),
])
def test_a_kind_of_thing_followed_by_its_instances_states_them_in_lower_case_too(question: str, sentence: str) -> None:
    """"which research domains?" was partial: "3 research domains: computer vision, …" names none in capitals."""
    assert check(question, asks(question), ["We study the problem.", sentence]).stated == [1]
    question = "which datasets do they use?"  # another kind's list ("tasks such as …") does not state datasets
    assert check(question, asks(question), ["We evaluate on tasks such as image classification."]).stated == []


@pytest.mark.parametrize(("question", "sentence"), [
    ("in-context vectors paper - what tasks do they test on?",
     "ICV achieves better performance on diverse tasks including safety, style transfer, role-playing and formatting."),
    ("what tasks do they show it on?",
     "We validate our framework on controlled generation problems including: image and audio inverse problems and molecule generation."),
    ("which downstream tasks does it handle?", "It covers image restoration, image enhancement and feature extraction tasks."),
    ("which tasks do they validate the attack on?",
     "We validate our approach for the spoken command classification task and the Tweet emotion classification task."),
    ("which downstream tasks does ALERT-Transformer handle?",
     "These embeddings are then processed by a transformer model trained for object and gesture recognition."),
])
def test_which_tasks_is_stated_by_a_sentence_listing_them(question: str, sentence: str) -> None:
    """"in-context vectors paper - what tasks do they test on?" quoted sentences about what ICV is: "what tasks" was
    no ask, and none is read past a dash; an abstract that names no task leaves the answer partial."""
    assert [a.kind for a in asks(question)] == ["task"]
    assert check(question, asks(question), ["We study the problem.", sentence]).stated == [1]
    for unnamed in ("Extensive experiments on many tasks show gains.", "Offline optimization is an important task in many domains.",
                    "The model is used for training on streaming data."):
        assert [a.phrase for a in check(question, asks(question), [unnamed]).missing] == [asks(question)[0].phrase]
    assert [a.phrase for a in asks("OSSCAR - which vision models?")] == ["which vision models"]
    # a list of reductions ending "… and hallucinations that contemporary models …" lists no models
    question = "which LLMs were used?"
    assert check(question, asks(question), ["It reduces fallacious answers and hallucinations that contemporary models are prone to."]).stated == []


def test_a_benchmark_spelled_out_in_an_experiments_sentence_is_a_name_it_gives() -> None:
    """"Korkmaz deep rl diagnosing paper - which environment do they experiment in?": "Arcade Learning Environment
    (ALE)" spelled out in capitals was read as the paper's own method, so the answer was partial."""
    question = "which environment do they experiment in?"
    sentences = ["We introduce a method analysing unstable directions of deep neural policies.",
                 "Through experiments in the Arcade Learning Environment (ALE), we demonstrate the effectiveness of our technique."]
    assert check(question, asks(question), sentences).stated == [1]
    question = "which model do they use?"  # the paper's own, spelled out where it is proposed, still answers nothing
    assert check(question, asks(question), ["We propose the Time Series Lightweight Adaptive Network (TSLANet) and evaluate it on 10 datasets."]).missing


def test_what_a_thing_is_called_is_stated_by_the_sentence_naming_it_and_is_never_an_amount() -> None:
    """"What is the uncertainty-aware reward model called?" read "reward" as a metric and was partial ("does not state
    what uncertainty-aware reward"); "what is the resulting model called?" quoted the base model's name, not the result's."""
    question = "what is the uncertainty-aware reward model called?"
    sentences = ["Assessing response quality is hard.", "We propose a novel Uncertainty-aware Reward Model (URM) for paired responses."]
    assert check(question, asks(question), sentences) == details.Findings([1], [])
    question = "What weight-sharing trick does it add, and what is the resulting model called?"
    sentences = ["We establish a strong baseline network denoted as MobileLLM.", "We propose an immediate block-wise weight-sharing approach.",
                 "The resultant models, denoted as MobileLLM-LS, demonstrate a further accuracy enhancement."]
    assert check(question, asks(question), sentences).stated == [2]
    assert check("what is it called?", asks("what is it called?"), ["We study sparse attention."]).missing == []  # the title's
    question = "what is the conformer generation model called in the bitter pill paper?"
    assert [ask.kind for ask in asks(question)] == ["called"]
    question = "what is the phenomenon in GNN training dynamics called?"  # a name in lower case, given "dubbed as"
    sentences = ["We study their training dynamics in function space.", "This phenomenon is dubbed as kernel-graph alignment."]
    assert check(question, asks(question), sentences).stated == [1]


@pytest.mark.parametrize(("question", "stated"), [
    ("Which game was it?", [0]),  # a game is named where the paper says it was deployed, not only in experiments
    ("which Atari games does the sketch Bellman operator paper evaluate on?", []),
])
def test_which_game_needs_a_sentence_naming_a_game(question: str, stated: list[int]) -> None:
    sentences = ["Our agent has been deployed to Naruto Mobile, a popular fighting game with over 100 million users.",
                 "We examine the empirical performance of the algorithms on a suite of tabular tasks."]
    found = check(question, asks(question), sentences if stated else sentences[1:])
    assert found.stated == stated and bool(found.missing) == (not stated)


def test_a_few_counted_things_are_stated_by_the_sentence_listing_them() -> None:
    """"which three pretraining methods does UniCorn unify?" quoted "… inherits the merits of the three methods" and
    another paper's sentences: "methods" read as papers asked for, and nothing asked for the sentence naming them."""
    sentences = ["However, existing prevalent pre-training methods exhibit effectiveness for specific downstream tasks.",
                 "The lack of understanding of pre-training methods, including 2D graph masking, 2D-3D contrastive learning, "
                 "and 3D denoising, hampers the advancement of molecular foundation models.",
                 "We propose UniCorn, which inherits the merits of the three methods."]
    question = "which three pretraining methods does UniCorn unify?"
    assert [ask.kind for ask in asks(question)] == ["listed"] and not details.compares(question)
    assert check(question, asks(question), sentences) == details.Findings([1], [])
    assert check(question, asks(question), sentences[2:]).missing == []  # the title may list them: never "does not state"
    assert asks("which two papers study pruning?") == []  # papers asked for, not a paper's parts


def test_an_acronym_s_plural_the_abstract_writes_out_is_no_name_it_lacks() -> None:
    """"safe adaptive dose finding … using GPs" was partial ("anything about GPs") over "Gaussian process models"."""
    text = "SAFE-T flexibly learns non-parametric multi-output Gaussian process models for dose toxicity and efficacy."
    assert unmentioned_names("safe adaptive dose finding trials using GPs", text) == []
    assert [a.phrase for a in unmentioned_names("safe dose finding using SVMs", text)] == ["anything about SVM"]


def test_which_applications_is_stated_by_a_list_after_the_word() -> None:
    """"which applications validate the velocity field estimators?" asked nothing: "applications on domain adaptation and
    missing data imputation" is the answer."""
    question = "which applications validate the velocity field interpolation estimators?"
    sentences = ["We estimate velocity fields by interpolation.",
                 "We validate their effectiveness using novel applications on domain adaptation and missing data imputation."]
    assert [a.kind for a in asks(question)] == ["domain"] and check(question, asks(question), sentences).stated == [1]
    assert check(question, asks(question), ["It has applications in many areas."]).missing


def test_how_long_is_stated_by_a_number_counting_time_not_one_beside_a_long_word() -> None:
    """"how long does it take to render 95 seconds?" quoted "Generating long-form 44.1kHz stereo audio …", not "… up to
    95 sec at 44.1kHz in 8 sec on an A100 GPU"; and a three-letter unit is a word, not a prefix ("sec", not "section")."""
    question = "how long does it take to render 95 seconds?"
    sentences = ["Generating long-form 44.1kHz stereo audio from text prompts can be computationally demanding.",
                 "It is capable of rendering stereo signals of up to 95 sec at 44.1kHz in 8 sec on an A100 GPU."]
    assert check(question, asks(question), sentences).stated == [1]
    assert not check("how long does it take?", asks("how long does it take?"), ["Section 3 secures 2 proofs."]).stated



def test_an_acronym_no_paper_writes_is_no_missing_name_where_the_paper_writes_it_out() -> None:
    """"leverage foundational models for black-box optimization - what do they frame BBO around?" was partial
    ("anything about BBO"): no paper writes "BBO", and this one writes "black-box optimization"."""
    text = "Position: Leverage Foundational Models for Black-Box Optimization. We frame black-box optimization around sequence-based models."
    assert unmentioned_names("what do they frame BBO around?", text, unknown=["BBO"]) == []
    assert [a.phrase for a in unmentioned_names("does it use XGB?", text, unknown=["XGB"])] == ["anything about XGB"]


def test_a_two_digit_number_with_a_unit_is_quoted_where_an_abstract_writes_it() -> None:
    assert details.quoting("how long does it take to generate 95 seconds of audio?", ["We study audio.", "It renders 95 sec in 8 sec."]) == [1]
    assert details.quoting("which of the 12 models is best?", ["We test 12 models."]) == []  # a count, not a measurement
