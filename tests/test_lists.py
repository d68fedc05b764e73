"""A "which papers use X" question lists every paper whose abstract names X, checked against a plain word search."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.answer import comparing, listing
from assistant.engine import Assistant
from assistant.ingest.papers import Paper
from assistant.settings import Settings
from assistant.text.words import listed_names
from tests.conftest import GRAPHS, ROBOTS, SHARED_DATA, SOLAR, SPIKING, conference_subset, titled_corpus

FIELDS = "vision biology audio text video chemistry physics finance medicine music games speech".split()


def unrelated_papers() -> list[tuple[str, str]]:
    """Twelve papers on other fields (title, abstract), so that the words a test's own papers share are rare in its corpus."""
    return [(f"Learning for {field}", f"In contrast to prior work, we study learning for {field}. {text}") for field, text in zip(FIELDS, [SPIKING, GRAPHS, ROBOTS, SOLAR] * 3)]


def word_search(papers: list[Paper], name: str) -> set[str]:
    """Papers whose title or abstract holds `name`'s words in a row, case ignored, as `grep -iw` finds them."""
    wanted = re.findall(r"\w+", name.lower())
    found = set()
    for paper in papers:
        words = re.findall(r"\w+", f"{paper.title or ''} {paper.abstract}".lower())
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            found.add(paper.paper_id)
    return found


@pytest.mark.parametrize(("question", "name"), [
    ("Which papers report experiments on D4RL?", "D4RL"),
    ("Which papers use MuJoCo?", "MuJoCo"),
    ("list the work that evaluates on Meta-World manipulation tasks", "Meta-World"),
    ("Which papers evaluate on ImageNet?", "ImageNet"),
    ("Which papers use GPT-4?", "GPT-4"),
    ("Which papers build on LLaMA?", "LLaMA"),
])
def test_every_paper_naming_what_the_list_asks_for_is_listed_with_a_sentence_naming_it(shipped: Assistant, question: str, name: str) -> None:
    expected = word_search(shipped.papers(), name)
    assert len(expected) >= 2
    answer = shipped.ask(question)
    assert {paper.paper_id for paper in answer.citations} == expected
    assert answer.text.startswith(f"{len(expected)} papers in the index mention {name}:")
    for number, (paper, passage) in enumerate(zip(answer.citations, answer.passages), start=1):
        assert passage[0] in paper.abstract and name.lower() in passage[0].lower() and f"[{number}]" in answer.text


def test_a_list_answer_names_each_paper_it_quotes_by_its_title(shipped: Assistant) -> None:
    """"Which papers…" is answered by naming them: each cited paper's quotes open with its title, in citation order."""
    answer = shipped.ask("Which papers propose new ways to quantize neural networks to low bit-widths?")
    assert len(answer.citations) >= 3
    headings = re.findall(r"^\*\*(.+?)\*\*: .+? \[(\d+)\]", answer.text, re.M)
    assert [title for title, _ in headings] == [paper.title for paper in answer.citations]
    assert [int(number) for _, number in headings] == list(range(1, len(answer.citations) + 1))
    assert any("SqueezeLLM" in title for title, _ in headings)


def test_an_answer_about_one_paper_names_it_once(shipped: Assistant) -> None:
    """Quotes open with their paper's title, unless the answer's lead already names it (what its abstract lacks)."""
    answer = shipped.ask("What is PRepBN and what problem does it solve in Transformers?")
    assert len(answer.citations) == 1 and answer.text.startswith(f"**{answer.citations[0].title}**: ")
    partial = shipped.ask("How many GPUs did the PRepBN paper train on?")
    assert partial.partial and partial.text.count(partial.citations[0].title) == 1 and "**" not in partial.text


def test_a_long_list_is_counted_whole_and_quotes_the_closest(shipped: Assistant, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "LISTED", 3)
    answer = shipped.ask("Which papers use GPT-4?")
    total = len(word_search(shipped.papers(), "GPT-4"))
    assert answer.text.startswith(f"{total} papers in the index mention GPT-4 (the 3 closest to the question below):")
    assert len(answer.citations) == 3 < total


def test_a_filter_keeps_the_list_to_the_papers_it_admits(shipped: Assistant) -> None:
    everyone = {p.paper_id: p for p in shipped.papers()}
    spotlights = {i for i in word_search(shipped.papers(), "GPT-4") if everyone[i].status == "Spotlight"}
    answer = shipped.ask("Which papers use GPT-4?", filters={"status": ["Spotlight"]})
    assert len(spotlights) >= 2 and {p.paper_id for p in answer.citations} == spotlights


@pytest.mark.parametrize("question", [
    "Which papers give regret guarantees for online learning in constrained MDPs?",  # a concept, not a thing used
    "Which papers examine how robust watermarks on AI-generated content really are?",  # a compound that describes
    "Which papers are about neural operators for solving PDEs?",
])
def test_a_name_the_list_only_mentions_in_passing_does_not_make_it_a_listing(question: str) -> None:
    assert listed_names(question) == []


def test_a_list_question_quotes_every_paper_found_that_uses_all_its_topic_words(shipped: Assistant) -> None:
    answer = shipped.ask("Which papers work with tabular data?")
    found = {p.paper_id for p in answer.sources} & word_search(shipped.papers(), "tabular data")
    assert len(found) >= 3 and found <= {p.paper_id for p in answer.citations}


@pytest.mark.parametrize("framed", ["Which papers are all about tabular data? Can you list them?", "Which papers try to work with tabular data?"])
def test_the_words_a_question_is_framed_in_are_not_its_topic(shipped: Assistant, framed: str) -> None:
    """"Which papers are about X?": "about" weighed as a topic word left out papers using every word of X."""
    plain = {p.paper_id for p in shipped.ask("Which papers work with tabular data?").citations}
    found = {p.paper_id for p in shipped.ask(framed).citations}
    assert len(plain) >= 3 and found == plain


def test_a_list_of_either_of_two_things_lists_the_papers_doing_either(shipped: Assistant) -> None:
    """"time series forecasting or classification": a forecasting paper that never says "classification" is listed."""
    def uses(paper: Paper, pattern: str) -> bool:
        return re.search(pattern, f"{paper.title or ''} {paper.abstract}", re.I) is not None

    either = {p.paper_id for p in shipped.papers() if uses(p, r"time[- ]series") and (uses(p, "forecast") or uses(p, "classif"))}
    answer = shipped.ask("Which papers are on time series forecasting or classification?")
    assert len(either) >= 5 and either <= {p.paper_id for p in answer.citations}


@pytest.mark.parametrize(("question", "sides"), [
    ("How do InterpreTabNet and the NPT-based anomaly detector differ in what they do with tabular data?",
     ["InterpreTabNet", "Deep Anomaly Detection on Tabular Data"]),  # one named, one described
    ("Contrast the Wasserstein barycenter paper with Charms: what does each use optimal transport for?",
     ["Estimating Barycenters", "Tabular Insights, Visual Impacts"]),  # "Charms" is only that abstract's name for its method
    ("Compare the position paper on automatic environment shaping with the one saying benchmarking is limited in RL research",
     ["Automatic Environment Shaping", "Benchmarking is Limited"]),  # both described
    ("Compare Reflective Policy Optimization with the 'ReLU to the Rescue' actor-critic paper", ["Reflective Policy Optimization", "ReLU to the Rescue"]),
    ("What is the difference between the automatic environment shaping position and the study saying benchmarking is limited in RL?",
     ["Automatic Environment Shaping", "Benchmarking is Limited"]),  # "study and": no "paper … and … paper" to say it compares
    ("Contrast Patchscopes's way of inspecting hidden representations with the paper that studies LLM-written peer reviews",
     ["Patchscopes", "Monitoring AI-Modified Content"]),  # a possessive title word; "that studies" is no group of papers
])
def test_a_comparison_cites_every_side(shipped: Assistant, question: str, sides: list[str]) -> None:
    cited = [paper.title for paper in shipped.ask(question).citations]
    assert len(cited) == 2 and all(any(side in title for title in cited) for side in sides), cited


def test_a_comparison_listing_its_sides_after_a_colon_cites_each_of_them(shipped: Assistant) -> None:
    """"Compare these papers: A, the one doing X and Y, and C": the colon opens the sides, an "and" inside one is its
    own, each side is searched for on its own, and a side that is only a name ("IF-COMP") counts as one of three."""
    question = ("Compare these papers: the calibration study of vision-language models, the one decoupling feature extraction and "
                "classification training, and IF-COMP.")
    cited = [paper.title for paper in shipped.ask(question).citations]
    sides = ["Calibrating Vision-Language Models", "Decoupling Feature Extraction", "Boltzmann Influence Functions"]
    assert len(cited) == 3 and all(any(side in title for title in cited) for side in sides), cited


def test_a_side_named_in_capitalised_words_only_one_abstract_uses_is_that_paper(tmp_path: Path) -> None:
    """"Random Masking and Deep LoRA": "Deep LoRA" is that paper's name for its method, said once, late in its abstract;
    48 other papers comparing LoRA and masking for fine-tuning language models ("Deep networks …") match the rest of the question better."""
    masking = "Fine-tuning large language models is costly. We fine-tune with Random Masking of parameters and find it matches LoRA."
    deep = (
        "Overparameterization helps optimization but costs compute. We show that the learning dynamics of each weight matrix "
        "stay in a low-dimensional subspace, so compact factorizations train as well. On language models, our Deep LoRA needs "
        "fewer parameters."
    )
    fields = "vision biology robotics audio text video chemistry physics finance medicine music games".split()
    assistant = titled_corpus(tmp_path, [
        ("Random Masking Finds Winning Tickets for Parameter Efficient Fine-tuning", masking),
        ("Compressible Dynamics in Overparameterized Low-Rank Learning", deep),
    ] + [
        (f"LoRA Variant {n}", f"{text} Deep networks are costly to tune. How do parameter-efficient ways to fine-tune language models differ? We compare LoRA and masking for {field}.")
        for n, (text, field) in enumerate((text, field) for text in (SPIKING, GRAPHS, ROBOTS, SOLAR) for field in fields)
    ])
    answer = assistant.ask("How do Random Masking and Deep LoRA differ as parameter-efficient ways to fine-tune language models?")
    assert sorted(paper.abstract for paper in answer.citations) == sorted([masking, deep]), [p.title for p in answer.citations]


def test_a_question_about_one_comparison_inside_one_paper_cites_that_paper_alone(shipped: Assistant) -> None:
    answer = shipped.ask("comparing 2 binary classifiers on a labeling budget: one noisy label per example or majority vote of several")
    assert [paper.title.split(":")[0] for paper in answer.citations] == ["Don’t Label Twice"]


def test_a_capitalised_term_of_several_words_is_listed_in_the_singular_and_plural() -> None:
    assert listed_names("Which papers use Monte Carlo Tree Search?") == ["Monte Carlo Tree Search"]
    assert listed_names("Which papers use Gaussian Processes for regression?") == ["Gaussian Process"]


def test_papers_the_reader_chose_are_compared_exactly_whatever_came_before(shipped: Assistant) -> None:
    listing = shipped.ask("Which papers evaluate on D4RL?")
    chosen = [listing.citations[0].paper_id, listing.citations[2].paper_id]
    history = ["Which papers evaluate on D4RL?", listing.text]
    answer = shipped.ask("Compare these papers: what does each use D4RL for?", history, filters={"paper_ids": chosen})
    assert answer.text.startswith("The 2 papers you chose, side by side:") and not answer.abstained
    assert sorted(p.paper_id for p in answer.citations) == sorted(chosen)
    assert [row.paper_id for row in answer.table.rows] == [p.paper_id for p in answer.citations]
    one = shipped.ask("Compare these papers", filters={"paper_ids": chosen[:1]})  # one paper is a filter, not a comparison
    assert not one.text.startswith("The 1 papers")


def test_a_list_finds_papers_retrieval_ranked_too_low_by_the_rare_words_they_share(shipped: Assistant) -> None:
    expected = word_search(shipped.papers(), "zeroth-order")
    answer = shipped.ask("Which papers use zeroth order optimization?")  # hyphenated, the compound finds them all
    assert len(expected) == 3 and expected <= {p.paper_id for p in answer.citations}
    assert not expected <= set(answer.ranking[:10])  # one of them only the rare words' postings found
    listed = [paper.paper_id for paper in answer.citations]
    assert {paper.paper_id for paper in answer.sources[: len(listed)]} == set(listed)  # the list leads the sources


@pytest.mark.slow
def test_a_list_answers_the_same_in_every_process(shipped_settings: Settings) -> None:
    """Python orders a set of words differently in each process; the papers a list adds from the words' postings, and
    their order among the sources, must not follow it (this question gave three orders in three processes)."""
    env = {**os.environ, "INDEX_DIR": str(shipped_settings.index_dir), "CACHE_DIR": str(shipped_settings.cache_dir)}
    command = [sys.executable, "-m", "assistant.cli", "ask", "--json", "Which papers study offline reinforcement learning?"]
    answers = []
    for seed in ("1", "2", "3"):
        done = subprocess.run(command, env=env | {"PYTHONHASHSEED": seed}, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        answers.append(([p["paper_id"] for p in answer["sources"]], answer["text"]))
    assert answers[0] == answers[1] == answers[2]


def test_a_capitalised_word_ending_the_question_or_naming_its_kind_is_listed() -> None:
    assert listed_names("Which papers evaluate on Atari?") == listed_names("Which papers run experiments on Atari games?") == ["Atari"]
    assert listed_names("Which papers use Bayesian optimization?") == []


def test_a_list_asked_with_an_acronym_finds_the_paper_that_spells_it_out(tmp_path: Path) -> None:
    """"offline RL": the paper doing contrastive learning says "offline reinforcement learning" and never "RL"; two others
    spell the acronym out ("offline reinforcement learning (RL)"), so the build reads one as the other. Without that,
    "RL" is the question's rarest word and the papers using it crowd out the one that answers."""
    contrastive = (
        "Cross-domain offline reinforcement learning reuses logged transitions from a source domain whose dynamics differ. "
        "We learn a contrastive representation of transitions and keep the source data closest to the target domain."
    )
    offline = [
        f"Offline reinforcement learning (RL) learns a policy from a fixed dataset. We propose {name} for offline RL, "
        f"and offline RL agents trained with it beat prior offline RL methods on D4RL."
        for name in ("value smoothing", "trajectory stitching")
    ]
    assistant = titled_corpus(tmp_path, [
        ("Contrastive Representation for Data Filtering in Cross-Domain Policy Learning", contrastive),
        *((f"Offline Method {n}", text) for n, text in enumerate(offline)),
        *unrelated_papers(),
    ])
    answer = assistant.ask("Which papers use contrastive learning for offline RL?")
    assert contrastive in [paper.abstract for paper in answer.citations], [p.title for p in answer.citations]



def test_a_list_lists_a_paper_lacking_only_one_of_its_lighter_topic_words(shipped: Assistant) -> None:
    """"neural operators to solve PDEs": DPOT trains a neural operator on PDE data and never says "solve"; it is listed
    beside the paper using every word. Lacking "operator" (heavier) would not do."""
    operators = word_search(shipped.papers(), "neural operator") | word_search(shipped.papers(), "neural operators")
    expected = {p.paper_id for p in shipped.papers() if re.search(r"\bPDEs?\b", p.abstract)} & operators
    answer = shipped.ask("Which papers use neural operators to solve PDEs?")
    assert len(expected) == 2 and expected <= {p.paper_id for p in answer.citations}


def test_a_list_question_s_phrasing_words_do_not_qualify_papers_the_best_ones_never_use_them_in(tmp_path: Path) -> None:
    """"how transformers actually carry out in-context learning": over the conference, papers saying "carried out" and
    "context" used more of the question's words (IDF-weighted) than those on in-context learning, and the list quoted
    them, found through those words' postings, instead of the papers retrieval ranked first. Words that none of the
    best three papers use are phrasing, not topic."""
    in_context = [
        f"We study in-context learning in transformers. We show that a trained transformer {how} from the prompt's "
        f"examples, which explains in-context learning of {task}."
        for how, task in [
            ("implements gradient descent on a linear model", "linear regression"),
            ("runs a kernel smoother over the examples", "nonlinear functions"),
            ("builds induction heads that copy tokens", "Markov chains"),
        ]
    ]
    phrased = [
        f"Surveys of {field} were actually carried out by hand. In this context, our learning rule for transformers actually "
        f"carries out the labelling, and we find out which sensors matter."
        for field in ("weather radar", "crop monitoring")
    ]
    assistant = titled_corpus(tmp_path, [
        *((f"In-Context Learning Study {n}", text) for n, text in enumerate(in_context)),
        *((f"Field Study {n}", text) for n, text in enumerate(phrased)),
        *((f"Transformers for {field}", f"We train transformers on {field} data and study what their attention layers learn.") for field in FIELDS),
        *unrelated_papers(),
        *((f"Methods for {field}", f"We propose methods for {field}. {text}") for field, text in zip(FIELDS, [ROBOTS, SOLAR, SPIKING, GRAPHS] * 3)),
    ])
    answer = assistant.ask("Which papers study how transformers actually carry out in-context learning?")
    cited = [paper.abstract for paper in answer.citations]
    assert not set(phrased) & set(answer.ranking[:10])  # only the words' postings find them
    assert set(in_context) <= set(cited), [p.title for p in answer.citations]
    assert not set(phrased) & set(cited), [p.title for p in answer.citations]


def test_a_list_leads_with_a_paper_its_topic_words_qualify_not_the_closest_sentence(tmp_path: Path) -> None:
    """"Which papers study mixup?" over the conference led with a paper on how researchers read papers: its sentence
    about accepted papers came closest to the question, though it never says "mixup"."""
    influencers = (
        "As the number of accepted papers at AI and ML conferences reaches into the thousands, it has become unclear how "
        "researchers access and read research papers. We study which papers social media influencers share and how "
        "often those papers are cited."
    )
    mixup = [
        "Mixup augments training data with combinations of random pairs. We show that selective mixup helps under "
        "distribution shift because it resamples the data.",
        "Mixup is a popular augmentation for classification. We extend mixup to regression by mixing along the data manifold.",
    ]
    assistant = titled_corpus(tmp_path, [
        ("Influencers in the Academic Process", influencers),
        *((f"Mixup Study {n}", text) for n, text in enumerate(mixup)),
        *unrelated_papers(),
    ])
    answer = assistant.ask("which papers study mixup?")
    assert answer.citations[0].abstract in mixup and {p.abstract for p in answer.citations[:2]} == set(mixup), [p.title for p in answer.citations]


LOOKBEHIND = ("Sharpness-aware minimization (SAM) methods formulate minimizing loss value and sharpness as a minimax objective. "
              "Inspired by the Lookahead optimizer, which uses multiple descent steps ahead, we propose Lookbehind, which "
              "performs multiple ascent steps behind to enhance the maximization step of SAM.")
LOOKAHEAD_SAM = ("Sharpness-Aware Minimization (SAM) can improve generalization by identifying flatter minima, but may oscillate "
                 "around saddle points. We propose a lookahead mechanism to gather more information about the landscape.")
LOOKAHEAD_DECODING = ("Autoregressive decoding of large language models is bounded by memory bandwidth. We introduce Lookahead "
                      "decoding, an exact parallel decoding algorithm that accelerates LLM inference with lookahead branches.")


@pytest.mark.parametrize("question", [
    "how does Lookbehind-SAM differ from the SAM-with-lookahead paper?",
    "how is Lookbehind-SAM different from the SAM-with-lookahead paper?",
])
def test_the_side_a_comparison_sets_a_paper_against_is_the_one_its_description_fits(tmp_path: Path, question: str) -> None:
    """"X differ from the Y paper" lost its second side ("differ" ended the sides), and "SAM", three letters, was no word of
    the description, so a decoding paper writing "Lookahead" fitted it as well as the SAM one."""
    assistant = titled_corpus(tmp_path, [
        ("Lookbehind-SAM: k steps back, 1 step forward", LOOKBEHIND),
        ("Improving Sharpness-Aware Minimization by Lookahead", LOOKAHEAD_SAM),
        ("Break the Sequential Dependency of LLM Inference Using Lookahead Decoding", LOOKAHEAD_DECODING),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask(question)
    assert [p.abstract for p in answer.citations] == [LOOKBEHIND, LOOKAHEAD_SAM], answer.text



@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_side_described_by_its_title_s_words_is_that_paper(tmp_path: Path) -> None:
    """"the neuro-symbolic point process paper" was answered with "Federated Neuro-Symbolic Learning": the side's search
    ranked the paper whose title holds the description ("Neuro-Symbolic Temporal Point Processes") past its first five,
    its abstract writing "neural-symbolic"."""
    words = ("symbolic", "point process", "entropy", "temporal logic")
    assistant = conference_subset(tmp_path, lambda p: any(w in f"{p['title']} {p['abstract']}".lower() for w in words))
    answer = assistant.ask("How do REMEDI and the neuro-symbolic point process paper differ in what they estimate?")
    titles = [p.title for p in answer.citations]
    assert titles[0].startswith("REMEDI") and titles[1] == "Neuro-Symbolic Temporal Point Processes", titles


MEAN_FIELD_GNN = ("This work provides a theoretical framework for assessing the generalization error of graph neural networks in the "
                  "over-parameterized regime. Our novel approach involves deriving upper bounds within the mean-field regime for "
                  "evaluating the generalization error of these graph neural networks.")
GNN_DYNAMICS = ("For graph neural networks (GNNs), considerable advances have been made in formalizing what functions they can "
                "represent. To fill this gap, we study their training dynamics in function space. This new analytical framework "
                "enables interpretable explanations of when and why the learned GNN functions generalize.")
REUSED_BATCHES = ("We investigate the training dynamics of two-layer neural networks when learning multi-index target functions. "
                  "The proof of our results is based on the analysis of the Dynamical Mean-Field Theory (DMFT).")


def test_described_sides_are_fitted_together_not_one_after_the_other(tmp_path: Path) -> None:
    """"mean-field GNN generalization vs the GNN training dynamics paper" was answered with one paper: no side said
    "paper" on both sides; and taken side by side, the first description took the training-dynamics paper the second
    describes better."""
    assistant = titled_corpus(tmp_path, [
        ("Generalization Error of Graph Neural Networks in the Mean-field Regime", MEAN_FIELD_GNN),
        ("How Graph Neural Networks Learn: Lessons from Training Dynamics", GNN_DYNAMICS),
        ("The Benefits of Reusing Batches for Gradient Descent in Two-Layer Networks", REUSED_BATCHES),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask("mean-field GNN generalization vs the GNN training dynamics paper: what does each explain?")
    assert sorted(p.abstract for p in answer.citations) == sorted([MEAN_FIELD_GNN, GNN_DYNAMICS]), answer.text
    assert comparing._best_assignment([[0.625, 0.616, 0.1], [0.9, 0.5, 0.2]]) == (1, 0)


def test_a_title_that_compares_names_one_paper_not_two_sides(tmp_path: Path) -> None:
    """"ConvNet vs Transformer, Supervised vs CLIP - what do they compare beyond accuracy?" was answered with that paper
    and another ConvNet paper as a second side: the "vs" is its title's."""
    beyond = ("Models are compared by their accuracy on ImageNet. We compare ConvNet and Vision Transformer architectures, "
              "supervised and CLIP-trained, beyond ImageNet accuracy. They differ in types of mistakes and output calibration.")
    kernels = "We propose KernelWarehouse, a dynamic convolution for ConvNet architectures, tested on ImageNet and MS-COCO."
    assistant = titled_corpus(tmp_path, [
        ("ConvNet vs Transformer, Supervised vs CLIP: Beyond ImageNet Accuracy", beyond),
        ("KernelWarehouse: Rethinking the Design of Dynamic Convolution", kernels),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask("ConvNet vs Transformer, Supervised vs CLIP - what do they compare beyond accuracy?")
    assert [p.abstract for p in answer.citations] == [beyond], answer.text
    assert len(assistant.ask("ConvNet vs Transformer, Supervised vs CLIP and KernelWarehouse: how do they differ?").citations) == 2


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_side_is_fitted_by_the_title_it_retells(tmp_path: Path) -> None:
    """"the paper that studies zero-shot interpolation in DDPMs" was answered with an audio-editing paper whose
    sentences come closer ("zero-shot … DDPM inversion"); the description retells the other's title."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"DDPM|Medusa|Zero-Shot", p["title"])))
    answer = assistant.ask("Contrast Medusa's multiple decoding heads with the paper that studies zero-shot interpolation in DDPMs: "
                           "what does each generate?")
    assert sorted(p.title.split(":")[0] for p in answer.citations) == [
        "Going beyond Compositions, DDPMs Can Produce Zero-Shot Interpolations", "Medusa"], [p.title for p in answer.citations]



@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_two_papers_described_and_joined_by_and_are_compared_without_a_comparing_word(tmp_path: Path) -> None:
    """"how do the MoE expert pruning paper and the soft prompt compression paper use sparsity?" says no "compare" or
    "differ": it was answered as one topic, from the papers nearest all its words at once."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"prun|compress|soft prompt|sparsi", p["title"], re.I)))
    answer = assistant.ask("how do the MoE expert pruning paper and the soft prompt compression paper use sparsity?")
    assert sorted(p.title.split(",")[0] for p in answer.citations) == [
        "A Provably Effective Method for Pruning Experts in Fine-tuned Sparse Mixture-of-Experts", "Soft Prompt Recovers Compressed LLMs"
    ], [p.title for p in answer.citations]


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_comparison_each_side_of_which_is_a_paper_is_answered_though_no_paper_holds_both(tmp_path: Path) -> None:
    """"how do the MoE expert pruning paper and the soft prompt compression paper make LLMs cheaper?" was declined over
    the conference: the reader found no one paper answering all its words ("make LLMs cheaper" was read as part of the
    second side, and searched with it the first side found an LLM pruning paper). A reader that declines everything
    here stands for it; a side no paper's words fit ("the sign language translation paper") still declines."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"LLMs|Soft Prompt|Experts|Mixture", p["title"])),
                                  reranker="mpnet", reader_threshold=0.99, semantic_check_below=9.0)
    answer = assistant.ask("how do the MoE expert pruning paper and the soft prompt compression paper make LLMs cheaper?")
    assert sorted(p.title.split(",")[0] for p in answer.citations) == [
        "A Provably Effective Method for Pruning Experts in Fine-tuned Sparse Mixture-of-Experts", "Soft Prompt Recovers Compressed LLMs"
    ], answer.text
    assert answer.confidence == "medium"
    assert assistant.ask("how do the soft prompt compression paper and the sign language translation paper make LLMs cheaper?").abstained
    assert comparing._side_parts("What is the difference between the X-ray paper and the paper learning high-order relationships?") == [
        "the X-ray paper", "the paper learning high-order relationships"]


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_described_side_is_searched_for_alone_too(tmp_path: Path) -> None:
    """Searched with what the question asks of both sides ("make LLMs cheaper"), "the MoE expert pruning paper" found
    LLM pruning papers and was fitted with one of them (OWL), not the paper pruning a vision MoE's experts."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"LLM|Language Model|prun|compress|prompt|expert|sparsi", p["title"], re.I)))
    answer = assistant.ask("how do the MoE expert pruning paper and the soft prompt compression paper make LLMs cheaper?")
    assert sorted(p.title.split(",")[0] for p in answer.citations) == [
        "A Provably Effective Method for Pruning Experts in Fine-tuned Sparse Mixture-of-Experts", "Soft Prompt Recovers Compressed LLMs"
    ], answer.text


def test_how_do_two_named_papers_do_something_cites_both(tmp_path: Path) -> None:
    """"how do OSSCAR and the SFC fast convolution paper make models cheaper to run?" cited SFC alone: without a
    comparing word or "paper" on both sides, two subjects of "do" were read as one paper's topic."""
    osscar = ("We propose OSSCAR, a combinatorial optimization framework for one-shot structured pruning of vision and "
              "language models, with a 2x inference time speedup over ZipLM on OPT-2.7B.")
    sfc = ("We propose SFC, a fast convolution algorithm extending the Discrete Fourier Transform with symbolic computing, "
           "for quantized convolution under low-precision arithmetic; it reduces multiplications by 3.68x.")
    assistant = titled_corpus(tmp_path, [
        ("OSSCAR: One-Shot Structured Pruning in Vision and Language Models", osscar),
        ("SFC: Achieve Accurate Fast Convolution under Low-precision Arithmetic", sfc),
        ("Spiking", SPIKING), ("Graphs", GRAPHS), ("Robots", ROBOTS), ("Solar", SOLAR),
    ])
    answer = assistant.ask("how do OSSCAR and the SFC fast convolution paper make models cheaper to run?")
    assert sorted(p.abstract for p in answer.citations) == sorted([osscar, sfc]), answer.text
    assert [p.abstract for p in assistant.ask("how do they prune and quantize OSSCAR's models?").citations] == [osscar]
