"""Shared fixtures: real Chroma stores in temporary folders, a small hand-made corpus, the shipped one."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from assistant.engine import Assistant
from assistant.evaluation.harness import GoldMatcher, shared_dir
from assistant.indexing.indexer import build_index
from assistant.ingest.corpus import read_corpus
from assistant.settings import PROJECT_ROOT, Settings

SHIPPED_CORPUS = PROJECT_ROOT / "index" / "corpus"
DEV_SET = PROJECT_ROOT / "eval" / "dev.jsonl"
HARD_SET = PROJECT_ROOT / "eval" / "hard.jsonl"
# The conference data a user would bring; CI keeps it beside the checkout (never copied into the repo).
SHARED_DATA = shared_dir() / "data"

SPIKING = (
    "Spiking neural networks are energy efficient. We propose SpikePrune, a channel pruning method that removes and "
    "regrows convolutional kernels of spiking networks during training. Experiments on CIFAR show large savings."
)
GRAPHS = (
    "Graph neural networks struggle with long-range dependencies. We introduce GraphHop, a message passing scheme "
    "that rewires graphs with virtual nodes. It improves accuracy on molecular property prediction benchmarks."
)
ROBOTS = (
    "Robots must grasp unfamiliar objects. We present GraspNet-X, a diffusion policy for dexterous grasping trained "
    "in simulation. It transfers to a real robot hand with a high success rate."
)
SOLAR = (
    "Forecasting solar power output helps grid operators. We develop SunCast, a transformer for photovoltaic power "
    "forecasting from satellite images. SunCast reduces forecast error on three solar farms."
)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads the developer's `.env` or shared state by accident."""
    for key in list(os.environ):
        if key.startswith(("CHROMA_", "LLM_", "OPENAI_", "UI_")) or key in {"COLLECTION", "INDEX_DIR", "CORPUS_PATH", "TOP_K"}:
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LLM_PROVIDER", "extractive")  # subprocesses too; model tests opt in explicitly
    monkeypatch.chdir(tmp_path_factory.getbasetemp())


def make_settings(root: Path, **overrides: object) -> Settings:
    """Settings whose store and cache live under `root`."""
    overrides.setdefault("llm_provider", "extractive")
    return Settings(index_dir=root / "store", cache_dir=root / "cache", **overrides)


def titled_corpus(tmp_path: Path, papers: list[tuple[str, str]]) -> Assistant:
    """An extractive assistant over `papers` (title, abstract), indexed in `tmp_path`."""
    corpus = tmp_path / "papers.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "abstract": a}) + "\n" for t, a in papers), encoding="utf-8")
    settings = make_settings(tmp_path, llm_provider="extractive")
    build_index(settings, corpus, progress=False)
    return Assistant(settings)


def conference_subset(root: Path, keep: Callable[[dict], bool], **overrides: object) -> Assistant:
    """An extractive assistant over the conference's papers that `keep` admits (first stage alone unless `overrides`
    say otherwise), indexed in `root`."""
    papers = [json.loads(line) for line in (SHARED_DATA / "icml2024_all.jsonl").open(encoding="utf-8")]
    corpus = root / "papers.jsonl"
    corpus.write_text("".join(json.dumps({"title": p["title"], "abstract": p["abstract"]}) + "\n" for p in papers if keep(p)), encoding="utf-8")
    settings = make_settings(root, **({"reranker": "none"} | overrides))
    build_index(settings, corpus, progress=False)
    return Assistant(settings)


@pytest.fixture
def tmp_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    """Four papers, with a header, an exact duplicate, a truncated copy and an empty file."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    truncated = SOLAR[:90].rstrip() + "…"
    (folder / "a.txt").write_text(f"My Paper Collection\n\n{SPIKING}\n\n{GRAPHS}\n\n{SPIKING}\n", encoding="utf-8")
    (folder / "b.txt").write_text(f"{ROBOTS}\n\n{truncated}\n\n{SOLAR}\n", encoding="utf-8")
    (folder / "empty.txt").write_text("", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def shipped_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The shipped corpus, indexed once per test session into a temporary store."""
    settings = make_settings(tmp_path_factory.mktemp("shipped"))
    build_index(settings, SHIPPED_CORPUS, progress=False)
    return settings


@pytest.fixture(scope="session")
def shipped(shipped_settings: Settings) -> Assistant:
    return Assistant(shipped_settings)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dev_questions() -> list[dict]:
    return [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines() if line.strip()]


def gold_paper_ids(question: dict) -> set[str]:
    """The shipped papers a dev question's gold paragraphs correspond to, matched by text."""
    matcher = GoldMatcher(read_corpus(SHIPPED_CORPUS).papers, [SHIPPED_CORPUS])
    return {pid for gold in question["gold"] for pid in matcher.match(gold)}


def damage_pages(database: Path, pages: int = 40) -> None:
    """Overwrite `pages` random 4 KiB pages of a SQLite file, as a failing disk or a stray write would."""
    rng = random.Random(7)
    with open(database, "r+b") as handle:
        for page in rng.sample(range(1, database.stat().st_size // 4096), pages):
            handle.seek(page * 4096)
            handle.write(rng.randbytes(4096))



@contextmanager
def serving(root: Path, settings: Settings, **env: str) -> Iterator[tuple[str, Path]]:
    """`assistant serve` in its own process on a free port, until the block ends; yields its URL and log."""
    port = free_port()
    environ = {**os.environ, "INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(settings.cache_dir), "UI_PORT": str(port),
               "GRADIO_ANALYTICS_ENABLED": "False", "LLM_PROVIDER": "extractive", **env}
    log = root / "serve.log"
    with open(log, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "assistant.cli", "serve"], env=environ, stdout=handle, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except urllib.error.HTTPError:
            break  # answering, behind a login
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"UI did not start:\n{log.read_text()}")
            time.sleep(0.5)
    try:
        yield url, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)
