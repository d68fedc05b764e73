"""Index builds against a real Chroma store on disk and a real `chroma run` server."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
import weakref
from pathlib import Path

import pytest
from llama_index.vector_stores.chroma import ChromaVectorStore

from assistant.engine import Assistant
from assistant.errors import CorpusError, IndexMismatchError, IndexNotFoundError, StoreUnavailableError
from assistant.indexing import search_files as search_files
from assistant.indexing import store
from assistant.indexing.indexer import build_index
from assistant.indexing.lexical import LexicalBuilder, with_joined_words
from assistant.models.embeddings import cache_file
from assistant.settings import Settings
from tests.conftest import (
    GRAPHS,
    ROBOTS,
    SHARED_DATA,
    SHIPPED_CORPUS,
    SPIKING,
    conference_subset,
    free_port,
    make_settings,
)


def _collections(settings: Settings) -> list[str]:
    return sorted(c.name for c in store.connect(settings).list_collections())


def test_build_then_unchanged_reindex_embeds_nothing(small_corpus: Path, tmp_settings: Settings) -> None:
    first = build_index(tmp_settings, small_corpus, progress=False)
    assert first.built and first.embedded == 4 and first.manifest.papers == 4
    again = build_index(tmp_settings, small_corpus, progress=False)
    assert not again.built and again.manifest.collection == first.manifest.collection
    forced = build_index(tmp_settings, small_corpus, rebuild=True, progress=False)
    assert forced.built and forced.embedded == 0
    assert forced.manifest.collection != first.manifest.collection
    manifest_file = tmp_settings.index_dir / f"{tmp_settings.collection}.manifest.json"
    assert store.Manifest.from_json(manifest_file.read_text()) == forced.manifest


def test_old_builds_are_pruned_but_previous_kept(small_corpus: Path, tmp_settings: Settings) -> None:
    names = [build_index(tmp_settings, small_corpus, rebuild=True, progress=False).manifest.collection for _ in range(3)]
    assert _collections(tmp_settings) == sorted(names[1:])


def test_manifest_mismatch_names_setting_and_command(small_corpus: Path, tmp_settings: Settings) -> None:
    build_index(tmp_settings, small_corpus, progress=False)
    other = tmp_settings.with_overrides(**{"chunk_size": 256})
    with pytest.raises(IndexMismatchError, match=r"chunk_size: index has 512, settings ask for 256.*assistant index --rebuild"):
        Assistant(other).ask("spiking pruning")
    rebuilt = build_index(other, small_corpus, progress=False)  # a plain `index` rebuilds on mismatch
    assert rebuilt.built and rebuilt.manifest.chunk_size == 256


def test_missing_index_says_how_to_build(tmp_settings: Settings) -> None:
    with pytest.raises(IndexNotFoundError, match="assistant index --collection icml2024"):
        Assistant(tmp_settings).ask("anything")


def test_failed_build_leaves_previous_index_answering(small_corpus: Path, tmp_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    before = build_index(tmp_settings, small_corpus, progress=False).manifest
    (small_corpus / "more.txt").write_text(ROBOTS.replace("Robots", "Drones"), encoding="utf-8")

    def broken_add(self: ChromaVectorStore, nodes: list, **kwargs: object) -> list[str]:
        raise OSError("disk full")

    monkeypatch.setattr(ChromaVectorStore, "add", broken_add)
    with pytest.raises(StoreUnavailableError, match="disk full.*the previous index still answers"):
        build_index(tmp_settings, small_corpus, progress=False)
    monkeypatch.undo()
    assert _collections(tmp_settings) == [before.collection]
    answer = Assistant(tmp_settings).ask("pruning kernels of spiking networks")
    assert answer.citations[0].abstract == SPIKING
    after = build_index(tmp_settings, small_corpus, progress=False)
    assert after.built and after.manifest.papers == 5


def test_rejected_corpus_leaves_index_unchanged(small_corpus: Path, tmp_settings: Settings) -> None:
    before = build_index(tmp_settings, small_corpus, progress=False).manifest
    (small_corpus / "bad.jsonl").write_text('{"abstract": "ok"}\n{broken\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2"):
        build_index(tmp_settings, small_corpus, progress=False)
    assert _collections(tmp_settings) == [before.collection]
    assert Assistant(tmp_settings).manifest == before


_KILLABLE_BUILD = """
import sys, time
from llama_index.vector_stores.chroma import ChromaVectorStore
from assistant.indexing.indexer import build_index
from assistant.indexing.lexical import LexicalBuilder
from assistant.settings import Settings
original = ChromaVectorStore.add
def slow_add(self, nodes, **kw):
    ids = original(self, nodes, **kw)
    print("wrote", flush=True)
    time.sleep(30)
    return ids
ChromaVectorStore.add = slow_add
build_index(Settings(index_dir=sys.argv[1], cache_dir=sys.argv[2]), sys.argv[3], rebuild=True, progress=False)
"""


@pytest.mark.slow
def test_sigkilled_build_leaves_previous_index_and_next_build_completes(small_corpus: Path, tmp_settings: Settings) -> None:
    before = build_index(tmp_settings, small_corpus, progress=False).manifest
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE_BUILD, str(tmp_settings.index_dir), str(tmp_settings.cache_dir), str(small_corpus)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "wrote"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reopened = Assistant(tmp_settings)
    assert reopened.manifest.collection == before.collection
    assert reopened.ask("spiking network pruning").citations[0].abstract == SPIKING
    after = build_index(tmp_settings, small_corpus, rebuild=True, progress=False)
    assert after.built
    assert before.collection in _collections(tmp_settings) and after.manifest.collection in _collections(tmp_settings)
    assert len(_collections(tmp_settings)) == 2  # the killed build's leftover was pruned


def test_running_assistant_switches_to_a_newer_build(small_corpus: Path, tmp_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.infra import memory

    released: list[bool] = []
    monkeypatch.setattr(memory, "release", lambda items: released.append(True))
    build_index(tmp_settings, small_corpus, progress=False)
    assistant = Assistant(tmp_settings.with_overrides(**{"index_check_s": 0.0}))
    assert assistant.ask("drones grasping objects").citations
    first = weakref.ref(assistant.index.current())
    (small_corpus / "more.txt").write_text(ROBOTS.replace("Robots must grasp", "Aerial drones must deliver"), encoding="utf-8")
    newer = build_index(tmp_settings, small_corpus, progress=False).manifest
    released.clear()  # the build released its own memory; what follows is the switch
    answer = assistant.ask("aerial drones must deliver unfamiliar objects")
    assert assistant.manifest.collection == newer.collection
    assert "Aerial drones" in answer.citations[0].abstract
    gc.collect()
    assert first() is None and released  # nothing keeps a replaced build (~230 MB at 100k papers); its pages go back


@pytest.fixture
def chroma_server(tmp_path: Path) -> tuple[str, int]:
    chroma = shutil.which("chroma", path=os.path.dirname(sys.executable)) or shutil.which("chroma")
    assert chroma, "the chroma CLI ships with chromadb"
    port = free_port()
    proc = subprocess.Popen([chroma, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    settings = make_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=port)
    deadline = time.monotonic() + 60
    while True:
        try:
            store.connect(settings)
            break
        except StoreUnavailableError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("chroma run did not start")
            time.sleep(0.3)
    yield "127.0.0.1", port
    proc.terminate()
    proc.wait(timeout=20)


@pytest.mark.slow
def test_chroma_server_mode_shared_by_two_processes(small_corpus: Path, tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    host, port = chroma_server
    settings = make_settings(tmp_path / "app", chroma_host=host, chroma_port=port)
    built = build_index(settings, small_corpus, progress=False)
    assert built.built and not (tmp_path / "app" / "store").exists()
    assert Assistant(settings).ask("pruning spiking networks").citations[0].abstract == SPIKING
    env = {**os.environ, "CHROMA_HOST": host, "CHROMA_PORT": str(port), "CACHE_DIR": str(tmp_path / "other-cache")}
    other = subprocess.run([sys.executable, "-m", "assistant.cli", "ask", "--json", "robot hand grasping"], env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert ROBOTS[:40] in other.stdout
    # the other machine had no search files for the build: it derived them from the server, under its own cache
    assert (tmp_path / "other-cache" / "builds" / built.manifest.collection / "complete").is_file()


@pytest.mark.slow
def test_a_machine_that_only_serves_keeps_the_search_files_of_live_builds_only(small_corpus: Path, tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    """An app machine derives each new build's files; without pruning on switch, they would pile up one per rebuild."""
    host, port = chroma_server
    builder = make_settings(tmp_path / "builder", chroma_host=host, chroma_port=port)
    app = make_settings(tmp_path / "app", chroma_host=host, chroma_port=port, index_check_s=0.0)
    build_index(builder, small_corpus, progress=False)
    assistant = Assistant(app)
    assert assistant.ask("pruning spiking networks").citations[0].abstract == SPIKING
    for _ in range(3):
        latest = build_index(builder, small_corpus, rebuild=True, progress=False).manifest
        assert assistant.ask("pruning spiking networks").citations[0].abstract == SPIKING
    deadline = time.monotonic() + 120  # new builds' files are derived in the background, then switched to
    while assistant.manifest.collection != latest.collection and time.monotonic() < deadline:
        time.sleep(0.2)
    kept = {folder.name for folder in (app.cache_dir / "builds").iterdir()}
    assert assistant.manifest.collection in kept and kept <= store.build_names(store.connect(app)) and len(kept) <= 2


def test_an_app_keeps_one_client_per_chroma_server(tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    """An app connects at every index check; chromadb keeps each HttpClient's system alive (~1.6 MB), so a new
    client each time grew a 100k-paper app by ~700 MB in 18 minutes of `bench_shared`."""
    host, port = chroma_server
    settings = make_settings(tmp_path / "app", chroma_host=host, chroma_port=port)
    assert store.connect(settings) is store.connect(settings.with_overrides(cache_dir=tmp_path / "other"))


def test_unreachable_chroma_server_is_a_clear_error(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=free_port())
    with pytest.raises(StoreUnavailableError, match=r"Cannot reach the Chroma server at 127\.0\.0\.1:\d+.*chroma run"):
        Assistant(settings).ask("anything")


def test_answering_from_a_built_index_needs_no_sentence_model(shipped_settings: Settings) -> None:
    """Sentence offsets stored at index time spare a fresh process the ~2 s nltk/punkt load."""
    code = (
        "import sys\nfrom assistant.engine import Assistant\nfrom assistant.settings import Settings\n"
        f"answer = Assistant(Settings(index_dir={str(shipped_settings.index_dir)!r}, cache_dir={str(shipped_settings.cache_dir)!r}, llm_provider='extractive'))"
        ".ask('What is PRepBN and what problem does it solve in Transformers?')\n"
        "print(len(answer.citations), 'nltk' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    cited, nltk_loaded = result.stdout.split()
    assert int(cited) >= 1 and nltk_loaded == "False"


def test_shipped_index_has_every_paper(shipped_settings: Settings) -> None:
    manifest = Assistant(shipped_settings).manifest
    assert (manifest.papers, manifest.chunks, manifest.embed_model) == (440, 440, "minilm")
    assert manifest.corpus_path == str(SHIPPED_CORPUS)


def _disk_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def test_rebuilds_give_their_disk_back_and_leave_no_litter(small_corpus: Path, tmp_settings: Settings) -> None:
    """Deleted builds give back their vector folders, so the store does not grow with every rebuild (SQLite reuses its pages)."""
    import re

    build_index(tmp_settings, small_corpus, progress=False)
    build_index(tmp_settings, small_corpus, rebuild=True, progress=False)  # two live builds: the active one and the previous
    two_builds = _disk_bytes(tmp_settings.index_dir)
    cache = cache_file(tmp_settings.cache_dir, "minilm")
    written = cache.stat().st_mtime_ns
    leftover = tmp_settings.cache_dir / ".embeddings-killed.tmp"  # what a SIGKILL during a cache save leaves
    leftover.write_text("{")
    for _ in range(20):
        build_index(tmp_settings, small_corpus, rebuild=True, progress=False)
    folders = [f for f in tmp_settings.index_dir.iterdir() if f.is_dir() and re.fullmatch(r"[0-9a-f-]{36}", f.name)]
    assert len(folders) == 2  # one vector folder per live build
    assert _disk_bytes(tmp_settings.index_dir) <= 2 * two_builds
    assert not leftover.exists()
    assert cache.stat().st_mtime_ns == written  # nothing new to embed: the cache file is not rewritten
    assert len(list((tmp_settings.cache_dir / "builds").iterdir())) == 2  # the search files of the two live builds only


def test_the_embedding_cache_is_one_binary_file_and_an_old_json_cache_is_imported(small_corpus: Path, tmp_path: Path) -> None:
    """The JSON cache held every vector as text in memory (3.2 GB to build 100k abstracts); upgrading must re-embed nothing."""
    import json

    import numpy as np

    from assistant.ingest.corpus import read_corpus
    from assistant.models.encoders import load_encoder

    texts = [paper.abstract for paper in read_corpus(small_corpus).papers]
    vectors = load_encoder("minilm", Settings().model_dir).embed_array(texts)
    settings = make_settings(tmp_path / "upgraded")
    legacy = cache_file(settings.cache_dir, "minilm").with_suffix(".json")  # what earlier versions wrote (llama-index's SimpleKVStore)
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"embeddings": {t: {"id": v.tolist()} for t, v in zip(texts, vectors)}}))
    result = build_index(settings, small_corpus, progress=False)
    assert result.embedded == 0 and not legacy.exists()
    assert np.load(cache_file(settings.cache_dir, "minilm")).shape == (4, 384)
    assert np.load(cache_file(settings.cache_dir, "minilm").with_suffix(".keys.npy")).shape == (4, 16)  # 16-byte hashes
    assert Assistant(settings).ask("How does SpikePrune prune spiking neural networks?").citations[0].abstract == SPIKING


def test_an_app_reads_papers_from_the_build_table_instead_of_holding_them(shipped_settings: Settings) -> None:
    """At 100k papers the table as objects was ~170 MB of every app: an app now keeps each paper's place in the
    build's `papers.jsonl` and the papers it read last, and finds the same papers and sentence starts there."""
    import json

    from assistant.indexing.paper_table import PaperTable
    from assistant.ingest.chunking import paper_from_metadata
    from assistant.ingest.papers import Paper

    def papers_alive() -> int:
        gc.collect()
        with warnings.catch_warnings():  # isinstance on some of torch's module objects warns of their deprecated names
            warnings.simplefilter("ignore", FutureWarning)
            return sum(isinstance(o, Paper) for o in gc.get_objects())

    before = papers_alive()
    assistant = Assistant(shipped_settings)
    assistant.ask("Is there work on pruning spiking neural networks?")
    build = assistant.index.current()
    assert len(build.papers) == 440 and papers_alive() - before < 60  # the question's papers and the reads kept, not 440
    lines = (shipped_settings.cache_dir / "builds" / build.manifest.collection / "papers.jsonl").read_text(encoding="utf-8").splitlines()
    saved = [json.loads(line) for line in lines]
    table = PaperTable(shipped_settings.cache_dir / "builds" / build.manifest.collection / "papers.jsonl")
    assert list(table.scan()) == [table[meta["paper_id"]] for meta in saved] == [paper_from_metadata(meta) for meta in saved]
    assert table[saved[7]["paper_id"]] is table[saved[7]["paper_id"]] and saved[7]["paper_id"] in table and "nope" not in table
    assert all(table.starts_of(meta["abstract"]) == (meta.get("abstract_starts") or None) for meta in saved)
    assert any(meta.get("abstract_starts") for meta in saved) and table.starts_of("not an abstract of this build") is None
    assert assistant.paper("nope") is None and assistant.paper(saved[3]["paper_id"]) == paper_from_metadata(saved[3])


@pytest.mark.parametrize("left", ["nothing", "an older version's folder"])
def test_a_build_without_its_search_files_has_them_derived_from_the_store_once(small_corpus: Path, tmp_settings: Settings, left: str) -> None:
    """An index built by an older version, or on another machine against a shared Chroma server, has no local files
    (or files without the chunks' vectors, which filtered searches score): they are derived from the store."""
    import numpy as np

    result = build_index(tmp_settings, small_corpus, progress=False)
    files = tmp_settings.cache_dir / "builds" / result.manifest.collection
    assert (files / "complete").is_file() and (files / "bm25").is_dir()
    written = np.load(files / "vectors.npy")
    build = Assistant(tmp_settings).index.current()
    stored = build.collection.get(ids=build.retriever.lexical.chunk_ids, include=["embeddings"])
    assert np.allclose(written, np.asarray(stored["embeddings"]), atol=1e-6)  # row i is chunk_ids[i]'s vector
    expected = Assistant(tmp_settings).search("How does SpikePrune prune spiking neural networks?").ranking
    papers = [json.loads(line) for line in (files / "papers.jsonl").read_text(encoding="utf-8").splitlines()]
    if left == "nothing":
        shutil.rmtree(tmp_settings.cache_dir / "builds")
    else:
        (files / "vectors.npy").unlink()
        (files / "complete").write_text("1", encoding="utf-8")
    assert Assistant(tmp_settings).search("How does SpikePrune prune spiking neural networks?").ranking == expected
    assert (files / "complete").read_text(encoding="utf-8") == search_files._FORMAT
    assert np.array_equal(np.load(files / "vectors.npy"), np.asarray(stored["embeddings"], dtype=np.float32))  # the store's, row for row
    if left == "nothing":  # the paper table derived from the store is the one the build wrote (no adapter bookkeeping)
        assert [json.loads(line) for line in (files / "papers.jsonl").read_text(encoding="utf-8").splitlines()] == papers


def test_a_newer_build_that_cannot_be_opened_leaves_the_current_one_answering(small_corpus: Path, tmp_settings: Settings) -> None:
    """A running app must not fail questions because the build that just landed cannot be opened here (its search
    files cannot be written, say), nor make them wait while the files are derived: it keeps answering from the
    build it has and switches once the files are saved."""
    from assistant.indexing import search_files as search_files

    first = build_index(tmp_settings, small_corpus, progress=False).manifest
    assistant = Assistant(tmp_settings.with_overrides(**{"index_check_s": 0.0}))
    assert assistant.ask("drones grasping objects").citations
    (small_corpus / "more.txt").write_text(ROBOTS.replace("Robots must grasp", "Aerial drones must deliver"), encoding="utf-8")
    newer = build_index(tmp_settings, small_corpus, progress=False).manifest
    files = search_files.folder(tmp_settings, newer.collection)
    shutil.rmtree(files)
    files.write_text("in the way", encoding="utf-8")
    meanwhile = assistant.ask("aerial drones must deliver unfamiliar objects")  # answered, from the first build
    assert not any("Aerial drones" in paper.abstract for paper in meanwhile.citations)
    assert assistant.manifest.collection == first.collection
    files.unlink()
    deadline = time.monotonic() + 120  # the files are derived in the background; questions never wait for that
    while assistant.manifest.collection != newer.collection and time.monotonic() < deadline:
        assistant.ask("drones grasping objects")
        time.sleep(0.2)
    assert "Aerial drones" in assistant.ask("aerial drones must deliver unfamiliar objects").citations[0].abstract
    assert assistant.manifest.collection == newer.collection


def test_search_files_are_derived_in_a_child_process_and_a_failure_says_why(
    small_corpus: Path, tmp_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deriving 100k abstracts' files needs a few hundred MB for a minute: a child process holds that, not the app
    (which still answers from its current build meanwhile); when the child fails the app says why and keeps nothing."""
    from assistant.indexing import search_files as search_files

    result = build_index(tmp_settings, small_corpus, progress=False)
    builds = tmp_settings.cache_dir / "builds"
    shutil.rmtree(builds)

    def in_this_process(*args: object) -> None:
        raise AssertionError("the app process derived the search files itself")

    monkeypatch.setattr(search_files.Writer, "__init__", in_this_process)
    assert Assistant(tmp_settings).ask("pruning spiking networks").citations[0].abstract == SPIKING
    assert (builds / result.manifest.collection / "complete").read_text(encoding="utf-8") == search_files._FORMAT

    shutil.rmtree(builds)
    builds.write_text("not a folder", encoding="utf-8")  # the child cannot write its files here
    with pytest.raises(StoreUnavailableError, match=rf"Could not derive the search files of build {result.manifest.collection} .*builds"):
        Assistant(tmp_settings).ask("pruning spiking networks")
    assert builds.read_text(encoding="utf-8") == "not a folder"

    builds.unlink()
    monkeypatch.setattr(sys, "executable", str(tmp_settings.cache_dir / "no-python-here"))  # the child cannot even start
    with pytest.raises(StoreUnavailableError, match=rf"Could not start the process deriving the search files of build {result.manifest.collection}"):
        Assistant(tmp_settings).ask("pruning spiking networks")


def test_bm25_postings_are_sorted_so_coverage_can_binary_search(small_corpus: Path, tmp_settings: Settings) -> None:
    """`LexicalIndex.coverage` binary-searches BM25's posting lists; bm25s keeps them sorted (a canonical CSC matrix)."""
    import numpy as np

    build_index(tmp_settings, small_corpus, progress=False)
    lexical = Assistant(tmp_settings).index.current().retriever.lexical
    indices, indptr = np.asarray(lexical.bm25.scores["indices"]), np.asarray(lexical.bm25.scores["indptr"])
    assert all(np.all(np.diff(indices[a:b]) > 0) for a, b in zip(indptr[:-1], indptr[1:]))
    ids = {p.abstract: p.paper_id for p in Assistant(tmp_settings).papers()}
    terms = set(lexical.tokenize(["spiking neural networks pruning"]).vocab) - {""}
    assert lexical.coverage(terms, [ids[SPIKING]]) == 1.0 and lexical.coverage(terms, [ids[ROBOTS]]) < 0.5


def test_a_build_reads_the_acronyms_its_papers_spell_out_and_not_words_they_write_in_lower_case() -> None:
    """"RL" is spelled out by two papers; "MAP" too, but "map" is also a word the papers use ("feature map")."""
    texts = [
        "Offline reinforcement learning (RL) learns from logs, and offline RL is hard.",
        "We scale deep reinforcement learning (RL) to many tasks.",
        "We compute the maximum a posteriori (MAP) estimate.",
        "A maximum a posteriori (MAP) estimate of the weights.",
        *(f"Each feature map of layer {n} is pruned." for n in range(4)),
        "Offline reinforcement learning from play data.",
    ]
    builder = LexicalBuilder()
    builder.add((f"c{n}", f"p{n}", text, []) for n, text in enumerate(texts))
    lexical = builder.finish()
    assert lexical.long_form("rl") == "reinforcement learning" and lexical.long_form("map") == ""
    assert lexical.spelled_out("Which papers do offline RL?") == "Which papers do offline RL? reinforcement learning"
    users = lexical.coverages({"offlin", "rl"}, ["p0", "p8", "p1", "p4"])
    assert users["p0"] == users["p8"] == 1.0 and 0 < users["p1"] < 1 and users["p4"] == 0  # "offline reinforcement learning" says offline RL


def test_a_cache_save_killed_between_its_two_files_keeps_a_consistent_cache(tmp_path: Path) -> None:
    """Vectors are renamed into place before their hashes; rows only grow, so old hashes still name the right rows."""
    import numpy as np

    from assistant.models.embeddings import VectorCache

    path = tmp_path / "embeddings-test.npy"
    cache = VectorCache(path)
    cache.put("first", {"v": [1.0, 0.0]})
    cache.save()
    keys_before = (tmp_path / "embeddings-test.keys.npy").read_bytes()
    cache.put("second", {"v": [0.0, 1.0]})
    cache.save()
    (tmp_path / "embeddings-test.keys.npy").write_bytes(keys_before)  # as if killed after the vectors' rename
    reopened = VectorCache(path)
    assert reopened.count() == 1 and reopened.get("first") == {"v": [1.0, 0.0]} and reopened.get("second") is None
    reopened.put("second", {"v": [0.0, 1.0]})
    reopened.save()
    again = VectorCache(path)
    assert again.count() == 2 and again.get("second") == {"v": [0.0, 1.0]}
    assert np.load(path).shape == (2, 2)


def test_a_cached_text_whose_hash_ends_in_a_zero_byte_is_found_again(tmp_path: Path) -> None:
    """numpy's bytes strings drop trailing NULs: 1 text in 256 was re-embedded (and appended again) on every build."""
    from assistant.models.embeddings import VectorCache
    from assistant.models.vector_cache import text_hash

    text = next(t for t in (f"abstract {i}" for i in range(100_000)) if text_hash(t).endswith(b"\x00"))
    cache = VectorCache(tmp_path / "embeddings-test.npy")
    cache.put(text, {"v": [0.6, 0.8]})
    cache.save()
    assert VectorCache(tmp_path / "embeddings-test.npy").get(text) == {"v": [0.6000000238418579, 0.800000011920929]}


def test_a_fresh_checkout_takes_the_shipped_vectors_of_the_sample_once_one_agrees_with_the_model(tmp_path: Path) -> None:
    """index/vectors/ spares a fresh checkout ~2.5 minutes of embedding; what it takes equals what the models make."""
    import numpy as np

    from assistant.ingest.chunking import chunk_papers
    from assistant.ingest.corpus import read_corpus
    from assistant.ingest.metadata import attach_metadata
    from assistant.models.encoders import MiniLMEmbedding, MPNetEmbedding
    from assistant.models.reader import cache_file as reader_cache_file
    from assistant.models.vector_cache import VectorFile
    from assistant.settings import SAMPLE_FACTS, SAMPLE_VECTORS

    settings = make_settings(tmp_path)
    result = build_index(settings, SHIPPED_CORPUS, progress=False)
    assert result.built and result.embedded == 0  # every chunk's vector was shipped
    chunks, abstracts = VectorFile(cache_file(settings.cache_dir, "minilm")), VectorFile(reader_cache_file(settings.cache_dir))
    assert chunks.count() == result.manifest.chunks and abstracts.count() == result.manifest.papers == 440  # the sample, and only it
    papers, _ = attach_metadata(read_corpus(SHIPPED_CORPUS).papers, SAMPLE_FACTS)
    sample = [papers[i] for i in (0, 217, 439)]
    chunk_texts = [node.get_content(metadata_mode="embed") for node in chunk_papers(sample, settings.chunk_size, settings.chunk_overlap)]
    for model, cache, texts in ((MiniLMEmbedding(settings.model_dir), chunks, chunk_texts), (MPNetEmbedding(settings.model_dir), abstracts, [p.abstract for p in sample])):
        assert np.allclose(np.stack([cache.vector(t) for t in texts]), model.embed_array(texts), atol=1e-4)
    assert settings.shipped_vectors_for(reader_cache_file(settings.cache_dir)) == reader_cache_file(SAMPLE_VECTORS)
    assert make_settings(tmp_path / "off", shipped_vectors=False).shipped_vectors_for(reader_cache_file(settings.cache_dir)) is None


def test_shipped_vectors_that_another_model_made_are_refused_and_the_text_is_embedded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import numpy as np

    from assistant.models.encoders import MiniLMEmbedding
    from assistant.models.vector_cache import ShippedVectors, VectorFile

    model = MiniLMEmbedding(Settings().model_dir)
    for name, vector in (("right", model.embed_array([SPIKING])[0]), ("wrong", np.roll(model.embed_array([SPIKING])[0], 1))):
        shipped = VectorFile(tmp_path / f"{name}.npy")
        shipped.put(SPIKING, {"v": vector})
        shipped.put(ROBOTS, {"v": model.embed_array([ROBOTS])[0]})
        shipped.save()
        cache = VectorFile(tmp_path / f"cache-{name}.npy", shipped=ShippedVectors(tmp_path / f"{name}.npy", lambda: model))
        if name == "right":
            assert np.array_equal(cache.vector(SPIKING), vector) and cache.vector(ROBOTS) is not None and cache.from_shipped == 2
            assert cache.vector(GRAPHS) is None  # not shipped: the caller embeds it
        else:
            assert cache.vector(SPIKING) is None and cache.vector(ROBOTS) is None and cache.from_shipped == 0
            assert "do not match this model" in caplog.text
    assert VectorFile(tmp_path / "cache-absent.npy", shipped=ShippedVectors(tmp_path / "absent.npy", lambda: model)).vector(SPIKING) is None


def indexed(tmp_path: Path, abstracts: list[str]) -> Assistant:
    """An assistant over `abstracts` (one corpus file, one abstract a paragraph), indexed under `tmp_path`."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("\n\n".join(abstracts) + "\n", encoding="utf-8")
    settings = make_settings(tmp_path)
    build_index(settings, corpus, progress=False)
    return Assistant(settings)


MOMENTOR = ("Video language models lack fine-grained temporal reasoning. We design a data engine to construct Moment-10M, "
            "a large-scale video instruction dataset with segment-level data, and train Momentor on it.")
C_SOBA = ("Distributed bilevel methods send full gradients every iteration. We first propose C-SOBA, a simple yet effective "
          "approach with unbiased compression and provable linear speedup convergence.")


S2IP_LLM = ("We propose Semantic Space Informed Prompt learning with LLM ($S^2$IP-LLM) to align the pre-trained semantic "
            "space with time series embedding space. $S^2$IP-LLM achieves superior forecasting performance.")
SAFECLIP = ("CLIP is extremely vulnerable to targeted data poisoning and backdoor attacks. We propose a strong defense, "
            "SAFECLIP, to safely pre-train CLIP. SAFECLIP divides the data into safe and risky sets.")

AD_EPSILON = ("Current in-context RL methods need data generated by RL agents. We propose AD$^\\varepsilon$, a new data "
              "acquisition approach that enables in-context reinforcement learning from noise-induced curriculum.")
DISTILLED = ("Algorithm Distillation (AD) learns to reinforcement-learn in context. We study what AD needs to transfer "
             "across tasks and show that AD benefits from longer contexts.")


@pytest.mark.parametrize(("abstract", "question"), [
    (MOMENTOR, "What is the Moment-10M dataset and which model is trained on it?"),
    (C_SOBA, "how do C-SOBA and the IST theory paper differ in what they compress?"),
    (S2IP_LLM, "what is S2IP-LLM"),
    (S2IP_LLM, "what is S^2IP-LLM?"),
    (SAFECLIP, "SafeCLIP: how does it split the data?"),
    (AD_EPSILON, "what does AD^epsilon do for in-context RL?"),
])
def test_a_hyphenated_name_finds_its_paper(tmp_path: Path, abstract: str, question: str) -> None:
    """"Moment-10M" and "C-SOBA" were no names: over the whole conference their papers (first by BM25) fell out of the
    fused top 10; nor were "$S^2$IP-LLM" and "AD$^\\varepsilon$" (superscripts in LaTeX) and "SAFECLIP" asked as "SafeCLIP"."""
    from assistant.text.words import names_in

    assert names_in("What is the Moment-10M dataset? Does Llama-2 beat GPT-4?") == ["GPT-4", "Llama-2", "Moment-10M"]
    assert names_in("top-5 accuracy of a state-of-the-art Self-Supervised model on 3-D X-ray scans") == []
    assert names_in("Is C-SOBA better than X-Oscar?") == ["C-SOBA", "X-Oscar"]
    assert names_in("Hybrid^2 Neural ODE fits x^2 in E^2GAN") == ["E2GAN", "Hybrid2", "ODE"]  # a name's superscript, not a power
    found = indexed(tmp_path, [SPIKING, GRAPHS, ROBOTS, DISTILLED, abstract]).search(question)  # AD is another paper's name
    assert found.named == {found.papers[0].paper_id} and found.papers[0].abstract[:40] == abstract[:40]


DIVBS = ("Online batch selection picks informative subsets during training. We propose Diversified Batch Selection (DivBS), "
         "which is reference-model-free. Experiments show that DivBS accelerates training.")
DMS = ("We propose Differentiable Model Scaling (DMS) to search width and depth. On ImageNet, DMS improves EfficientNet-B0, "
       "and on ImageNet it outperforms ZiCo.")
PRUNED = "We prune vision transformers and keep their accuracy on ImageNet-1K with half the FLOPs."


def test_a_dataset_another_paper_writes_in_a_version_is_no_paper_s_own_name(tmp_path: Path) -> None:
    """"how much faster does DivBS train on ImageNet?" was answered about a paper writing "ImageNet" twice, the only one
    of the sample writing it bare (others write "ImageNet-1K")."""
    found = indexed(tmp_path, [SPIKING, GRAPHS, ROBOTS, DIVBS, DMS, PRUNED]).search("how much faster does DivBS train on ImageNet?")
    assert found.papers[0].abstract == DIVBS and len(found.named) == 1, [p.abstract[:30] for p in found.papers]


@pytest.fixture(scope="module")
def network_papers(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    """The conference's papers with "network" in their title and the cycloid one, the first stage alone."""
    if not (SHARED_DATA / "icml2024_all.jsonl").exists():
        pytest.skip("needs the conference's abstracts")
    return conference_subset(
        tmp_path_factory.mktemp("networks"), lambda p: "network" in p["title"].lower() or p["title"].startswith("Unveiling the Cycloid Trajectory")
    )


@pytest.mark.parametrize("question", ["sum-product networks?", "DP + sum-product networks?"])
def test_a_compound_that_one_abstract_writes_finds_it_where_the_dense_ranking_does_not(network_papers: Assistant, question: str) -> None:
    """"DP + sum-product networks?": one abstract of the conference writes "sum-product", BM25 ranked it first, and
    the dense ranking, weighted six times BM25's, put it 35th among papers on networks."""
    assert network_papers.search(question).papers[0].title == "Differentially Private Sum-Product Networks"


@pytest.mark.skipif(not (SHARED_DATA / "icml2024_all.jsonl").exists(), reason="needs the conference's abstracts")
def test_a_title_holding_most_of_the_question_s_words_names_its_paper(tmp_path: Path) -> None:
    """"Theory comparing autoregressive vs masked pretraining" is "Look Ahead or Look Around? A Theoretical Comparison
    Between Autoregressive and Masked Pretraining", whose abstract says "SSL": over the conference's papers with
    pretraining, autoregressive or masked in their title it was answered about TimeSiam and DARL."""
    assistant = conference_subset(tmp_path, lambda p: bool(re.search(r"pre-?train|autoregressive|masked", p["title"].lower())))
    answer = assistant.ask("theory comparing autoregressive vs masked pretraining")
    assert answer.citations[0].title.startswith("Look Ahead or Look Around?"), [p.title for p in answer.citations]


def test_bm25s_best_leads_where_it_holds_the_question_s_words_and_the_fused_first_does_not(tmp_path: Path) -> None:
    """"What's the cycloid paper about?" was declined over the conference: one abstract uses "cycloid", BM25's first,
    and the fused first (the dense ranking's) used none of the question's words. Here the dense verdict is given as
    the fused order, its first the robots paper."""
    from assistant.retrieval.hybrid import Chunk
    from assistant.retrieval.search import _lexical_best_first

    cycloid = ("We study the trajectory of iterations of the EM algorithm for mixed linear regression, and show that it "
               "follows a cycloid in the noiseless setting.")
    build = indexed(tmp_path, [SPIKING, GRAPHS, ROBOTS, cycloid]).index.current()
    retriever, lexical = build.retriever, build.retriever.lexical
    row = {build.papers[p].abstract: lexical.paper_rows[p][0] for p in lexical.paper_rows}
    fused = [Chunk(lexical.chunk_ids[row[text]], lexical.chunk_papers[row[text]]) for text in (ROBOTS, GRAPHS, SPIKING, cycloid)]
    led = _lexical_best_first(retriever, retriever.encode("what's the cycloid paper about?"), fused, None)
    assert build.papers[led[0].paper_id].abstract == cycloid and len(led) == 4
    # a question whose words the fused first holds as well keeps the fused order
    assert _lexical_best_first(retriever, retriever.encode("robots and graphs"), fused, None) == fused
    assert "vs" not in retriever.terms("autoregressive vs masked pretraining")


def test_assistant_index_shows_one_progress_bar_for_the_whole_build_and_no_debug_lines(small_corpus: Path, tmp_path: Path) -> None:
    """The reader's vectors and the first stage's share one bar (its ETA spans both); bm25s's DEBUG line no longer leaks."""
    env = {**os.environ, "INDEX_DIR": str(tmp_path / "store"), "CACHE_DIR": str(tmp_path / "cache"), "RERANKER": "mpnet",
           "LLM_PROVIDER": "extractive"}
    done = subprocess.run([sys.executable, "-m", "assistant.cli", "index", "--corpus", str(small_corpus)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    shown = [part.strip() for part in done.stderr.replace("\r", "\n").splitlines() if part.strip()]
    bars = [part for part in shown if "%|" in part]
    assert bars and all(bar.startswith("Indexing 4 abstracts:") for bar in bars) and "100%" in bars[-1]
    assert [part for part in shown if "%|" not in part] == [f"WARNING assistant.ingest.corpus: {small_corpus / 'empty.txt'}: no abstracts found"]
    assert "DEBUG" not in done.stderr + done.stdout and "Built index" in done.stdout

    from assistant.models.reader import cache_file as reader_cache_file
    from assistant.models.vector_cache import VectorFile

    assert VectorFile(reader_cache_file(tmp_path / "cache")).count() == 4  # the reader's vectors were part of that build


def test_the_progress_bar_never_passes_its_end_by_a_rounding_error() -> None:
    """The build moves its bar by float shares; 0.1 + 0.1 + 0.1 passes 0.3, and tqdm warned and showed "-00:00 left"."""
    import warnings

    from assistant.indexing.indexer import _advance, _progress_bar

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _progress_bar(3, 0, True, True) as bar:
            for _ in range(30):
                _advance(bar, 0.1)
            assert bar.n == bar.total


def test_a_kind_of_thing_with_a_descriptive_tail_is_no_exact_name(tmp_path: Path) -> None:
    """"LLM-based evaluation of video quality": two papers writing "LLM-based" were put first by the exact-name
    ranking, weighted above all others, though "LLM-based" names a kind of method, not one."""
    agent = "SceneWriter is an LLM-based agent that writes Blender code for 3D scenes from text."
    benchmark = "We build a GSM8K-based benchmark of grade-school math word problems with distractors."
    build = indexed(tmp_path, [SPIKING, GRAPHS, agent, benchmark]).index.current()
    lexical = build.retriever.lexical
    assert lexical.exact_names("LLM-based evaluation of video quality") == []
    assert [build.papers[lexical.chunk_papers[row]].abstract for row in lexical.exact_names("how hard is the GSM8K-based benchmark?")] == [benchmark]


def test_a_word_people_type_whole_finds_the_abstracts_hyphenating_it() -> None:
    """"how many tokens of finetuning …" found the tokenizer paper writing "fine-tuning" without its word: BM25 reads
    "fine" and "tuning", the question "finetuning"."""
    texts = ["We study fine-tuning of multi-modal models on state-of-the-art benchmarks.", "Spiking networks are pruned."]
    builder = LexicalBuilder()
    builder.add((f"c{n}", f"p{n}", text, []) for n, text in enumerate(texts))
    lexical = builder.finish()
    assert lexical.coverages({"finetun", "multimod"}, ["p0", "p1"]) == {"p0": 1.0, "p1": 0.0}
    assert lexical.coverages({"fine", "tune"}, ["p0"]) == {"p0": 1.0}
    assert with_joined_words("state-of-the-art in-context GPT-4 fine-tuning") == "state-of-the-art in-context GPT-4 fine-tuning incontext finetuning"


def test_british_spellings_are_found_by_american_ones(tmp_path: Path) -> None:
    """"density estimation by regularizing a sobolev norm" missed "Sobolev Space Regularised Pre Density Models": BM25
    stems "regularised" as "regularis" and "regularizing" as "regular"; about one abstract in 25 spells so."""
    from assistant.text.words import american

    assert [american(w) for w in ["optimisation", "behaviour", "neighbourhood", "centre", "defence", "analysed"]] == [
        "optimization", "behavior", "neighborhood", "center", "defense", "analyzed"]
    assert [american(w) for w in ["noise", "four", "your", "analysis", "basis", "raised"]] == ["noise", "four", "your", "analysis", "basis", "raised"]
    sobolev = ("We propose a non-parametric density model whose Sobolev norm is regularised; the optimisation behaves "
               "well in high dimensions and the neighbourhood behaviour of its kernel is analysed.")
    assistant = indexed(tmp_path, [SPIKING, GRAPHS, ROBOTS, sobolev])
    for question in ("regularizing a sobolev norm", "kernel neighborhood behavior analyzed"):
        found = assistant.search(question, mode="bm25")
        assert found.papers[0].abstract == sobolev and found.coverage == 1.0, (question, found.coverage)
