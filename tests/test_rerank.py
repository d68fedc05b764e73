"""The optional MiniLM reranker, for real: offline load, index-time warm-up, reordering, eval config."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant import eval as harness
from assistant.engine import Assistant
from assistant.indexer import build_index
from assistant.rerank import Reranker
from assistant.types import Paper
from tests.conftest import DEV_SET, SPIKING, make_settings

pytestmark = pytest.mark.slow


def test_reranker_moves_the_paraphrased_paper_up(tmp_path: Path) -> None:
    reranker = Reranker(tmp_path / "vectors.npy")
    papers = [
        Paper(paper_id="a", label="A", abstract="We benchmark image classifiers on corrupted inputs."),
        Paper(paper_id="b", label="B", abstract="Label smoothing softens one-hot targets; we study it for partial-label learning."),
        Paper(paper_id="c", label="C", abstract="Training with noisy labels, where annotators disagree about the class of an example."),
    ]
    order = reranker.rerank("Does softening one-hot training targets help when each example has several candidate labels?", [p.abstract for p in papers])
    assert sorted(order) == [0, 1, 2] and papers[order[0]].paper_id == "b"  # first by MiniLM, second by the first stage: fused, it leads
    assert reranker.warm([p.abstract for p in papers], progress=False) == 0  # all were embedded while reranking
    assert Reranker(tmp_path / "vectors.npy").cache.count() == 3  # and saved to disk


def test_index_time_warmup_and_reranked_answers(small_corpus: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, reranker="minilm")
    build_index(settings, small_corpus, progress=False)
    assert Reranker(settings.cache_dir / "rerank-minilm.npy").cache.count() == 4
    answer = Assistant(settings).ask("How does SpikePrune prune spiking networks?")
    assert answer.citations[0].abstract == SPIKING


def test_eval_compares_with_and_without_reranker(shipped_settings, tmp_path: Path) -> None:
    report = harness.run(DEV_SET, ["hybrid", "hybrid-rerank"], limit=8, settings=shipped_settings, progress=False)
    assert report.summaries["hybrid-rerank"]["overall"]["R@5"] >= 0.8
