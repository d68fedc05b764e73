"""The reader (all-mpnet-base-v2 as ONNX), for real: export, index-time vectors, reordering, the gate, failures."""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant.engine import Assistant
from assistant.errors import ModelError
from assistant.evaluation import harness
from assistant.indexing.indexer import build_index, ensure_index
from assistant.ingest.corpus import read_corpus
from assistant.ingest.papers import Paper
from assistant.models import mpnet
from assistant.models.encoders import (
    MPNetBF16Embedding,
    MPNetEmbedding,
    MPNetInt8Embedding,
    MPNetOpenVINOEmbedding,
    abstract_reader,
    has_amx,
    native_bf16,
    question_reader,
    reader_precision,
)
from assistant.models.reader import Reader, cache_file
from assistant.retrieval.rerank import rerank
from assistant.settings import Settings
from tests.conftest import DEV_SET, SHIPPED_CORPUS, SPIKING, make_settings

pytestmark = pytest.mark.slow


PERSUASION = (  # hard-dev-014, in everyday words: the first stage is unsure (lexical relevance 0.53), so the reader reads
    "Several informed parties each decide what information to reveal in order to sway one decision-maker. Finding stable strategy "
    "profiles for them is computationally intractable in general, so has anyone fitted a differentiable network to their payoffs "
    "and searched for locally stable profiles that do better than simply revealing everything?"
)


def _reader() -> MPNetEmbedding:
    return MPNetEmbedding(Settings().model_dir)


def test_the_exported_reader_embeds_offline_like_sentence_transformers() -> None:
    model, tokenizer = mpnet.ensure(Settings().model_dir)
    assert model.stat().st_size > 400_000_000
    assert tokenizer.is_file() and not list(model.parent.glob(".*"))  # no temp files left
    vectors = _reader().embed_array(["Pruning spiking neural networks during training.", "A recipe for sourdough bread."])
    assert vectors.shape == (2, 768)
    query = _reader().embed_array(["How can spiking networks be made smaller?"])[0]
    assert float(vectors[0] @ query) > float(vectors[1] @ query) + 0.3


def test_the_int8_reader_agrees_with_the_float_model_so_they_share_a_cache() -> None:
    """The int8 copy under OpenVINO reads abstracts as the float model does: its vectors of real abstracts (ones its
    offset was not measured on) at cosine ≥ 0.99, questions' cosines to them within 0.02, and made whole once."""
    abstracts = [paper.abstract for paper in read_corpus(SHIPPED_CORPUS).papers[1::40]]
    int8 = abstract_reader(Settings().model_dir, "int8")
    model = mpnet.openvino_int8_model(Settings().model_dir)
    assert isinstance(int8, MPNetInt8Embedding) and model.with_suffix(".bin").is_file() and model.with_name("offset.npy").is_file()
    assert not list(model.parent.parent.glob(".mpnet-*"))  # no half-made copy left
    quantized, exact = int8.embed_array(abstracts), _reader().embed_array(abstracts)
    cosines = (quantized * exact).sum(axis=1)
    assert len(abstracts) == 11 and cosines.min() >= 0.99, cosines
    questions = _reader().embed_array([SPIKING, PERSUASION, "Which papers study label noise?"])
    assert np.abs(questions @ quantized.T - questions @ exact.T).max() < 0.02


@pytest.mark.skipif(not native_bf16(), reason="the CPU does not multiply bfloat16 natively (no AMX or AVX512-BF16)")
def test_the_reader_in_bfloat16_agrees_with_the_float_model_so_they_share_a_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build's abstracts in bfloat16 under torch: at cosine ≥ 0.9998 of the float model's on real abstracts, and
    auto picks it on this CPU where the int8 copy cannot be made."""
    real = importlib.util.find_spec
    abstracts = [paper.abstract for paper in read_corpus(SHIPPED_CORPUS).papers[::40]]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "nncf" else real(name, *args))
    assert reader_precision("auto") == "bfloat16"  # without nncf, no int8 copy can be made
    half = abstract_reader(Settings().model_dir, "bfloat16")
    assert isinstance(half, MPNetBF16Embedding) and not list(mpnet.bf16_weights(Settings().model_dir).parent.glob(".*"))
    cosines = (half.embed_array(abstracts) * _reader().embed_array(abstracts)).sum(axis=1)
    assert len(abstracts) == 11 and cosines.min() >= 0.9998, cosines


@pytest.mark.skipif(not native_bf16(), reason="the CPU does not multiply bfloat16 natively (no AMX or AVX512-BF16)")
def test_a_build_traces_the_bfloat16_reader_once_and_later_builds_load_the_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first bfloat16 reader traces the weights into MODEL_DIR, whole; the next loads that graph without
    transformers (0.4 s instead of ~5) and reads abstracts exactly as the first did."""
    mpnet.ensure(Settings().model_dir)  # the export and the bfloat16 weights, made once for every test
    mpnet.ensure_bf16(Settings().model_dir)
    shared = mpnet.files(Settings().model_dir)[0].parent
    for name in ("model.onnx", "tokenizer.json", "bf16/config.json", "bf16/model.safetensors"):  # the made weights, not the trace
        (tmp_path / mpnet.NAME / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / mpnet.NAME / name).symlink_to(shared / name)
    abstracts = [paper.abstract for paper in read_corpus(SHIPPED_CORPUS).papers[:3]]
    first = abstract_reader(tmp_path, "bfloat16").embed_array(abstracts)
    traced = mpnet.traced_file(tmp_path)
    assert traced.is_file() and not list(traced.parent.glob(".traced-*"))
    monkeypatch.setitem(sys.modules, "transformers", None)  # importing it now fails
    assert np.array_equal(abstract_reader(tmp_path, "bfloat16").embed_array(abstracts), first)


@pytest.mark.skipif(not native_bf16(), reason="the CPU does not multiply bfloat16 natively (no AMX or AVX512-BF16)")
def test_questions_are_read_in_bfloat16_by_openvino_as_the_float_model_reads_them() -> None:
    """The answering process's reader on this CPU: OpenVINO in bfloat16 from a whole IR copy, its vectors of real
    questions at cosine ≥ 0.998 of onnxruntime's float32 ones (mean ≥ 0.9999); READER_PRECISION=float32 keeps onnxruntime."""
    questions = [json.loads(line)["question"] for line in DEV_SET.read_text().splitlines() if line.strip()]
    fast = question_reader(Settings().model_dir, "auto")
    assert isinstance(fast, MPNetOpenVINOEmbedding) and mpnet.openvino_model(Settings().model_dir).with_suffix(".bin").is_file()
    assert not list(mpnet.openvino_model(Settings().model_dir).parent.parent.glob(".mpnet-*"))  # no half-made copy left
    exact = question_reader(Settings().model_dir, "float32")
    assert isinstance(exact, MPNetEmbedding)
    cosines = (fast.embed_array(questions) * exact.embed_array(questions)).sum(axis=1)
    assert len(questions) >= 40 and cosines.min() >= 0.998 and cosines.mean() >= 0.9999, cosines


def test_without_openvino_questions_stay_with_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "openvino" else real(name, *args))
    assert isinstance(question_reader(Settings().model_dir, "auto"), MPNetEmbedding)


def test_which_copy_of_the_reader_embeds_a_builds_abstracts(tmp_path: Path) -> None:
    assert reader_precision("auto") == "int8"  # openvino and nncf are installed with the reader
    assert [reader_precision(p) for p in ("float32", "bfloat16", "int8")] == ["float32", "bfloat16", "int8"]
    amx = tmp_path / "amx"
    amx.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f amx_bf16 amx_tile\n")
    plain = tmp_path / "plain"
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert native_bf16(amx) and not native_bf16(plain) and not native_bf16(tmp_path / "missing")
    epyc = tmp_path / "epyc"  # bfloat16 in AVX-512 alone: native, at half AMX's rate (the build's progress bar weighs it so)
    epyc.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n")
    assert native_bf16(epyc) and has_amx(amx) and not has_amx(epyc) and not has_amx(tmp_path / "missing")


def test_reranker_moves_the_paraphrased_paper_up(tmp_path: Path) -> None:
    reranker = Reader(tmp_path / "vectors.npy", lambda: abstract_reader(Settings().model_dir, "int8"), questions=_reader)
    papers = [
        Paper(paper_id="a", label="A", abstract="We benchmark image classifiers on corrupted inputs."),
        Paper(paper_id="b", label="B", abstract="Label smoothing softens one-hot targets; we study it for partial-label learning."),
        Paper(paper_id="c", label="C", abstract="Training with noisy labels, where annotators disagree about the class of an example."),
    ]
    order, scores = rerank(reranker, "Does softening one-hot training targets help when each example has several candidate labels?", [p.abstract for p in papers], 60)
    assert sorted(order) == [0, 1, 2] and papers[order[0]].paper_id == "b"
    assert int(scores.argmax()) == 1
    assert reranker.warm([p.abstract for p in papers]) == 0  # all were embedded while reranking
    assert Reader(tmp_path / "vectors.npy", _reader).cache.count() == 3  # and saved to disk


def test_a_stopped_warm_up_ends_between_two_steps_and_keeps_what_it_read(tmp_path: Path) -> None:
    """`assistant serve` stops the background reading before the process exits: onnxruntime torn down while it
    still runs in a thread aborted the process ("terminate called without an active exception")."""
    import threading

    from assistant.models.encoders import MiniLMEmbedding

    stop = threading.Event()

    class StopsAfterOneStep(MiniLMEmbedding):  # a real encoder; the stop request comes while it is reading
        def embed_array(self, texts: list[str]) -> np.ndarray:
            stop.set()
            return super().embed_array(texts)

    texts = [f"Abstract number {i} studies topic {i} with care." for i in range(50)]
    model_dir = Settings().model_dir
    reranker = Reader(tmp_path / "vectors.npy", lambda: StopsAfterOneStep(model_dir))
    assert reranker.warm(texts, stop=stop) == 16
    assert Reader(tmp_path / "vectors.npy", lambda: StopsAfterOneStep(model_dir)).cache.count() == 16  # saved
    assert Reader(tmp_path / "vectors.npy", lambda: MiniLMEmbedding(model_dir)).warm(texts) == 34  # the rest, later


def test_the_background_warm_up_waits_while_a_question_is_answered(small_corpus: Path, tmp_path: Path) -> None:
    """On 2 cores the reader's warm-up took both from the embedded model's first answer, which then timed out."""
    import threading

    from assistant.models.encoders import MiniLMEmbedding

    settings = make_settings(tmp_path)
    build_index(settings, small_corpus, progress=False)
    assistant = Assistant(settings)
    assert assistant.answering.idle.is_set()
    answering = assistant.stream("How does SpikePrune prune spiking neural networks?")
    next(answering)  # a question under way
    assert not assistant.answering.idle.is_set()

    class Watched:
        """`assistant.answering.idle`, noting when the warm-up first waits on it."""

        asked = threading.Event()

        def wait(self, timeout: float | None = None) -> bool:
            self.asked.set()
            return assistant.answering.idle.wait(timeout)

    texts = [f"Abstract number {i} studies topic {i} with care." for i in range(40)]
    reranker = Reader(tmp_path / "vectors.npy", lambda: MiniLMEmbedding(settings.model_dir))
    idle = Watched()
    warmed: list[int] = []
    warming = threading.Thread(target=lambda: warmed.append(reranker.warm(texts, idle=idle)))  # type: ignore[arg-type]
    warming.start()
    assert idle.asked.wait(60)  # the handshake: it reached its first step and waits for the question to end
    assert warming.is_alive() and reranker.cache.count() == 0
    for _ in answering:  # the answer ends; the warm-up goes on
        pass
    assert assistant.answering.idle.is_set()
    warming.join(timeout=60)
    assert warmed == [40]
    abandoned = assistant.stream("What does GraphHop do?")
    next(abandoned)
    abandoned.close()  # a reader that leaves mid-answer (a closed browser tab) does not hold the warm-up back
    assert assistant.answering.idle.is_set()


def test_index_time_vectors_and_reranked_answers(small_corpus: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, reranker="mpnet")
    build_index(settings, small_corpus, progress=False)
    assert Reader(cache_file(settings.cache_dir), _reader).cache.count() == 4
    answer = Assistant(settings).ask("How does SpikePrune prune spiking networks?")
    assert answer.citations[0].abstract == SPIKING


def test_serve_start_shows_the_ui_first_and_reads_the_abstracts_in_the_background(small_corpus: Path, tmp_path: Path) -> None:
    """`ensure_index` (what `assistant serve` runs) skips the reader's vectors; the background warm-up makes them."""
    settings = make_settings(tmp_path, reranker="mpnet", corpus_path=small_corpus)
    ensure_index(settings, progress=False)
    assert Reader(cache_file(settings.cache_dir), _reader).cache.count() == 0
    Assistant(settings).warm()
    assert Reader(cache_file(settings.cache_dir), _reader).cache.count() == 4


def test_a_paper_the_question_names_stays_first(shipped: Assistant) -> None:
    """The reader prefers another Transformer paper for this one; the question names PRepBN, so the first stage's order stands."""
    retrieval = shipped.search("What is PRepBN and what problem does it solve in Transformers?", reranker="mpnet")
    assert "PRepBN" in retrieval.papers[0].abstract and not retrieval.reader  # settled: the reader is not asked
    assert len(shipped.search(PERSUASION, reranker="mpnet").reader) == 10  # words of its own: the reader reads the ten best candidates


CLUSTERS = (  # own-034 in everyday words: the first stage ranks a graph-partitioning paper first, the reader the right one
    "If you want to split a network into groups where everyone knows everyone by cutting as few connections as possible, "
    "are there simple greedy procedures with better worst-case guarantees than before?"
)


UNSURE_GENERATORS = (  # own-038: WordLlama likes a text-to-image paper's sentence best; the reader ranks the right paper first
    "Is there a general way to say how unsure a generative model is, which works the same for text and for pictures, "
    "built from a split of the error into familiar parts?"
)


@pytest.mark.parametrize(("question", "title"), [(CLUSTERS, "Cluster Deletion"), (UNSURE_GENERATORS, "Bias-Variance-Covariance")])
def test_an_unsure_match_leads_with_the_paper_the_reader_put_first(shipped: Assistant, question: str, title: str) -> None:
    """The reader's order weighs twice the first stage's, so the paper it is sure of comes first; the answer, only
    "likely" to answer, quotes that paper first, not the paper whose sentence WordLlama likes best."""
    answer = shipped.ask(question)
    assert answer.confidence == "medium" and title in answer.sources[0].title
    assert title in answer.citations[0].title and len(answer.citations) > 1  # the runners-up are still quoted


def test_the_reader_decides_between_a_paraphrase_and_an_absent_topic(shipped: Assistant) -> None:
    """hard-dev-014 in everyday words (E5 refused it at the old gate) and an absent topic."""
    paraphrase = shipped.ask(PERSUASION)
    assert not paraphrase.abstained and not paraphrase.partial
    assert "Multi-Sender Persuasion" in paraphrase.citations[0].label
    absent = shipped.ask("Can language models flag signs of depression or suicide risk from people's social media posts?")
    assert absent.abstained


def test_a_broken_reader_leaves_the_first_stage_answering(shipped_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> MPNetEmbedding:
        raise ModelError("the reader's parts do not join into the expected file")

    assistant = Assistant(shipped_settings.with_overrides(reranker="mpnet"), reranker=Reader(tmp_path / "v.npy", broken))
    with caplog.at_level(logging.WARNING):
        answer = assistant.ask(PERSUASION)
    assert "Multi-Sender Persuasion" in assistant.paper(answer.ranking[0]).label  # the first stage's order; E5 decides (and declines, as before the reader)
    assert "the reader is unavailable" in caplog.text and "do not join" in caplog.text


def test_eval_compares_with_and_without_reranker(shipped_settings: Settings) -> None:
    report = harness.run(DEV_SET, ["hybrid", "hybrid-rerank"], limit=8, settings=shipped_settings, progress=False)
    assert report.summaries["hybrid-rerank"]["overall"]["R@5"] >= 0.8


def test_a_build_too_big_for_the_reader_says_answers_come_from_the_first_stage(small_corpus: Path, tmp_path: Path) -> None:
    """Past RERANK_MAX_PAPERS, RERANKER=auto leaves the reader off: the build says so and how to turn it on, embeds no
    abstract for it, and a build within the limit says nothing of it."""
    big = build_index(make_settings(tmp_path / "big", rerank_max_papers=3), small_corpus, progress=False)
    assert "reader (second stage) is off for indexes of more than 3 papers" in big.summary() and "RERANKER=mpnet" in big.summary()
    assert Reader(cache_file(tmp_path / "big" / "cache"), _reader).cache.count() == 0
    again = build_index(make_settings(tmp_path / "big", rerank_max_papers=3), small_corpus, progress=False)
    assert not again.built and "is off" in again.summary()
    within = build_index(make_settings(tmp_path / "within", rerank_max_papers=4), small_corpus, progress=False)
    assert "reader" not in within.summary()
