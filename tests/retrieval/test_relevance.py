"""The answerability gate with the real bundled E5 model, and the grounding bars on the development set."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from assistant.engine import Assistant
from assistant.ingest.papers import Paper
from assistant.retrieval.hybrid import Retrieval
from assistant.retrieval.relevance import E5Scorer, judge
from assistant.settings import Settings
from tests.conftest import GRAPHS, ROBOTS, SHARED_DATA, SOLAR, SPIKING, conference_subset, titled_corpus

QUESTION = "Which paper presents a membership inference attack against diffusion models?"
NEAR_MISS = Paper(
    paper_id="near",
    label="Denoising",
    abstract="Diffusion models are strong priors for image denoising. We propose a posterior sampling scheme that removes "
    "structured noise from astronomical images and evaluate it on simulated and real observations.",
)
ON_TOPIC = Paper(
    paper_id="on",
    label="MIA",
    abstract="We present a membership inference attack on diffusion models: from the denoising loss at chosen timesteps, "
    "the attacker tells whether an image was in the training set, and we evaluate defenses against it.",
)


E5 = E5Scorer()


def _retrieval(paper: Paper, coverage: float, cosine: float) -> Retrieval:
    return Retrieval(query=QUESTION, papers=[paper.with_match(paper.abstract, cosine)], coverage=coverage)


def test_lexically_uncertain_questions_go_to_e5(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path)
    uncertain = 0.3, 0.5  # lexical 0.8: between ABSTAIN_THRESHOLD and SEMANTIC_CHECK_BELOW
    near = judge(_retrieval(NEAR_MISS, *uncertain), settings, E5)
    on = judge(_retrieval(ON_TOPIC, *uncertain), settings, E5)
    assert near.semantic is not None and on.semantic is not None and on.semantic > near.semantic
    assert not near.answerable and on.answerable
    assert near.scores() == {"lexical": 0.8, "semantic": round(near.semantic, 4)}
    assert (near.confidence, on.confidence) == ("low", "medium")


def test_a_follow_up_is_judged_with_its_earlier_turns_too(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path)
    follow_up = Retrieval(query="Which defenses does it evaluate?", papers=[ON_TOPIC.with_match(ON_TOPIC.abstract, 0.5)], coverage=0.3)
    alone = judge(follow_up, settings, E5)
    with_turns = judge(follow_up, settings, E5, also=[f"{QUESTION} Which defenses does it evaluate?"])
    assert alone.semantic is not None and with_turns.semantic is not None and with_turns.semantic > alone.semantic
    assert with_turns.answerable


def test_only_lexical_certainty_overrules_a_model_that_reads_and_declines(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path)
    e5_confirmed = judge(_retrieval(ON_TOPIC, 0.3, 0.5), settings, E5)
    assert e5_confirmed.answerable and "E5 0." in e5_confirmed.describe()
    assert not e5_confirmed.confident(settings.confident_relevance)  # the model has read the abstract; its refusal stands
    assert e5_confirmed.confident(settings.confident_relevance, checked=True)  # unless its refusals are checked
    unconfirmed = judge(_retrieval(ON_TOPIC, 0.3, 0.5), settings.with_overrides(relevance_check="none"), E5)
    assert not unconfirmed.confident(settings.confident_relevance) and unconfirmed.describe() == "relevance 0.80"
    assert judge(_retrieval(NEAR_MISS, 0.7, 0.6), settings, E5).confident(settings.confident_relevance)


def test_clear_cases_skip_e5_and_the_check_can_be_turned_off(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path)
    off_topic = judge(_retrieval(ON_TOPIC, 0.1, 0.3), settings, E5)
    assert not off_topic.answerable and off_topic.semantic is None
    confident = judge(_retrieval(NEAR_MISS, 0.7, 0.6), settings, E5)
    assert confident.answerable and confident.semantic is None and confident.confidence == "high"
    lexical_only = judge(_retrieval(NEAR_MISS, 0.3, 0.5), settings.with_overrides(relevance_check="none"), E5)
    assert lexical_only.answerable and lexical_only.semantic is None


def test_a_broken_e5_install_falls_back_to_the_lexical_verdict(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> None:
        raise OSError("libgomp.so.1: cannot open shared object file")

    with caplog.at_level(logging.WARNING, logger="assistant.retrieval.relevance"):
        verdict = judge(_retrieval(NEAR_MISS, 0.3, 0.5), Settings(index_dir=tmp_path), E5Scorer(load=broken))
    assert verdict.answerable and verdict.semantic is None
    assert "semantic relevance check unavailable" in caplog.text and "libgomp" in caplog.text


def test_a_question_naming_the_best_paper_is_about_it_however_little_else_matches(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path)
    weak = _retrieval(ON_TOPIC, 0.1, 0.2)
    assert not judge(weak, settings, E5).answerable
    weak.named = {weak.papers[0].paper_id}  # "Under which licence is the <its method name> code released?"
    verdict = judge(weak, settings, E5)
    assert verdict.answerable and verdict.confidence == "high" and verdict.semantic is None


def test_named_papers_are_those_only_one_paper_names(shipped: Assistant) -> None:
    found = shipped.search("Under which open-source licence is the TSLANet code released?")
    assert found.papers[0].title.startswith("TSLANet") and found.named == {found.papers[0].paper_id}
    assert shipped.search("Which GPU and which LLM were used?").named == set()  # names many papers use


def _unique_first_authors(count: int) -> list[dict]:
    """Shipped papers whose first author is first author of no other, spread over the sample."""
    import json
    from collections import Counter

    from assistant.settings import SAMPLE_FACTS
    from assistant.text.naming import surname

    rows = [json.loads(line) for line in SAMPLE_FACTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    first = Counter(surname(r["authors"][0]).lower() for r in rows if r.get("authors"))
    chosen = [r for r in rows if r.get("authors") and first[surname(r["authors"][0]).lower()] == 1 and len(r["title"].split()) >= 6]
    return chosen[:: max(1, len(chosen) // count)][:count]


@pytest.mark.parametrize("paper", _unique_first_authors(6), ids=lambda r: r["paper_id"])
def test_a_paper_named_by_its_title_or_first_author_is_found_first_and_answered(shipped: Assistant, paper: dict) -> None:
    """Titles and authors are searched, and a question naming a paper by either is about it (never declined): by its title,
    its first author ("Surname et al.", "the Surname paper") or its first authors listed ("Petrov, Torr and Bibi")."""
    from assistant.text.naming import surname

    words = paper["title"].split(":")[-1].split()
    quoted = " ".join(words[:5]).strip(" ,.?!")
    *first, last = [surname(author) for author in paper["authors"][:3]] if len(paper["authors"]) > 1 else ["", ""]
    questions = [f'What is the main finding of "{quoted}"?', f"What do {surname(paper['authors'][0])} et al. show in their paper?",
                 f"{surname(paper['authors'][0])} paper - what is the main finding?"]
    for question in questions + ([f"What do {', '.join(first)} and {last} show in their paper?"] if last else []):
        answer = shipped.ask(question)
        assert answer.sources[0].paper_id == paper["paper_id"], question
        assert not answer.abstained and answer.citations[0].paper_id == paper["paper_id"], question


def _senior_authors(count: int) -> list[dict]:
    """Shipped papers whose last author (of three or more) is an author of no other and first author of none."""
    import json
    from collections import Counter

    from assistant.settings import SAMPLE_FACTS
    from assistant.text.naming import surname

    rows = [json.loads(line) for line in SAMPLE_FACTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    anywhere = Counter(surname(a).lower() for r in rows for a in r.get("authors") or [])
    chosen = [r for r in rows if len(r.get("authors") or []) >= 3 and anywhere[surname(r["authors"][-1]).lower()] == 1]
    return chosen[:: max(1, len(chosen) // count)][:count]


@pytest.mark.parametrize("paper", _senior_authors(4), ids=lambda r: r["paper_id"])
def test_a_paper_cited_by_a_co_author_et_al_is_found_first_when_no_first_author_matches(shipped: Assistant, paper: dict) -> None:
    """People write "Bengio et al." for a senior author's paper: with no paper of that first author, it is the co-author's."""
    from assistant.text.naming import surname

    answer = shipped.ask(f"What do {surname(paper['authors'][-1])} et al. show in their paper?")
    assert answer.sources[0].paper_id == paper["paper_id"] and not answer.abstained
    assert answer.citations[0].paper_id == paper["paper_id"]


@pytest.mark.parametrize("question", ["Which orals are about diffusion?", "orals on diffusion models", "diffusion, orals only"])
def test_a_filter_narrows_the_search_and_never_causes_the_decline(shipped: Assistant, question: str) -> None:
    """Words restating the filter ("orals") match no abstract; the filter chose the papers, so they are not the topic."""
    answer = shipped.ask(question, filters={"status": ["Oral"]})
    assert not answer.abstained, answer.text
    assert answer.citations and all(p.status == "Oral" and "diffusion" in p.abstract.lower() for p in answer.citations)


def test_a_quoted_title_finds_its_paper_when_the_abstract_shares_none_of_its_words(tmp_path: Path) -> None:
    """Retrieval reads abstracts; "Don't be so Negative!" is only in the title, and other papers match the rest."""
    negative = "Score-based generative models can use an oracle that labels samples outside the data's support as side information."
    assistant = titled_corpus(tmp_path, [("Don't be so Negative! Oracle-assisted Guidance", negative)] + [
        (f"Negative Results {n}: Applications of Generative Models", f"{text} We propose it for {field} and test it on applications.")
        for n, (text, field) in enumerate(
            (text, field) for text in (SPIKING, GRAPHS, ROBOTS, SOLAR) for field in ("vision", "biology", "robotics")
        )
    ])
    answer = assistant.ask('What does the paper "Don\'t be so Negative!" propose, and which applications do they test it on?')
    assert answer.sources[0].abstract == negative and answer.citations[0].abstract == negative and not answer.abstained
    table = assistant.index.current().papers
    assert table.titled('What do papers on "generative models" show?') == []  # a piece in twelve titles names none of them
    assert table.with_title_word("GUIDANCE") == [answer.sources[0].paper_id] and len(table.with_title_word("Negative")) == 13


@pytest.mark.parametrize("name", ["D-Flow", "Seesaw"])
def test_the_short_name_a_title_leads_with_finds_its_paper_when_the_abstract_never_uses_it(tmp_path: Path, name: str) -> None:
    """ "D-Flow: …" is the paper's name in its title only; 42 other papers' abstracts match the rest of the question,
    and "Beyond D-Flow: …" uses the name without leading with it. A plain word is a name too where the question
    capitalises it past its start ("How does Seesaw …")."""
    fields = "vision biology robotics audio text video chemistry physics finance medicine music games maps weather".split()
    dflow = "We steer sampling by differentiating through a pretrained model's ODE and optimising its source noise."
    assistant = titled_corpus(tmp_path, [
        (f"{name}: Differentiating through Flows for Controlled Generation", dflow),
        (f"Beyond {name}: Guidance for Flow Models", f"{SOLAR} We control generation of flow models for forecasts."),
    ] + [
        (f"Controlled Generation {n}", f"{text} We control generation with flow models for {field}.")
        for n, (text, field) in enumerate((text, field) for text in (SPIKING, GRAPHS, ROBOTS) for field in fields)
    ])
    answer = assistant.ask(f"How does {name} control generation with flow models?")
    assert answer.sources[0].abstract == dflow and answer.citations[0].abstract == dflow and not answer.abstained


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="../shared/data is not on this machine")
def test_the_paper_holding_most_of_the_questions_words_leads_one_lacking_its_rare_ones(tmp_path: Path) -> None:
    """The conference's KV-cache papers and 60 others: the dense ranking puts LESS (eviction) first for a question on
    merging caches, which only CaM's abstract speaks of; both are found, and the question uses their words."""
    rows = [json.loads(line) for line in (SHARED_DATA / "icml2024_all.jsonl").open(encoding="utf-8")]
    kv = [r for r in rows if r["title"].startswith(("CaM: Cache Merging", "Get More with LESS", "KIVI:", "KV-Runahead"))]
    papers = [(r["title"], r["abstract"]) for r in kv + rows[:60]]
    answer = titled_corpus(tmp_path, papers).ask("any work on merging kv caches instead of evicting them")
    assert answer.sources[0].title.startswith("CaM") and answer.citations[0].title.startswith("CaM") and answer.confidence == "high"


def test_e_g_and_etc_are_not_topic_words(shipped: Assistant) -> None:
    """Few abstracts write "e.g." or "etc.", so as words they weighed as the question's rarest topic words."""
    terms = shipped.index.current().retriever.terms
    assert terms("federated learning variants (e.g. continual learning, prompt learning, etc.), i.e. personalised") == terms(
        "federated learning variants (continual learning, prompt learning), personalised"
    )
    marked = shipped.ask("Which papers study federated learning variants (e.g. federated continual learning, federated prompt learning, etc.)?")
    assert marked.confidence == "high" and len(marked.citations) >= 3


def test_a_name_spelling_a_common_word_names_its_paper_only_as_its_title_writes_it(tmp_path: Path) -> None:
    """"SCoRe: …" leads its title with a word many abstracts use: "which BLEU score does the code summarizer reach" is
    about the summarizer, not SCoRe, though both are found; "What does SCoRe learn?" names it."""
    fields = "vision biology robotics audio text video chemistry physics finance medicine".split()
    summarizer = "We retrieve instructive code snippets for code summarization and reach a BLEU score of 24.1 on Java."
    score = "We learn representations with submodular combinatorial objectives, which score well on imbalanced classes."
    assistant = titled_corpus(tmp_path, [
        ("PinNet: Retrieval for Code Summarization", summarizer),
        ("SCoRe: Submodular Combinatorial Representation Learning", score),
    ] + [
        (f"Benchmarks {n}", f"{text} We report the score of each model for {field}.")
        for n, (text, field) in enumerate((text, field) for text in (SPIKING, GRAPHS, ROBOTS) for field in fields)
    ])
    answer = assistant.ask("Which BLEU score does the code summarizer reach?")
    assert answer.sources[0].abstract == summarizer and answer.citations[0].abstract == summarizer
    assert assistant.ask("What does SCoRe learn?").sources[0].abstract == score


def test_a_capitalised_term_a_title_coins_finds_its_paper_and_a_fields_name_does_not(tmp_path: Path) -> None:
    """"How do Template Programs …" writes the term as the title does; 42 other papers' abstracts match the rest of the
    question. "Direct Preference Optimization" is whole in one title too, but five abstracts use it: a field's name, which
    makes that title's paper no more the subject than any other."""
    fields = "vision biology robotics audio text video chemistry physics finance medicine music games maps weather".split()
    template = "We introduce Template Programs, which capture visual concepts, and find they beat task-specific alternatives."
    overfit = "Preference fine-tuning with direct preference optimization overfits noisy preference labels; we make it robust."
    assistant = titled_corpus(tmp_path, [
        ("Learning to Infer Generative Template Programs for Visual Concepts", template),
        ("Token-level Direct Preference Optimization", f"{SOLAR} We apply direct preference optimization per token."),
        ("Robust Preference Fine-tuning", overfit),
    ] + [
        (f"Preference Learning {n}", f"{SPIKING} We align models with direct preference optimization for {field}.") for n, field in enumerate(fields[:3])
    ] + [
        (f"Programs for Tasks {n}", f"{text} We compare learned programs with task-specific alternatives for {field}.")
        for n, (text, field) in enumerate((text, field) for text in (GRAPHS, ROBOTS, SOLAR) for field in fields)
    ])
    answer = assistant.ask("How do Template Programs compare with task-specific alternatives?")
    assert answer.sources[0].abstract == template and answer.citations[0].abstract == template and not answer.abstained
    assert assistant.ask("Does Direct Preference Optimization overfit noisy labels?").sources[0].abstract == overfit


def test_a_coined_term_names_its_paper_though_many_abstracts_use_its_words_apart(tmp_path: Path) -> None:
    """"Differentiable Model Scaling" is written by one abstract; six others use "differentiable", "model" and "scaling"
    apart, and match the rest of the question better: the term still names its paper."""
    dms = "This study introduces Differentiable Model Scaling (DMS), which searches width and depth; it raises accuracy by 1.4%."
    others = [
        (f"Scaling Study {n}", f"{text} Our differentiable model improves accuracy and scaling of search compute for {field}.")
        for n, (text, field) in enumerate([(GRAPHS, "graphs"), (ROBOTS, "robots"), (SOLAR, "cells"), (SPIKING, "spikes"),
                                           (GRAPHS, "text"), (ROBOTS, "audio")])
    ]
    assistant = titled_corpus(tmp_path, [("Differentiable Model Scaling using Differentiable Topk", dms), *others])
    found = assistant.search("How much search compute does Differentiable Model Scaling need, and how much does accuracy improve?")
    assert found.papers[0].abstract == dms and {assistant.paper(p).abstract for p in found.named} == {dms}


def test_a_term_one_paper_mentions_in_passing_does_not_name_it_but_the_name_it_gives_its_work_does(tmp_path: Path) -> None:
    """Over a conference one paper may be the only one to write "LiDAR", in a list of the inputs it was tested on: a
    question about LiDAR detection is not about that paper, and it must not be answered from it unread (first and
    at high confidence). Its own name ("GeminiFusion") names it."""
    gemini = ("Cross-modal transformers integrate modalities. We propose GeminiFusion, a pixel-wise fusion approach for vision "
              "transformers. Evaluations across 3D object detection and segmentation tasks, including RGB, depth, LiDAR, event "
              "data, etc. demonstrate the superior performance of our method.")
    assistant = titled_corpus(tmp_path, [
        ("GeminiFusion: Efficient Pixel-wise Multimodal Fusion for Vision Transformer", gemini),
        ("Point Cloud Registration", f"{GRAPHS} We register point clouds of cars and streets with maximal cliques."),
        ("Normalizing Point Clouds", f"{ROBOTS} We normalize 3D point clouds so that pedestrians and cars are detected alike."),
        ("Solar Cells", SOLAR), ("Spiking Networks", SPIKING),
    ])
    lidar = "How do I detect cars and pedestrians in 3D from LiDAR point clouds?"
    assert assistant.search(lidar).named == set()
    assert gemini not in [paper.abstract for paper in assistant.ask(lidar).citations[:1]]
    assert {assistant.paper(p).abstract for p in assistant.search("What does GeminiFusion fuse?").named} == {gemini}


@pytest.mark.parametrize(
    ("name", "known"),
    [("CIFAR", True), ("CIFAR-based", True), ("Spike-Prune", True), ("SPIKEPRUNE", True), ("GraphHop", True), ("Kinetics-400", False), ("IC50", False)],
)
def test_a_name_is_known_when_some_paper_uses_it_however_it_is_spelled(small_corpus: Path, tmp_path: Path, name: str, known: bool) -> None:
    from assistant.indexing.indexer import build_index
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm_provider="extractive")
    build_index(settings, small_corpus, progress=False)
    assert Assistant(settings).index.current().retriever.lexical.knows(name) is known


def test_a_name_no_paper_uses_declines_and_says_which(small_corpus: Path, tmp_path: Path) -> None:
    """Nearby papers are not an answer about a dataset, model or quantity the corpus never names; two letters ("IP
    cores") are an abbreviation more than a name, "seq2seq" a description, a capitalised word past the question's start
    ("Granger-causal") is a name too, and a paper the question names is still answered (partially)."""
    from assistant.indexing.indexer import build_index
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm_provider="extractive")
    build_index(settings, small_corpus, progress=False)
    assistant = Assistant(settings)
    declined = assistant.ask("Which pruning methods for spiking neural networks were tested on Kinetics-400?")
    assert declined.abstained and "Kinetics-400" in declined.text
    assert not assistant.ask("Which pruning methods for spiking neural networks were tested on CIFAR?").abstained
    assert not assistant.ask("How are IP blocks of spiking neural networks pruned during training?").abstained
    assert not assistant.ask("How are spiking neural networks pruned, and does it work for seq2seq tasks?").abstained  # X-to-Y shorthand
    granger = assistant.ask("Can spiking neural networks find Granger-causal links between the neurons they prune?")
    assert granger.abstained and "Granger" in granger.text  # capitalised past the start: a name, though plain in shape
    assert not assistant.ask("Can spiking neural networks be pruned like Graph neural networks?").abstained  # a word a paper uses
    named = assistant.ask("Does SpikePrune work on Kinetics-400?")
    assert not named.abstained and named.partial and named.missing == ["anything about Kinetics-400"]


@pytest.mark.parametrize("question", [
    "Is there a model that translates sign language videos into text?",
    "Is there a model that translates sign language videos into text",
])
def test_a_question_about_one_paper_finds_its_topic_words_in_one_paper(shipped: Assistant, question: str) -> None:
    """Its words spread over several papers ("sign" in one, "videos" and "text" in another) are no paper on it: over
    the best three such a question was answered at high confidence with an LLM agent writing Blender code; now the
    reader reads it (and finds no paper on it)."""
    retriever = shipped.index.current().retriever
    found, terms = shipped.search(question), retriever.terms(question)
    assert found.coverage == retriever.lexical.coverage(terms, [found.papers[0].paper_id]) < retriever.lexical.coverage(terms, [p.paper_id for p in found.papers[:3]])
    assert shipped.ask(question).abstained
    listing = "Which papers translate sign language videos into text?"  # a list's papers share its words between them
    several = shipped.search(listing)
    assert several.coverage == retriever.lexical.coverage(retriever.terms(listing), [p.paper_id for p in several.papers[:3]])


def test_a_word_only_the_title_uses_counts_as_covered(tmp_path: Path, shipped: Assistant) -> None:
    """"what is the algorithm for impatient arms called?" was declined: "impatient" is in the title "On Multi-Armed
    Bandit with Impatient Arms" and nowhere in its abstract, so the paper seemed to lack the question's rarest word."""
    bandit = ("We investigate a Multi-Armed Bandit setting where an arm exits the game if the algorithm continuously "
              "neglects it. We propose the FC-SE algorithm with expected regret upper bounds.")
    assistant = titled_corpus(tmp_path, [("On Multi-Armed Bandit with Impatient Arms", bandit), ("Spiking", SPIKING), ("Graphs", GRAPHS),
                                         ("Robots", ROBOTS), ("Solar", SOLAR)])
    found = assistant.search("impatient arms bandit")
    assert found.papers[0].abstract == bandit and found.coverage == 1.0
    answer = shipped.ask("what is the algorithm for impatient arms called?")
    assert not answer.abstained and "FC-SE" in answer.text, answer.text
    # "called" is the question's form, not a topic word the paper lacks (a paper writing "called" matched it better)
    assert shipped.search("what is the algorithm for impatient arms called?").coverage == 1.0


def test_a_paper_named_by_its_whole_title_is_found_though_its_abstract_lacks_the_title_s_words(tmp_path: Path) -> None:
    """"which four actions can a node take in cooperative GNNs?" was declined: the abstract never says "cooperative",
    so no search found "Cooperative Graph Neural Networks" among graph papers closer in words."""
    cooperative = ("We propose a framework for training graph neural networks where every node is viewed as a player that "
                   "can choose to either listen, broadcast, listen and broadcast, or isolate.")
    others = [(f"Graph Neural Networks for {topic}", f"Graph neural networks where each node aggregates messages for {topic}.")
              for topic in ("molecules", "traffic", "citations", "proteins")]
    assistant = titled_corpus(tmp_path, [("Cooperative Graph Neural Networks", cooperative), *others, ("Spiking", SPIKING), ("Robots", ROBOTS)])
    found = assistant.search("which four actions can a node take in cooperative GNNs?")
    assert found.papers[0].abstract == cooperative and found.papers[0].paper_id in found.named


def test_a_noun_no_paper_uses_weighs_against_the_reader_and_the_decline_names_it(shipped: Assistant) -> None:
    """"Has reinforcement learning been used to dispatch elevator cars in tall office buildings?" was answered as a likely
    match with an emergency-responder RL paper: the reader's cosine was in the band where paraphrases and near-misses
    overlap, and nothing counted that no paper of the index ever names an elevator or an office."""
    question = "Has reinforcement learning been used to dispatch elevator cars in tall office buildings?"
    found = shipped.search(question, reranker="mpnet")
    assert set(found.unused_nouns) == {"elevator", "office"}  # not "tall", an adjective
    answer = shipped.ask(question)
    assert answer.abstained and "mentions “elevator”" in answer.text, answer.text
    assert judge(found, shipped.settings.with_overrides(unused_noun_weight=0.0), shipped.scorer).answerable  # the reader alone admitted it


@pytest.mark.parametrize("question", [
    # words no paper uses, but verbs and adjectives ("swallowed", "brief") or nouns of little weight in a long question
    "A pill may be swallowed daily for years, but our randomized trial tracked participants for only a few weeks. How can the "
    "consequences of years of ongoing use be inferred from such a brief trial, when the usual shortcut of using early "
    "readings as proxies for later ones breaks down?",
    "Expert-curated spreadsheet columns, numbers and categories, exist at training time but not when the model is later "
    "deployed on pictures alone. How can that table knowledge be passed into a picture classifier, for example by pairing "
    "the image network's feature maps with the columns through an earth-mover-style matching?",
])
def test_a_paraphrase_whose_unused_words_are_its_phrasing_is_still_answered(shipped: Assistant, question: str) -> None:
    answer = shipped.ask(question)
    assert not answer.abstained, answer.text


@pytest.mark.parametrize(("question", "missing"), [
    ("what compute budget did Powder need?", "what compute budget"),
    ("what hardware does Powder run on?", "what hardware"),
])
def test_a_method_named_by_a_capitalised_plain_word_names_its_paper(shipped: Assistant, question: str, missing: str) -> None:
    """"Powder" is the name one paper gives its algorithm ("… FCL algorithm, called Powder"), but no capital inside it
    marks it as a name, so the question was declined: none of its other words is the paper's."""
    answer = shipped.ask(question)
    assert not answer.abstained and answer.citations[0].title.startswith("Federated Continual Learning via Prompt-based"), answer.text
    assert answer.partial and missing in answer.missing, answer.missing


def test_an_author_s_surname_names_no_paper_as_a_plain_word_does(shipped: Assistant) -> None:
    """A surname is the author search's to read: a paper whose abstract happens to use it as a word is not named by it
    ("Hossain, Wang and Lin on persuasion …" cited a second paper, whose abstract wrote "lin")."""
    lexical = shipped.index.current().retriever.lexical
    surnames = [key[1:].title() for key in lexical.names if key.startswith("@") and key[1:].isalpha() and len(key) > 4]
    used_once = [name for name in surnames if len(lexical.papers_using([name.lower()])) == 1]
    assert used_once
    assert lexical.named_papers(f"what did {used_once[0]} find?", lambda name, paper: True) == set()


def test_a_paper_described_before_paper_is_found_by_its_title_written_as_described(shipped: Assistant) -> None:
    """"which environments does the target network convergence paper test on?" was declined: the asked words
    ("environments", "test") outnumbered the description's in every title, and two titles held "target" and "network"
    ("… Networked Interference via Targeted Learning"); the one writing "Target Networks" is the one described."""
    answer = shipped.ask("which environments does the target network convergence paper test on?")
    assert not answer.abstained and answer.citations[0].title.startswith("Target Networks and Over-parameterization"), answer.text
    assert "Four-room" in answer.text
    # a description the title half holds but the abstract does not (no "implicit" in a meta-learning BO paper) names nothing
    assert shipped.ask("in the implicit meta-learning paper, what gives more IML?").abstained


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_description_only_one_abstract_writes_names_its_paper(tmp_path: Path) -> None:
    """"does the e-invariance paper need a causal graph?" was answered with a causal-inference paper: "causal graph" drew
    the search, and "e-invariance" (in one abstract: "effect-invariance (e-invariance for short)") counted for little."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"Causal|Invarian", p["title"])))
    answer = assistant.ask("does the e-invariance paper need a causal graph?")
    assert answer.citations[0].title == "Effect-Invariant Mechanisms for Policy Generalization", answer.text
    assert "does not assume an underlying causal graph" in answer.text
