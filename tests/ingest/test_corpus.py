"""Reading corpora: de-duplication, truncated copies, stable ids, labels, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.errors import CorpusError
from assistant.ingest.chunking import chunk_papers, count_tokens
from assistant.ingest.corpus import paper_id, read_corpus
from assistant.text.labels import make_label
from assistant.text.sentences import from_starts, sentence_starts, split_sentences
from tests.conftest import GRAPHS, ROBOTS, SHIPPED_CORPUS, SOLAR, SPIKING


def test_small_corpus_drops_header_duplicates_and_truncated_copy(small_corpus: Path) -> None:
    corpus = read_corpus(small_corpus)
    assert [p.abstract for p in corpus.papers] == [SPIKING, GRAPHS, ROBOTS, SOLAR]
    assert corpus.headers == ["My Paper Collection"]
    assert corpus.duplicates == 1
    assert corpus.truncated_copies == 1
    assert corpus.empty_files == [small_corpus / "empty.txt"]
    assert corpus.papers[0].source == "a.txt:3"  # from the corpus folder: no server path reaches a client
    assert read_corpus(small_corpus / "b.txt").papers[0].source == "b.txt:1"


def test_truncated_abstract_without_full_copy_is_kept_and_marked(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(f"{ROBOTS}\n\n{SOLAR[:90]}…\n", encoding="utf-8")
    papers = read_corpus(tmp_path).papers
    assert [p.truncated for p in papers] == [False, True]


def test_ids_are_stable_across_processes_and_whitespace() -> None:
    here = paper_id(SPIKING)
    assert here == paper_id("  " + SPIKING.replace(" ", "\n", 3) + " ")
    assert here != paper_id(GRAPHS)
    code = "from assistant.ingest.corpus import paper_id; import sys; print(paper_id(sys.argv[1]))"
    other = subprocess.run([sys.executable, "-c", code, SPIKING], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert other.stdout.strip() == here


def test_shipped_corpus_counts() -> None:
    corpus = read_corpus(SHIPPED_CORPUS)
    assert len(corpus.papers) == 440  # 441 distinct abstracts, one a truncated copy of another
    assert corpus.headers == ["ICML 2024 Papers"]
    assert len({p.paper_id for p in corpus.papers}) == 440
    assert sum(p.truncated for p in corpus.papers) > 40
    assert read_corpus(SHIPPED_CORPUS).content_hash == corpus.content_hash


def test_labels_name_the_method_or_open_the_abstract() -> None:
    assert make_label(SPIKING).startswith("SpikePrune:")
    assert make_label(GRAPHS).startswith("GraphHop:")
    assert make_label("Deep networks are hard to train because gradients vanish, so we study them.") == "Deep networks are hard to train because gradients vanish"
    assert make_label(SPIKING, title="  A  Title ") == "A Title"
    for paper in read_corpus(SHIPPED_CORPUS).papers:
        assert 0 < len(paper.label.split()) <= 13, paper.label


def test_non_utf8_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(f"{SPIKING}\n\n".encode() + "Caf\xe9 abstracts are nice.".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"latin1\.txt:3: not valid UTF-8"):
        read_corpus(tmp_path)


def test_binary_file_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "blob.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(CorpusError, match=r"blob\.txt:\d+: binary data"):
        read_corpus(tmp_path)


def test_jsonl_and_csv_with_metadata(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text(
        '{"abstract": "%s", "title": "SpikePrune", "authors": ["A. One", "B. Two"], "url": "https://x.org/1", "year": 2024}\n\n' % SPIKING,
        encoding="utf-8",
    )
    (tmp_path / "q.csv").write_text(f'Title,Abstract,authors\nGraph paper,"{GRAPHS}","C. Three; D. Four"\n', encoding="utf-8")
    papers = {p.title: p for p in read_corpus(tmp_path).papers}
    assert papers["SpikePrune"].authors == ["A. One", "B. Two"]
    assert papers["SpikePrune"].url == "https://x.org/1" and papers["SpikePrune"].year == 2024
    assert papers["SpikePrune"].label == "SpikePrune"
    assert papers["Graph paper"].authors == ["C. Three", "D. Four"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("broken.jsonl", '{"abstract": "fine text here"}\n{"abstract": \n', r"broken\.jsonl:2: invalid JSON"),
        ("list.jsonl", '["not", "an", "object"]\n', r"list\.jsonl:1: expected a JSON object"),
        ("noabs.jsonl", '{"title": "no abstract"}\n', r"noabs\.jsonl:1: missing or empty 'abstract'"),
        ("cols.csv", "title,summary\nA,B\n", r"cols\.csv:1: no 'abstract' column"),
        ("year.csv", "abstract,year\nSome abstract text.,soon\n", r"year\.csv:2: 'year' must be a number"),
        ("nested.jsonl", '{"abstract": "Some abstract text.", "title": {"a": [1]}}\n', r"nested\.jsonl:1: 'title' must be text, got dict"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, name: str, content: str, message: str) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        read_corpus(tmp_path)


def test_missing_or_unsupported_paths(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        read_corpus(tmp_path / "nope")
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    with pytest.raises(CorpusError, match="unsupported file type"):
        read_corpus(tmp_path / "notes.pdf")
    with pytest.raises(CorpusError, match="no .txt, .jsonl, .csv files"):
        read_corpus(tmp_path)


def test_abstracts_fit_one_chunk_unless_long() -> None:
    papers = read_corpus(SHIPPED_CORPUS).papers
    nodes = chunk_papers(papers, chunk_size=512, chunk_overlap=64)
    assert len(nodes) == len(papers)
    assert nodes[0].id_ == f"{papers[0].paper_id}:0"
    small = chunk_papers(papers[:5], chunk_size=80, chunk_overlap=10)
    assert len(small) > 5
    assert all(count_tokens(n.text) <= 80 for n in small)
    assert {n.metadata["paper_id"] for n in small} == {p.paper_id for p in papers[:5]}
    positions = [n.metadata["position"] for n in small if n.metadata["paper_id"] == papers[0].paper_id]
    assert positions == list(range(len(positions)))


def test_chunks_carry_sentence_offsets_that_give_back_the_sentences() -> None:
    papers = {p.paper_id: p for p in read_corpus(SHIPPED_CORPUS).papers}
    for node in chunk_papers(list(papers.values()), chunk_size=512, chunk_overlap=64):
        abstract = papers[node.metadata["paper_id"]].abstract
        assert from_starts(abstract, node.metadata["abstract_starts"]) == split_sentences(abstract)
    for node in chunk_papers(list(papers.values())[:5], chunk_size=80, chunk_overlap=10):
        assert from_starts(node.text, node.metadata["chunk_starts"]) == split_sentences(node.text)
    assert sentence_starts("One. Two words here.") == "0 5" and from_starts("One. Two words here.", "0 5") == ["One.", "Two words here."]


def test_a_sentence_goes_on_past_an_abbreviation_punkt_ends_it_at() -> None:
    """Punkt ends a sentence at "(e.g." and "w.r.t." (one abstract in twenty): a quote told "… can grow linearly w.r.t. [1]"."""
    text = ("The cost can grow linearly w.r.t.  the number of faults. It is measured simply (e.g. pixel variance). "
            "A last one.")
    expected = ["The cost can grow linearly w.r.t.  the number of faults.", "It is measured simply (e.g. pixel variance).", "A last one."]
    assert split_sentences(text) == expected and from_starts(text, sentence_starts(text)) == expected


def test_a_title_given_as_a_list_of_strings_reads_as_one_title(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text('{"abstract": "Some abstract text about things.", "title": ["Part one:", "part two"]}\n', encoding="utf-8")
    assert read_corpus(tmp_path).papers[0].title == "Part one: part two"


def test_limits_are_checked_while_reading_with_file_and_line(tmp_path: Path) -> None:
    """What broke an adversarial run: a 50 MB one-line file, a huge abstract, JSON nested 200,000 deep."""
    one_line = tmp_path / "one_line.txt"
    one_line.write_text("word " * 10_000_000, encoding="utf-8")  # 50 MB, no line break
    with pytest.raises(CorpusError, match=r"one_line\.txt:1: the abstract is 49,999,999 characters long; the limit is 50,000"):
        read_corpus(one_line)
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"abstract": "A fine abstract about graphs."}\n{"abstract": "x", "title": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    with pytest.raises(CorpusError, match=r"nested\.jsonl:2: JSON nested too deeply"):
        read_corpus(nested)
    long_title = tmp_path / "title.jsonl"
    long_title.write_text(json.dumps({"abstract": "A fine abstract about graphs.", "title": "t" * 60_000}) + "\n")
    with pytest.raises(CorpusError, match=r"title\.jsonl:1: 'title' is 60,000 characters long"):
        read_corpus(long_title)


def test_a_lone_surrogate_becomes_a_replacement_character_and_the_paper_is_indexed(tmp_path: Path) -> None:
    from tests.conftest import make_settings

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "s.jsonl").write_text('{"abstract": "Broken \\ud800 text from an export. We study graphs with virtual nodes.", "title": "T \\udfff"}\n')
    papers = read_corpus(corpus).papers
    assert papers[0].abstract.startswith("Broken \ufffd text") and papers[0].title == "T \ufffd"
    from assistant.indexing.indexer import build_index

    assert build_index(make_settings(tmp_path), corpus, progress=False).manifest.papers == 1


def test_a_long_abstract_is_stored_once_not_with_every_chunk(tmp_path: Path) -> None:
    """A 322-chunk paragraph once stored its whole abstract 322 times (685 MB of metadata for a 1 MB paragraph)."""
    from assistant.engine import Assistant
    from assistant.indexing import store
    from assistant.indexing.indexer import build_index
    from tests.conftest import make_settings

    long = " ".join(f"Sentence {i} studies sparse graph attention under noise." for i in range(600))  # ~35,000 characters
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "long.txt").write_text(long + "\n", encoding="utf-8")
    settings = make_settings(tmp_path, chunk_size=64, chunk_overlap=8)
    build_index(settings, folder, progress=False)
    collection, _ = store.active_build(store.connect(settings), settings)
    stored = list(store.read_chunks(collection))
    assert len(stored) > 20 and sum("abstract" in c.metadata for c in stored) == 1
    found = Assistant(settings).search("sparse graph attention under noise", k=1).papers[0]
    assert found.abstract == long  # the paper comes back whole from its first chunk
