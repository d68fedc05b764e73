"""Attaching metadata by abstract text, cleaning markup, and the full ICML 2024 conference as a corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.engine import Assistant
from assistant.indexing.indexer import build_index
from assistant.ingest.corpus import read_corpus, text_key
from assistant.ingest.metadata import attach_metadata
from assistant.settings import PROJECT_ROOT
from assistant.text.markup import clean_markup
from tests.conftest import GRAPHS, ROBOTS, SHARED_DATA, SHIPPED_CORPUS, SOLAR, SPIKING, make_settings

ALL = SHARED_DATA / "icml2024_all.jsonl"
MATCHED = SHARED_DATA / "icml2024_matched.jsonl"
needs_data = pytest.mark.skipif(not ALL.exists(), reason="../shared/data is not on this machine")


def _metadata(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_markup_is_cleaned_for_reading_and_ignored_for_matching() -> None:
    text = r"We present $\Phi_\textrm{Flow}$, a *fast* [toolkit](https://x.org/a_(b)) for $\mathcal{O}(n^2)$ solvers."
    assert clean_markup(text) == "We present Φ_Flow, a fast toolkit for O(n^2) solvers."
    assert text_key(text) == text_key("We present Φ Flow, a FAST toolkit for O(n^2) solvers.")
    assert clean_markup("snake_case and 2*3*4 stay") == "snake_case and 2*3*4 stay"
    # an accented letter reads as one: "Õ(log K)", not "widetildeO(log K)"
    assert clean_markup(r"a $\widetilde{\mathcal{O}}(\log K)$ switching cost and $\hat{y}$") == "a Õ(log K) switching cost and ŷ"


def test_letters_in_bold_inside_words_leave_the_words_whole() -> None:
    """Abstracts spell a name's origin in bold letters: "**L**ow-rank gradi**E**nt **S**imilarity **S**earch" is LESS."""
    text = "We perform **L**ow-rank gradi**E**nt **S**imilarity **S**earch with a *gradient datastore*."
    assert clean_markup(text) == "We perform Low-rank gradiEnt Similarity Search with a gradient datastore."
    assert clean_markup("the **A**cto**r**-*C*ritic with Rein*for*mer") == "the Actor-Critic with Reinformer"


def test_crafted_matches_markdown_latex_truncation_and_near_duplicates(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    near = SOLAR.replace("three solar farms", "four solar farms")
    truncated_robots = ROBOTS[:120].rstrip() + "…"
    (corpus / "a.txt").write_text("\n\n".join([SPIKING, GRAPHS, truncated_robots, near]), encoding="utf-8")
    meta = _metadata(tmp_path, [
        {"abstract": SPIKING.replace("SpikePrune", "*SpikePrune*").replace("CIFAR", "[CIFAR](https://cifar.org)"), "title": "SpikePrune: $\\mathcal{S}$pike pruning", "authors": ["A. One"], "url": "https://icml.cc/1", "openreview": "https://openreview.net/1", "status": "Oral"},
        {"abstract": GRAPHS.upper(), "title": "GraphHop"},
        {"abstract": ROBOTS, "title": "GraspNet-X", "pmlr": "https://proceedings.mlr.press/x"},
        {"abstract": SOLAR, "title": "SunCast"},  # differs from the corpus's copy by one word: must not match
    ])
    papers, report = attach_metadata(read_corpus(corpus).papers, meta)
    by_title = {p.title: p for p in papers}
    assert report.matched == {"exact": 2, "prefix": 1} and len(report.unmatched) == 1 and not report.ambiguous
    assert by_title["SpikePrune: Spike pruning"].authors == ["A. One"] and by_title["SpikePrune: Spike pruning"].status == "Oral"
    assert by_title["SpikePrune: Spike pruning"].links == {"openreview": "https://openreview.net/1"}
    assert by_title["GraspNet-X"].abstract == ROBOTS and not by_title["GraspNet-X"].truncated  # the full abstract replaced the truncated one
    assert "SunCast" not in by_title and by_title[None].abstract == near
    assert by_title["GraphHop"].label == "GraphHop"


def test_two_records_claiming_one_paper_are_ambiguous(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text(SPIKING[:150] + "…", encoding="utf-8")
    meta = _metadata(tmp_path, [{"abstract": SPIKING, "title": "One"}, {"abstract": SPIKING + " More results.", "title": "Two"}])
    papers, report = attach_metadata(read_corpus(corpus).papers, meta)
    assert len(report.ambiguous) == 1 and papers[0].title is None


def test_metadata_persists_in_the_index(tmp_path: Path, small_corpus: Path) -> None:
    meta = _metadata(tmp_path, [{"abstract": SPIKING, "title": "SpikePrune paper", "authors": "A. One; B. Two", "url": "https://icml.cc/sp"}])
    settings = make_settings(tmp_path)
    result = build_index(settings, small_corpus, metadata_path=meta, progress=False)
    assert result.metadata and result.metadata.matched_total == 1
    cited = Assistant(settings).ask("SpikePrune pruning of spiking networks").citations[0]
    assert (cited.title, cited.authors, cited.url) == ("SpikePrune paper", ["A. One", "B. Two"], "https://icml.cc/sp")
    assert cited.label == "SpikePrune paper"


@needs_data
def test_every_shipped_abstract_gets_its_real_title() -> None:
    papers, report = attach_metadata(read_corpus(SHIPPED_CORPUS).papers, ALL)
    print(report.summary())
    assert report.matched_total == len(papers) == 440 and not report.ambiguous
    expected = {clean_markup(json.loads(line)["title"]) for line in MATCHED.read_text().splitlines()}
    assert {p.title for p in papers} == expected
    assert not any(p.truncated for p in papers)


@needs_data
def test_full_conference_corpus_reads_and_cleans() -> None:
    corpus = read_corpus(ALL)
    assert len(corpus.papers) == 2634
    assert all(p.title and p.authors and p.url for p in corpus.papers)
    assert not any("$\\" in p.abstract or "](" in p.abstract for p in corpus.papers)


def test_the_shipped_sample_has_titles_authors_and_links_by_default(shipped: Assistant) -> None:
    papers = shipped.papers()
    assert len(papers) == 440 and all(p.title and p.authors and p.url for p in papers)
    assert sum(bool(p.links and p.links.get("openreview")) for p in papers) >= 430
    answer = shipped.ask("What is PRepBN and what problem does it solve in Transformers?", llm_provider="extractive")
    assert answer.citations[0].title and answer.citations[0].label == answer.citations[0].title


def test_a_facts_file_attaches_by_paper_id_and_holds_no_abstracts(tmp_path: Path) -> None:
    corpus = read_corpus(SHIPPED_CORPUS)
    facts = PROJECT_ROOT / "index" / "papers.jsonl"
    rows = [json.loads(line) for line in facts.read_text(encoding="utf-8").splitlines()]
    assert {r["paper_id"] for r in rows} == {p.paper_id for p in corpus.papers}
    assert all("abstract" not in r for r in rows)
    small = _metadata(tmp_path, [{"paper_id": corpus.papers[0].paper_id, "title": "A Title", "authors": ["A. Author"], "links": {"pdf": "https://x.org/p.pdf"}}])
    papers, report = attach_metadata(corpus.papers[:3], small)
    assert papers[0].title == "A Title" and papers[0].links == {"pdf": "https://x.org/p.pdf"} and papers[0].abstract == corpus.papers[0].abstract
    assert report.matched == {"id": 1} and len(report.unmatched) == 2
