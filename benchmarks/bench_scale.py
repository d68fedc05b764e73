"""Issues #6 and #8 numbers: build throughput and peak memory, query latency as the index grows, and a
baseline: the plain llama-index script a user would otherwise write, on the same embedding model.

Run: python -m benchmarks.bench_scale [--sizes 10000 100000] [--full PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import percentiles, report, temp_settings, timed

SHIPPED = Path(__file__).resolve().parent.parent / "index" / "corpus"
DEV = Path(__file__).resolve().parent.parent / "eval" / "dev.jsonl"
FULL = next((p for p in (Path(__file__).resolve().parents[2] / "shared" / "data" / "icml2024_all.jsonl", Path("/work/shared/data/icml2024_all.jsonl")) if p.exists()),
            Path(__file__).resolve().parents[2] / "shared" / "data" / "icml2024_all.jsonl")

BUILD_SNIPPET = """
import json, resource, sys, time
started = time.perf_counter()
from assistant.indexer import build_index
from assistant.settings import Settings
settings = Settings(index_dir=sys.argv[1], cache_dir=sys.argv[2], collection=sys.argv[4])
result = build_index(settings, sys.argv[3], progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "papers": result.manifest.papers, "chunks": result.manifest.chunks,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build_in_subprocess(corpus: Path, collection: str = "bench") -> tuple[dict, object]:
    settings = temp_settings(collection=collection)
    out = subprocess.run([sys.executable, "-c", BUILD_SNIPPET, str(settings.index_dir), str(settings.cache_dir), str(corpus), collection],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), settings


def synthetic_corpus(n_abstracts: int, folder: Path) -> Path:
    """Abstract-like paragraphs made by recombining sentences of the shipped abstracts (fixed seed)."""
    from assistant.corpus import read_corpus
    from assistant.sentences import split_sentences

    sentences = [s for p in read_corpus(SHIPPED).papers for s in split_sentences(p.abstract) if len(s.split()) > 6]
    rng = random.Random(42)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"synthetic-{n_abstracts}.txt"
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(n_abstracts):
            handle.write(" ".join(rng.sample(sentences, 7)) + "\n\n")
    return path


def query_latency(settings, questions: list[str], repeat: int = 3) -> dict[str, float]:
    from assistant.engine import Assistant

    assistant = Assistant(settings.with_overrides(llm_provider="extractive"))
    assistant.search(questions[0])
    retrieval = [timed(lambda q=q: assistant.search(q)) * 1000 for _ in range(repeat) for q in questions]
    answer = [timed(lambda q=q: assistant.ask(q)) * 1000 for q in questions]
    return {"retrieval": percentiles(retrieval), "ask": percentiles(answer)}


def dev_questions() -> list[dict]:
    return [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]


def quality(search, papers, questions) -> dict[str, float]:
    """Recall@5 (single+keyword), MRR (single+keyword) and recall@10 (multi) for any `search(question) -> paper ids`."""
    from assistant.eval import GoldMatcher

    matcher = GoldMatcher(papers, [SHIPPED])
    hits, reciprocal, multi = [], [], []
    for q in questions:
        gold = {pid for g in q["gold"] for pid in matcher.match(g)}
        found = search(q["question"])
        if q["type"] in ("single", "keyword"):
            hits.append(bool(gold & set(found[:5])))
            reciprocal.append(next((1 / (i + 1) for i, pid in enumerate(found) if pid in gold), 0.0))
        elif q["type"] == "multi":
            multi.append(len(gold & set(found[:10])) / len(gold))
    return {"Recall@5 single+keyword": sum(hits) / len(hits), "MRR single+keyword": sum(reciprocal) / len(reciprocal),
            "Recall@10 multi": sum(multi) / len(multi)}


def baseline(settings) -> None:
    """The hand-rolled llama-index path: VectorStoreIndex.from_documents(...).as_retriever(), in memory."""
    from llama_index.core import Document, VectorStoreIndex

    from assistant.corpus import read_corpus
    from assistant.embeddings import load_embedding
    from assistant.engine import Assistant

    papers = read_corpus(SHIPPED).papers
    embed = load_embedding("wordllama")
    started = time.perf_counter()
    index = VectorStoreIndex.from_documents([Document(text=p.abstract, metadata={"paper_id": p.paper_id}) for p in papers], embed_model=embed)
    build_s = time.perf_counter() - started
    retriever = index.as_retriever(similarity_top_k=10)
    questions = dev_questions()

    def theirs(question: str) -> list[str]:
        return [n.node.metadata["paper_id"] for n in retriever.retrieve(question)]

    ours_assistant = Assistant(settings.with_overrides(llm_provider="extractive"))

    def ours(question: str) -> list[str]:
        return [p.paper_id for p in ours_assistant.search(question, k=10).papers]

    texts = [q["question"] for q in questions]
    theirs(texts[0])
    ours(texts[0])
    their_ms = percentiles([timed(lambda q=q: theirs(q)) * 1000 for _ in range(3) for q in texts])["p50"]
    our_ms = percentiles([timed(lambda q=q: ours(q)) * 1000 for _ in range(3) for q in texts])["p50"]
    their_quality = quality(theirs, papers, questions)
    our_quality = quality(ours, ours_assistant.papers(), questions)
    report("baseline llama-index build (in memory, no Chroma)", build_s, "s")
    report("baseline retrieval p50", their_ms, "ms")
    report("our hybrid retrieval p50 (latency ratio ours/baseline)", our_ms, "ms")
    print(f"{'':48} ratio {our_ms / their_ms:.2f}")
    for name in their_quality:
        report(f"baseline {name}", their_quality[name], "")
        report(f"ours {name}", our_quality[name], "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--full", type=Path, default=FULL)
    args = parser.parse_args()
    texts = [q["question"] for q in dev_questions()]

    stats, shipped = build_in_subprocess(SHIPPED)
    report("build, shipped corpus: abstracts/s", stats["papers"] / stats["seconds"], "abstracts/s")
    report("build, shipped corpus: peak RSS", stats["peak_rss_mb"], "MB")
    latency = query_latency(shipped, texts)
    report(f"retrieval p50 at {stats['chunks']} chunks", latency["retrieval"]["p50"], "ms")
    report(f"retrieval p95 at {stats['chunks']} chunks", latency["retrieval"]["p95"], "ms")
    baseline(shipped)

    if args.full.exists():
        full_stats, full = build_in_subprocess(args.full, "full")
        report(f"build, full conference ({full_stats['papers']} papers), wall", full_stats["seconds"], "s")
        report("build, full conference: abstracts/s", full_stats["papers"] / full_stats["seconds"], "abstracts/s")
        report("build, full conference: peak RSS", full_stats["peak_rss_mb"], "MB")
        full_latency = query_latency(full, texts)
        report(f"retrieval p50 at {full_stats['chunks']} chunks (full conference)", full_latency["retrieval"]["p50"], "ms")

    base_p50 = latency["retrieval"]["p50"]
    for size in args.sizes:
        corpus = synthetic_corpus(size, Path(shipped.index_dir).parent / "synthetic")
        size_stats, settings = build_in_subprocess(corpus, f"syn{size}")
        report(f"build, {size} synthetic abstracts: abstracts/s", size_stats["papers"] / size_stats["seconds"], "abstracts/s")
        report(f"build, {size} synthetic abstracts: peak RSS", size_stats["peak_rss_mb"], "MB")
        grown = query_latency(settings, texts, repeat=1)
        report(f"retrieval p50 at {size_stats['chunks']} chunks", grown["retrieval"]["p50"], "ms")
        report(f"retrieval p95 at {size_stats['chunks']} chunks", grown["retrieval"]["p95"], "ms")
        print(f"{'':48} growth vs {stats['chunks']} chunks: x{grown['retrieval']['p50'] / base_p50:.1f} latency for x{size_stats['chunks'] / stats['chunks']:.0f} chunks")


if __name__ == "__main__":
    main()
