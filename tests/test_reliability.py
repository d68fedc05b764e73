"""Reliability: re-indexing while answering, repeated SIGKILLs, model faults under load, fuzzed input."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from assistant.answer.result import Answer
from assistant.engine import Assistant
from assistant.errors import AssistantError, CorpusError, QuestionError, StoreDamagedError, StoreUnavailableError
from assistant.indexing import store
from assistant.indexing.indexer import build_index
from assistant.settings import Settings
from tests.conftest import ROBOTS, SHIPPED_CORPUS, SPIKING, damage_pages, make_settings
from tests.openai_server import MODEL, Behaviour, ScriptedServer

pytestmark = pytest.mark.slow

REBUILD = """
import sys
from assistant.indexing.indexer import build_index
from assistant.settings import Settings
build_index(Settings(index_dir=sys.argv[1], cache_dir=sys.argv[2], llm_provider="extractive"), sys.argv[3], rebuild=True, progress=False)
"""


def _rebuild(settings: Settings, corpus: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", REBUILD, str(settings.index_dir), str(settings.cache_dir), str(corpus)], stderr=subprocess.PIPE, text=True)


def test_reindex_in_another_process_while_answering(small_corpus: Path, tmp_settings: Settings) -> None:
    build_index(tmp_settings, small_corpus, progress=False)
    assistant = Assistant(tmp_settings.with_overrides(index_check_s=0.0))
    (small_corpus / "new.txt").write_text(ROBOTS.replace("Robots must grasp", "Underwater vehicles must grasp"), encoding="utf-8")
    answers: list[Answer] = []
    errors: list[BaseException] = []
    for _ in range(2):  # two rebuilds back to back, answering throughout
        proc = _rebuild(tmp_settings, small_corpus)
        while proc.poll() is None:
            try:
                answers.append(assistant.ask("pruning kernels of spiking networks"))
            except BaseException as exc:  # noqa: BLE001 - any failure is what this test looks for
                errors.append(exc)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert not errors and len(answers) > 3
    assert all(a.citations and a.citations[0].abstract == SPIKING for a in answers)
    fresh = assistant.ask("underwater vehicles grasping objects")
    assert "Underwater vehicles" in fresh.citations[0].abstract


KILLABLE = """
import sys
from assistant.indexing import indexer, search_files, store
from assistant.settings import Settings

stage = sys.argv[4]


def pause_at(name, function):
    def paused(*args, **kwargs):
        if name == stage:
            print(name, flush=True)
            sys.stdin.readline()  # killed here
        return function(*args, **kwargs)
    return paused


store.new_build = pause_at("new_build", store.new_build)
indexer._write_batches = pause_at("write_batches", indexer._write_batches)
search_files.Writer.finish = pause_at("finish", search_files.Writer.finish)
store.commit_build = pause_at("commit_build", store.commit_build)
indexer.build_index(Settings(index_dir=sys.argv[1], cache_dir=sys.argv[2], llm_provider="extractive", embed_batch_size=8), sys.argv[3], rebuild=True, progress=False)
"""


@pytest.mark.parametrize("stage", ["new_build", "write_batches", "finish", "commit_build"])
def test_sigkill_at_each_stage_of_a_build_never_breaks_the_index(small_corpus: Path, tmp_settings: Settings, stage: str) -> None:
    """A build killed as it creates its collection, writes chunks, saves its search files or commits: the old one answers."""
    for i in range(30):
        (small_corpus / f"extra{i}.txt").write_text(f"Extra paper number {i} studies topic {i} in depth with new methods. " * 3, encoding="utf-8")
    before = build_index(tmp_settings, small_corpus, progress=False).manifest
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(tmp_settings.index_dir), str(tmp_settings.cache_dir), str(small_corpus), stage],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == stage  # the handshake: it is there now
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    opened = Assistant(tmp_settings)
    assert opened.ask("pruning kernels of spiking networks").citations[0].abstract == SPIKING
    assert opened.manifest == before
    final = build_index(tmp_settings, small_corpus, rebuild=True, progress=False)
    assert final.built and len([c for c in store.connect(tmp_settings).list_collections()]) == 2


def test_model_faults_under_a_burst_answer_within_the_timeout(small_corpus: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    build_index(settings, small_corpus, progress=False)
    server = ScriptedServer(script=[
        Behaviour(kind="status", status=500), Behaviour(delay_s=0.1), Behaviour(kind="stall", delay_s=5), Behaviour(kind="cut_stream"),
        Behaviour(kind="status", status=429), Behaviour(kind="invalid_json"), Behaviour(delay_s=0.1), Behaviour(kind="empty"),
        Behaviour(delay_s=0.1),  # answers take ~0.8 s, so the burst is still running when the server restarts
    ]).start()
    timeout = 3.0  # room for a retry that reaches the restarted server
    model = settings.with_overrides(llm_provider="openai-compatible", openai_base_url=server.base_url, llm_model=MODEL,
                                    llm_timeout_s=timeout, llm_max_retries=1, reading=False)
    assistant = Assistant(model)
    assistant.ask("How does SpikePrune prune spiking networks?", llm_provider="extractive")  # warm up: index and models loaded

    def timed(_: int) -> tuple[float, Answer]:
        started = time.monotonic()
        answer = assistant.ask("How does SpikePrune prune spiking networks?")
        return time.monotonic() - started, answer

    servers = [server]

    def restart() -> None:
        """The model server goes away mid-burst, once it has taken a few requests, and comes back on the same port."""
        deadline = time.monotonic() + 10
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        servers[-1].stop()
        time.sleep(0.3)
        servers.append(ScriptedServer(port=server.port).start())

    restarter = threading.Thread(target=restart)
    with ThreadPoolExecutor(12) as pool:
        restarter.start()
        results = list(pool.map(timed, range(24)))
    restarter.join()
    servers[-1].stop()
    bound = 2 * timeout + 2 + 2  # one retry, its backoff, and scheduling slack on 2 busy cores
    for elapsed, answer in results:
        assert elapsed < bound, elapsed
        assert answer.citations and answer.citations[0].abstract == SPIKING
        assert answer.notice is None or answer.text.startswith("Note: the chat model could not answer") or "unfinished" in answer.text
    assert any(a.notice is None for _, a in results) and any(a.notice for _, a in results), [a.notice for _, a in results]
    assert len(servers) == 2 and servers[0].requests and servers[1].requests


_QUESTION_TEXT = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=50).map(lambda s: s * 200),
    st.sampled_from(["", "   ", "\x00\x1f\x7f", "\ud800 lone surrogate", "<img src=x onerror=alert(1)>", "**bold** [x](y)", "剪枝 スパイキング", "a" * 100_000]),
)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=_QUESTION_TEXT)
def test_any_question_gets_an_answer_or_a_clear_error(shipped: Assistant, question: str) -> None:
    try:
        answer = shipped.ask(question)
    except QuestionError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    assert isinstance(answer, Answer) and (answer.citations or answer.abstained)


_CORPUS_FILES = st.one_of(
    st.binary(min_size=1, max_size=400).map(lambda b: ("blob.txt", b)),
    st.text(max_size=200).map(lambda t: ("latin.txt", ("Caf\xe9 " + t).encode("latin-1", "replace"))),
    st.just(("huge.txt", ("word " * 60_000).encode())),
    st.sampled_from([("cols.csv", b"title,summary\nA,B\n"), ("broken.jsonl", b'{"abstract": "ok text here"}\n{"abstract": \n'),
                     ("list.jsonl", b"[1, 2]\n"), ("empty.csv", b""), ("bom.txt", "\ufeffAn abstract with a BOM. It is fine.".encode())]),
)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=_CORPUS_FILES)
def test_any_corpus_file_is_indexed_or_rejected_leaving_the_index_unchanged(tmp_path_factory: pytest.TempPathFactory, bad: tuple[str, bytes]) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "good.txt").write_text(SPIKING, encoding="utf-8")
    settings = make_settings(root)
    before = build_index(settings, corpus, progress=False).manifest
    name, content = bad
    (corpus / name).write_bytes(content)
    try:
        result = build_index(settings, corpus, progress=False)
    except CorpusError as exc:
        assert name in str(exc)
        assert Assistant(settings).manifest == before
        return
    except AssistantError as exc:
        pytest.fail(f"unexpected error class for {name}: {exc}")
    assert result.manifest.papers >= 1
    assert Assistant(settings).ask("spiking network pruning").citations


def test_a_full_disk_during_a_build_is_one_clear_line_and_the_old_index_still_answers(small_corpus: Path, tmp_settings: Settings) -> None:
    """A full disk abandons the build, says so in one line (no chromadb traceback) and exits 1."""
    import resource

    build_index(tmp_settings, small_corpus, progress=False)
    for i in range(60):
        (small_corpus / f"more{i}.txt").write_text(f"Another paper, number {i}, studies subject {i} carefully with fresh methods. " * 8, encoding="utf-8")
    limit = max(f.stat().st_size for f in tmp_settings.index_dir.rglob("*") if f.is_file()) + 32_000

    def full_disk() -> None:  # files may not grow past `limit`, as on a disk that has filled up
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "INDEX_DIR": str(tmp_settings.index_dir), "CACHE_DIR": str(tmp_settings.cache_dir), "LLM_PROVIDER": "extractive"}
    done = subprocess.run([sys.executable, "-m", "assistant.cli", "index", "--corpus", str(small_corpus), "--rebuild", "-q"],
                          env=env, capture_output=True, text=True, timeout=300, preexec_fn=full_disk)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("error:")  # one line says what happened
    assert "disk" in done.stderr.lower()
    assert Assistant(tmp_settings).ask("pruning kernels of spiking networks").citations[0].abstract == SPIKING


class PanicException(BaseException):
    """What Chroma's Rust core raises on a damaged store (pyo3 derives it from BaseException, past `except Exception`)."""


class PanickingEncoder:
    dimension = 384

    def get_query_embedding(self, text: str) -> list[float]:
        raise PanicException("called `Result::unwrap()` on an `Err` value: database disk image is malformed")

    def embed_array(self, texts: list[str]) -> object:
        raise PanicException("database disk image is malformed")


def test_a_native_panic_while_searching_is_a_clear_error(shipped_settings: Settings) -> None:
    assistant = Assistant(shipped_settings, embedder=PanickingEncoder())  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailableError, match="failed while searching .* If it is damaged, move .* aside and rebuild with: assistant index --rebuild"):
        assistant.ask("Is there work on pruning spiking neural networks?")


def test_a_store_with_damaged_pages_is_named_damaged_everywhere_and_rebuild_moves_it_aside(shipped_settings: Settings, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    shutil.copytree(shipped_settings.index_dir, settings.index_dir)
    shutil.copytree(shipped_settings.cache_dir, settings.cache_dir)
    damage_pages(settings.index_dir / "chroma.sqlite3")
    env = {**os.environ, "INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(settings.cache_dir), "LLM_PROVIDER": "extractive"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "assistant.cli", *args], env=env, capture_output=True, text=True, timeout=300)

    for args in (["info"], ["index", "--corpus", str(SHIPPED_CORPUS), "-q"], ["ask", "Is there work on pruning spiking neural networks?"]):
        done = cli(*args)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "is damaged" in lines[0] and "assistant index --rebuild" in lines[0], done.stderr  # no panic, no traceback
    with pytest.raises(StoreDamagedError, match="is damaged"):
        Assistant(settings).check_store()

    rebuilt = cli("index", "--corpus", str(SHIPPED_CORPUS), "--rebuild", "-q")
    assert rebuilt.returncode == 0 and "The damaged store was moved to" in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr
    kept = [folder for folder in tmp_path.iterdir() if folder.name.startswith("store.damaged-")]
    assert len(kept) == 1 and (kept[0] / "chroma.sqlite3").is_file()  # nothing deleted: the damaged store is kept whole
    assert store.damage(settings) is None
    assert "spiking" in Assistant(settings).ask("Is there work on pruning spiking neural networks?").citations[0].abstract.lower()


def test_a_read_only_store_is_called_read_only_not_damaged(shipped_settings: Settings, tmp_path: Path) -> None:
    """Chroma writes to its folder even to answer, so a read-only store cannot serve; the message says that, not damage."""
    settings = make_settings(tmp_path)
    shutil.copytree(shipped_settings.index_dir, settings.index_dir)
    env = {**os.environ, "INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(tmp_path / "cache"), "LLM_PROVIDER": "extractive"}
    ask = [sys.executable, "-m", "assistant.cli", "ask", "Is there work on pruning spiking neural networks?"]
    if os.geteuid() != 0:
        for path in [settings.index_dir, *settings.index_dir.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        done = subprocess.run(ask, env=env, capture_output=True, text=True, timeout=300)
    else:  # root writes through file modes: mount the folder read-only in a private mount namespace instead
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
            pytest.skip("running as root without the right to make a private read-only mount")
        script = f"mount --bind -o ro {settings.index_dir} {settings.index_dir} && exec {shlex.join(ask)}"
        done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "is read-only" in done.stderr and "damaged" not in done.stderr
