"""Scale numbers: what an index of 440, 2,634, 10k and 100k abstracts costs to build and to serve.

For each size, a corpus: the shipped 440 abstracts (which the question files are
about) plus distractors, abstract-like paragraphs of 7 sentences drawn from the
rest of the ICML 2024 conference (never a sentence of a shipped abstract). The
build and the app each run in their own process, so their memory is theirs:

- build: seconds, abstracts/s, peak RSS, size on disk (store + search files);
- app: start (process start to the first answered search), retrieval p50/p95
  (warm), RSS after the questions, and quality on the development and hard
  question files (Recall@5 single+keyword, Recall@10 multi, hard paraphrase
  Recall@5) — the same questions at every size, so quality under distractors;
- filtered searches (a title word most labels share, a rarer one, the orals): p50, the share of papers
  admitted, and any paper returned that the filter does not admit;
- the dense index's fidelity: how many of exact search's 10 nearest chunks
  Chroma's HNSW returns (quality lost to approximation, whatever the corpus);
- the plain llama-index script a user would otherwise write
  (`VectorStoreIndex.from_documents(...).as_retriever()`, same embedding model,
  in memory) at the sizes in `--baseline-sizes`.

Ratios are to the targets below and to a plain llama-index build of the same corpus.

Run: python -m benchmarks.bench_scale [--sizes 10000 100000] [--embed-model minilm|wordllama]
     python -m benchmarks.bench_scale --random-vectors 100000 --embed-model minilm   (memory and speed, no quality)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.common import SHARED, report, temp_settings

SHIPPED = Path(__file__).resolve().parent.parent / "index" / "corpus"
DEV = Path(__file__).resolve().parent.parent / "eval" / "dev.jsonl"
HARD = Path(__file__).resolve().parent.parent / "eval" / "hard.jsonl"
FULL = SHARED / "data" / "icml2024_all.jsonl"
# Filters of three sizes at every index size: many papers pass (a word most labels share), some, few (the orals).
FILTERS = {"title 'learning'": {"title": "learning"}, "title 'diffusion'": {"title": "diffusion"}, "status Oral": {"status": ["Oral"]}}
TARGETS = {"retrieval p50 ms": 50.0, "retrieval p95 ms": 100.0, "build peak RSS MB": 1024.0, "app RSS MB": 1024.0, "app start s": 5.0}

BUILD = """
import json, sys, time
started = time.perf_counter()
from assistant.indexing.indexer import build_index
from assistant.settings import SAMPLE_FACTS, Settings
from benchmarks.common import peak_rss_mb
settings = Settings(**json.loads(sys.argv[1]))
# the shipped papers' titles, authors and status, as the default index has them (filters use them)
result = build_index(settings, sys.argv[2], rebuild=sys.argv[3:] == ["--rebuild"], progress=False, metadata_path=SAMPLE_FACTS)
print(json.dumps({"seconds": time.perf_counter() - started, "papers": result.manifest.papers, "chunks": result.manifest.chunks,
                  "peak_rss_mb": peak_rss_mb()}))
"""

SERVE = """
import json, resource, sys, time
started = time.perf_counter()
from assistant.engine import Assistant
from assistant.retrieval.filters import Filters
from assistant.settings import Settings
from benchmarks.bench_scale import FILTERS, quality
from benchmarks.common import percentiles, rss_mb
settings = Settings(**json.loads(sys.argv[1]))
questions = [json.loads(line) for path in sys.argv[2:] for line in open(path) if line.strip()]
assistant = Assistant(settings)
assistant.search(questions[0]["question"])
start_s = time.perf_counter() - started
latency = []
for _ in range(3):
    for q in questions:
        t = time.perf_counter()
        assistant.search(q["question"], q.get("history") or [])
        latency.append((time.perf_counter() - t) * 1000)
found = {q["id"]: assistant.search(q["question"], q.get("history") or [], k=10).ranking for q in questions}
filtered = {}
for name, spec in FILTERS.items():
    admitted = assistant.index.current().admitted(Filters(**spec))  # what the search itself uses: no list of every paper
    times, outside = [], 0
    for q in questions[:40]:
        t = time.perf_counter()
        got = assistant.search(q["question"], filters=spec, k=10)
        times.append((time.perf_counter() - t) * 1000)
        outside += sum(paper.paper_id not in admitted for paper in got.papers)
    filtered[name] = {"share": len(admitted) / len(assistant.index.current().papers), "latency": percentiles(times), "outside": outside}
serving_rss_mb = rss_mb()  # before the quality check lists every paper, which a serving app never does
print(json.dumps({"start_s": start_s, "latency": percentiles(latency), "rss_mb": serving_rss_mb, "filtered": filtered,
                  "quality": quality(lambda q: found[q["id"]], assistant.papers(), questions)}))
"""


ANN = """
import json, sys
import numpy as np
from assistant.indexing import store
from assistant.engine import Assistant
from assistant.settings import Settings
settings = Settings(**json.loads(sys.argv[1]))
assistant = Assistant(settings)
build = assistant.index.current()
ids, rows = [], []
for start in range(0, build.manifest.chunks, 5000):
    got = build.collection.get(include=["embeddings"], limit=5000, offset=start)
    ids += got["ids"]
    rows.append(np.asarray(got["embeddings"], dtype=np.float32))
matrix = np.vstack(rows)
questions = [json.loads(line)["question"] for path in sys.argv[2:] for line in open(path) if line.strip()]
recall = []
for question in questions:
    vector = build.retriever.encode(question).vector
    exact = {ids[i] for i in np.argsort(-(matrix @ vector))[:10]}
    recall.append(len(exact & {chunk for chunk, _ in store.nearest(build.collection, vector, 10)}) / 10)
print(json.dumps({"ann_recall_at_10": float(np.mean(recall)), "ann_recall_min": float(np.min(recall))}))
"""


def run_json(snippet: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", snippet, *args], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def corpus_of(size: int, folder: Path) -> Path:
    """The shipped abstracts plus `size - 440` distractors from the rest of the conference (fixed seed).

    A distractor is one other conference abstract's own sentences, 4 or more of them in a new order: one
    topic each, as real abstracts have (never a sentence of a shipped abstract). Mixing sentences of 7
    papers instead made every distractor sit near the centre of the vector space, where HNSW lost the
    real abstracts (dense Recall@5 0.65 against 0.92 for exact search at 20k) — an artefact, not a corpus.
    """
    from assistant.ingest.corpus import read_corpus
    from assistant.text.sentences import split_sentences

    folder.mkdir(parents=True, exist_ok=True)
    for path in SHIPPED.glob("*.txt"):
        shutil.copy(path, folder / path.name)
    shipped = read_corpus(SHIPPED).papers
    extra = size - len(shipped)
    if extra <= 0:
        return folder
    taken = {s for p in shipped for s in split_sentences(p.abstract)}
    records = [json.loads(line) for line in FULL.read_text(encoding="utf-8").splitlines() if line.strip()]
    sources = [kept for r in records if len(kept := [s for s in split_sentences(r.get("abstract") or "") if s not in taken]) >= 5]
    rng = random.Random(42)
    with open(folder / "zz_distractors.txt", "w", encoding="utf-8") as handle:
        for _ in range(extra):
            source = rng.choice(sources)
            handle.write(" ".join(rng.sample(source, rng.randint(4, len(source)))) + "\n\n")
    return folder


def quality(search, papers, questions) -> dict[str, float]:
    """Recall@5 (single+keyword), MRR (single+keyword), Recall@10 (multi) and hard-paraphrase Recall@5, for `search(q) -> paper ids`."""
    from assistant.evaluation.harness import GoldMatcher

    matcher = GoldMatcher(papers, [SHIPPED])
    hits, reciprocal, multi, paraphrase = [], [], [], []
    for q in questions:
        gold = {pid for g in q["gold"] for pid in matcher.match(g)}
        if not gold:
            continue
        found = search(q)
        if q.get("kind") == "paraphrase":
            paraphrase.append(bool(gold & set(found[:5])))
        elif q["type"] in ("single", "keyword"):
            hits.append(bool(gold & set(found[:5])))
            reciprocal.append(next((1 / (i + 1) for i, pid in enumerate(found) if pid in gold), 0.0))
        elif q["type"] == "multi":
            multi.append(len(gold & set(found[:10])) / len(gold))
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return {"dev Recall@5 single+keyword": mean(hits), "dev MRR single+keyword": mean(reciprocal), "dev Recall@10 multi": mean(multi),
            "hard paraphrase Recall@5": mean(paraphrase)}


def disk_mb(*folders: Path) -> float:
    return sum(f.stat().st_size for folder in folders for f in folder.rglob("*") if f.is_file()) / 2**20


def measure(size: int, embed_model: str, reranker: str) -> dict:
    settings = temp_settings()
    corpus = corpus_of(size, settings.index_dir.parent / "corpus")
    values = {"index_dir": str(settings.index_dir), "cache_dir": str(settings.cache_dir), "embed_model": embed_model, "reranker": reranker,
              "llm_provider": "extractive", "shipped_vectors": settings.shipped_vectors}
    build = run_json(BUILD, json.dumps(values), str(corpus))
    build["disk_mb"] = disk_mb(settings.index_dir, settings.cache_dir / "builds")
    serve = run_json(SERVE, json.dumps(values), str(DEV), str(HARD))
    serve.update(run_json(ANN, json.dumps(values), str(DEV), str(HARD)))
    shutil.rmtree(settings.index_dir.parent, ignore_errors=True)
    return {"size": size, "build": build, "serve": serve, "corpus": str(corpus)}


def baseline(size: int, embed_model: str) -> dict:
    """The hand-rolled llama-index path at `size` abstracts: build seconds, retrieval p50, quality."""
    import time

    from llama_index.core import Document, VectorStoreIndex

    from assistant.ingest.corpus import read_corpus
    from assistant.models.embeddings import load_embedding
    from benchmarks.common import percentiles

    folder = corpus_of(size, Path(temp_settings().index_dir.parent) / "corpus")
    papers = read_corpus(folder).papers
    started = time.perf_counter()
    index = VectorStoreIndex.from_documents([Document(text=p.abstract, metadata={"paper_id": p.paper_id}) for p in papers],
                                            embed_model=load_embedding(embed_model, temp_settings().model_dir))
    build_s = time.perf_counter() - started
    retriever = index.as_retriever(similarity_top_k=10)
    questions = [json.loads(line) for path in (DEV, HARD) for line in path.read_text().splitlines() if line.strip()]
    latency, found = [], {}
    for q in questions:
        t = time.perf_counter()
        found[q["id"]] = [n.node.metadata["paper_id"] for n in retriever.retrieve(q["question"])]
        latency.append((time.perf_counter() - t) * 1000)
    return {"build_s": build_s, "latency": percentiles(latency), "quality": quality(lambda q: found[q["id"]], papers, questions)}


def random_vectors(size: int, embed_model: str) -> dict:
    """A build of `size` abstracts for a model too slow to embed them all here, measured for memory and speed.

    Every chunk but the last 1,000 gets a random unit vector of the model's dimension in the embedding cache,
    so the model still loads and embeds real batches (its buffers count), Chroma holds vectors of its size and
    the app embeds each question with it; search quality over random vectors would mean nothing, so the app's
    start, RSS and latency (unfiltered and filtered) are measured, and no quality.
    """
    import numpy as np

    from assistant.ingest.chunking import chunk_papers
    from assistant.ingest.corpus import read_corpus
    from assistant.models.embeddings import cache_file
    from assistant.models.encoders import MODELS
    from assistant.models.vector_cache import VectorFile

    settings = temp_settings()
    corpus = corpus_of(size, settings.index_dir.parent / "corpus")
    papers = read_corpus(corpus).papers
    texts = [node.get_content(metadata_mode="embed") for start in range(0, len(papers), 2000)
             for node in chunk_papers(papers[start : start + 2000], settings.chunk_size, settings.chunk_overlap)]
    cache = VectorFile(cache_file(settings.cache_dir, embed_model))
    rng = np.random.default_rng(0)
    dimension = int(MODELS[embed_model]["dimension"])  # type: ignore[call-overload]
    for text in texts[:-1000]:
        vector = rng.normal(size=dimension).astype(np.float32)
        cache.put(text, {"v": vector / np.linalg.norm(vector)})
    cache.save()
    values = {"index_dir": str(settings.index_dir), "cache_dir": str(settings.cache_dir), "embed_model": embed_model, "reranker": "none", "shipped_vectors": settings.shipped_vectors,
              "llm_provider": "extractive"}
    build = run_json(BUILD, json.dumps(values), str(corpus))
    serve = run_json(SERVE, json.dumps(values), str(DEV), str(HARD))
    shutil.rmtree(settings.index_dir.parent, ignore_errors=True)
    return {"build": build, "serve": serve}


def report_serving(serve: dict) -> None:
    """The app's lines of a row: start, RSS, retrieval p50/p95 and the filtered searches."""
    report("app: start to first answer", serve["start_s"], "s", target=TARGETS["app start s"])
    report("app: RSS after the questions", serve["rss_mb"], "MB", target=TARGETS["app RSS MB"])
    report("retrieval p50", serve["latency"]["p50"], "ms", target=TARGETS["retrieval p50 ms"])
    report("retrieval p95", serve["latency"]["p95"], "ms", target=TARGETS["retrieval p95 ms"])
    for name, got in serve["filtered"].items():
        report(f"filtered ({name}: {got['share']:.1%} pass) p50", got["latency"]["p50"], "ms", target=TARGETS["retrieval p50 ms"])
        report(f"filtered ({name}) p95", got["latency"]["p95"], "ms", target=TARGETS["retrieval p95 ms"])
        report(f"filtered ({name}) papers outside the filter", got["outside"], "", target=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000], help="Index sizes besides 440 and 2,634.")
    parser.add_argument("--embed-model", default="minilm", choices=["minilm", "wordllama"])
    parser.add_argument("--reranker", default="none", choices=["auto", "none", "mpnet"])
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[440, 10_000])
    parser.add_argument("--random-vectors", type=int, default=0, metavar="SIZE",
                        help="Only SIZE abstracts, the vectors of all but the last 1,000 chunks random: a slow model's build "
                             "memory and its app's memory and latency, no quality.")
    args = parser.parse_args()
    if args.random_vectors:
        row = random_vectors(args.random_vectors, args.embed_model)
        print(f"--- {args.embed_model}, {row['build']['papers']:,} abstracts, vectors of all but the last 1,000 chunks random (no quality)")
        report("build: peak RSS", row["build"]["peak_rss_mb"], "MB", target=TARGETS["build peak RSS MB"])
        report_serving(row["serve"])
        return
    print(f"embedding model {args.embed_model}, reranker {args.reranker}; corpora: the shipped 440 + distractors from the conference")
    rows = []
    for size in [440, 2634, *args.sizes]:
        row = measure(size, args.embed_model, args.reranker)
        rows.append(row)
        build, serve = row["build"], row["serve"]
        print(f"--- {size:,} abstracts ({build['chunks']:,} chunks)")
        report("build: seconds", build["seconds"], "s")
        report("build: abstracts/s", build["papers"] / build["seconds"], "abstracts/s")
        report("build: peak RSS", build["peak_rss_mb"], "MB", target=TARGETS["build peak RSS MB"])
        report("index on disk (store + search files)", build["disk_mb"], "MB")
        report_serving(serve)
        report("dense search: Recall@10 of exact search (HNSW)", serve["ann_recall_at_10"], "")
        for name, value in serve["quality"].items():
            report(name, value, "")
    for size in args.baseline_sizes:
        theirs = baseline(size, args.embed_model)
        ours = next((r for r in rows if r["size"] == size), None)
        print(f"--- plain llama-index at {size:,} abstracts (in memory, same model)")
        report("baseline build: seconds", theirs["build_s"], "s")
        report("baseline retrieval p50", theirs["latency"]["p50"], "ms")
        if ours:
            print(f"{'':48} ours/baseline retrieval p50: {ours['serve']['latency']['p50'] / theirs['latency']['p50']:.2f}")
        for name, value in theirs["quality"].items():
            report(f"baseline {name}", value, "")
    print(json.dumps([{k: v for k, v in r.items() if k != "corpus"} for r in rows]))


if __name__ == "__main__":
    main()
