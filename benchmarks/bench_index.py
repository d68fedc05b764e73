"""Indexing speed: what a build of the sample, the whole conference and 100k abstracts costs, reader included.

Each build runs in a fresh process from a cold cache, as `assistant index` does
for a user (the sample's shipped vectors on), and prints seconds, abstracts/s
and peak RSS; then the retrieval metrics on the public question files over
that index with the reader and without it (`bench_scale.quality`), and warm
`ask()` latency for questions the reader reads. Beside each: a plain
llama-index + Chroma build of the same corpus with the same first-stage
model (`VectorStoreIndex` over a `ChromaVectorStore`, default settings).

`--models` prints each model's speed beside its limit here (one forward pass a
text, as a question does, against the build's one pass a core); `--agreement N`
exports the float reader and compares its vectors of N conference abstracts
with the int8 reader's and (on a CPU that multiplies bfloat16 natively) the bfloat16 reader's.

Run: python -m benchmarks.bench_index [--sizes sample conference 100000] [--models] [--agreement 300] [--no-baseline]
     [--reader-precision auto|float32|bfloat16|int8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.bench_scale import DEV, FULL, HARD, SHIPPED, corpus_of, quality, run_json
from benchmarks.common import SHARED, report, temp_settings

TARGETS = {"conference": 180.0, "100000": 45 * 60.0}  # build seconds
REALISTIC = SHARED / "eval" / "questions_realistic.jsonl"

BUILD = """
import json, sys, time
started = time.perf_counter()
from assistant.indexing.indexer import build_index
from assistant.settings import Settings
from benchmarks.common import peak_rss_mb
settings = Settings(**json.loads(sys.argv[1]))
result = build_index(settings, sys.argv[2], progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "papers": result.manifest.papers, "peak_rss_mb": peak_rss_mb()}))
"""

# Retrieval quality with the reader on and off over one built index, and warm ask() for questions the reader reads.
ASK = """
import json, sys, time
from assistant.engine import Assistant
from assistant.settings import Settings
from benchmarks.bench_scale import quality
from benchmarks.common import percentiles
values = json.loads(sys.argv[1])
questions = [json.loads(line) for path in sys.argv[2:] for line in open(path) if line.strip()]
out = {}
for reranker in ("auto", "none"):
    assistant = Assistant(Settings(**values, reranker=reranker))
    found = {q["id"]: assistant.search(q["question"], q.get("history") or [], k=10).ranking for q in questions}
    out[reranker] = quality(lambda q: found[q["id"]], assistant.papers(), questions)
    if reranker == "auto":
        latency, read = [], 0
        for q in questions:
            if not assistant.search(q["question"]).reader:
                continue  # the first stage settled it: the reader was not asked
            read += 1
            t = time.perf_counter()
            assistant.ask(q["question"])
            latency.append((time.perf_counter() - t) * 1000)
        out["ask_read"] = percentiles(latency) | {"questions": read}
print(json.dumps(out))
"""


PLAIN = """
import json, sys
from benchmarks.bench_index import baseline
print(json.dumps(baseline(sys.argv[1])))
"""


def corpus_for(size: str, folder: Path) -> Path:
    """The sample as shipped, the conference as ICML published it, or the sample plus conference-drawn distractors."""
    if size == "sample":
        return SHIPPED
    if size == "conference":
        return FULL
    return corpus_of(int(size), folder)


def build(size: str, precision: str) -> dict:
    """A cold build of `size` in its own process, then retrieval with and without the reader over it."""
    settings = temp_settings(shipped_vectors=True)  # as a user gets it: the sample's vectors ship
    corpus = corpus_for(size, settings.index_dir.parent / "corpus")
    values = {"index_dir": str(settings.index_dir), "cache_dir": str(settings.cache_dir), "llm_provider": "extractive",
              "collection": "bench", "reranker": "auto", "rerank_max_papers": 200_000, "reader_precision": precision}
    built = run_json(BUILD, json.dumps(values), str(corpus))
    values.pop("reranker")
    asked = run_json(ASK, json.dumps(values), str(DEV), str(HARD))
    shutil.rmtree(settings.index_dir.parent, ignore_errors=True)
    return built | asked


def baseline(size: str) -> dict:
    """The script a user would otherwise write: llama-index's VectorStoreIndex over Chroma, MiniLM, defaults."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from assistant.ingest.corpus import read_corpus
    from assistant.models.embeddings import load_embedding
    from assistant.settings import Settings
    from benchmarks.common import peak_rss_mb

    folder = Path(tempfile.mkdtemp(prefix="assistant-bench-plain-"))
    papers = read_corpus(corpus_for(size, folder / "corpus")).papers
    started = time.perf_counter()
    client = chromadb.PersistentClient(str(folder / "chroma"), settings=ChromaSettings(anonymized_telemetry=False))
    store = ChromaVectorStore(chroma_collection=client.create_collection("plain"))
    index = VectorStoreIndex.from_documents(
        [Document(text=p.abstract, metadata={"paper_id": p.paper_id}) for p in papers],
        storage_context=StorageContext.from_defaults(vector_store=store), embed_model=load_embedding("minilm", Settings().model_dir),
    )
    seconds = time.perf_counter() - started
    retriever = index.as_retriever(similarity_top_k=10)
    questions = [json.loads(line) for path in (DEV, HARD) for line in path.read_text().splitlines() if line.strip()]
    found = {q["id"]: [n.node.metadata["paper_id"] for n in retriever.retrieve(q["question"])] for q in questions}
    result = {"seconds": seconds, "papers": len(papers), "peak_rss_mb": peak_rss_mb(), "quality": quality(lambda q: found[q["id"]], papers, questions)}
    shutil.rmtree(folder, ignore_errors=True)
    return result


def models() -> None:
    """Each encoder's abstracts/s: one pass a text on both cores (a question's model) and one pass a core (a build's)."""
    from assistant.ingest.corpus import read_corpus
    from assistant.models.encoders import (
        MiniLMEmbedding,
        MPNetBF16Embedding,
        MPNetEmbedding,
        MPNetInt8Embedding,
        native_bf16,
    )
    from assistant.settings import Settings

    abstracts = [paper.abstract for paper in read_corpus(FULL).papers[:120]]
    encoders = [("MiniLM (int8)", lambda private: MiniLMEmbedding(Settings().model_dir, private=private)),
                ("reader", lambda private: MPNetEmbedding(Settings().model_dir, private=private)),
                ("reader's int8 copy (OpenVINO)", lambda private: MPNetInt8Embedding(Settings().model_dir))]
    if native_bf16():  # torch's bfloat16 reader and OpenVINO's int8 one run one text a core only (a build's)
        encoders.append(("reader in bfloat16 (torch)", lambda private: MPNetBF16Embedding(Settings().model_dir)))
    for name, make in encoders:
        rates = {}
        for label, private in (("one pass a text", False), ("one pass a core", True)):
            model = make(private)
            model.embed_array(abstracts[:4])
            started = time.perf_counter()
            model.embed_array(abstracts)
            rates[label] = len(abstracts) / (time.perf_counter() - started)
        report(f"{name}: abstracts/s, one pass a text", rates["one pass a text"], "/s")
        report(f"{name}: abstracts/s, one pass a core (a build)", rates["one pass a core"], "/s")
        print(f"{'':<48} ratio to one pass a text {rates['one pass a core'] / rates['one pass a text']:.2f}")


def agreement(n: int) -> None:
    """The int8 and bfloat16 readers against the float export on `n` conference abstracts: cosines, and each one's speed."""

    from assistant.ingest.corpus import read_corpus
    from assistant.models.encoders import MPNetBF16Embedding, MPNetEmbedding, MPNetInt8Embedding, native_bf16
    from assistant.settings import Settings

    papers = read_corpus(FULL).papers
    abstracts = [paper.abstract for paper in papers[:: max(1, len(papers) // n)]][:n]
    exact = MPNetEmbedding(Settings().model_dir, private=True)  # the float export, one pass a core
    started = time.perf_counter()
    floats = exact.embed_array(abstracts)
    float_rate = len(abstracts) / (time.perf_counter() - started)
    reader = MPNetInt8Embedding(Settings().model_dir)
    started = time.perf_counter()
    ints = reader.embed_array(abstracts)
    int_rate = len(abstracts) / (time.perf_counter() - started)
    cosines = (floats * ints).sum(axis=1)
    report(f"reader int8 vs float: cosine, min of {len(abstracts)}", float(cosines.min()), "", 0.99, lower_is_better=False)
    report("reader int8 vs float: cosine, mean", float(cosines.mean()), "")
    questions = MPNetEmbedding(Settings().model_dir).embed_array(
        [json.loads(line)["question"] for path in (DEV, HARD, REALISTIC) for line in path.read_text().splitlines() if line.strip()])
    shift = questions @ ints.T - questions @ floats.T
    report("reader int8: question-abstract cosine shift, mean (x1e-4)", float(shift.mean()) * 1e4, "")
    report("reader int8: question-abstract cosine shift, std (x1e-4)", float(shift.std()) * 1e4, "")
    report("reader float: abstracts/s (one pass a core)", float_rate, "/s")
    report("reader int8: abstracts/s (one pass a core)", int_rate, "/s")
    print(f"{'':<48} ratio int8/float {int_rate / float_rate:.2f}")
    if native_bf16():
        half = MPNetBF16Embedding(Settings().model_dir)
        started = time.perf_counter()
        halves = half.embed_array(abstracts)
        half_rate = len(abstracts) / (time.perf_counter() - started)
        cosines = (floats * halves).sum(axis=1)
        report(f"reader bfloat16 vs float: 1 - cosine, max of {len(abstracts)} (x1e-4)", float(1 - cosines.min()) * 1e4, "", 2.0)
        report("reader bfloat16 vs float: 1 - cosine, mean (x1e-4)", float(1 - cosines.mean()) * 1e4, "")
        report("reader bfloat16: abstracts/s (one pass a core)", half_rate, "/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["sample", "conference"])
    parser.add_argument("--models", action="store_true", help="each encoder's speed, one pass a text against one a core")
    parser.add_argument("--agreement", type=int, default=0, metavar="N", help="compare the int8 and bfloat16 readers with the float one on N abstracts")
    parser.add_argument("--no-baseline", action="store_true", help="skip the plain llama-index + Chroma builds")
    parser.add_argument("--reader-precision", choices=["auto", "float32", "bfloat16", "int8"], default="auto", help="READER_PRECISION of the builds")
    args = parser.parse_args()
    for size in args.sizes:
        print(f"\n== {size} ==", flush=True)
        ours = build(size, args.reader_precision)
        report("build: seconds (cold cache, reader included)", ours["seconds"], "s", TARGETS.get(size))
        report("build: abstracts/s", ours["papers"] / ours["seconds"], "/s", lower_is_better=False)
        report("build: peak RSS", ours["peak_rss_mb"], "MB", 1024.0)
        report("warm ask() p50, questions the reader reads", ours["ask_read"]["p50"], "ms", 50.0)
        print(f"{'':<48} ({ours['ask_read']['questions']} questions; p95 {ours['ask_read']['p95']:.1f} ms)")
        plain = None if args.no_baseline else run_json(PLAIN, size)  # its own process: its peak RSS is its own
        if plain:
            report("plain llama-index + Chroma build: seconds", plain["seconds"], "s")
            report("plain llama-index + Chroma build: peak RSS", plain["peak_rss_mb"], "MB")
            print(f"{'':<48} ratio ours/plain {ours['seconds'] / plain['seconds']:.2f}")
        print(f"{'metric':<36} {'reader':>8} {'no reader':>10} {'plain':>8}")
        for metric, value in ours["auto"].items():
            print(f"{metric:<36} {value:>8.3f} {ours['none'][metric]:>10.3f} {plain['quality'][metric] if plain else float('nan'):>8.3f}")
    # after the builds: a process started from this one inherits its peak RSS, which these models' loading would raise
    if args.models:
        models()
    if args.agreement:
        agreement(args.agreement)


if __name__ == "__main__":
    main()
