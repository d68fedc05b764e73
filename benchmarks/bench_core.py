"""Core numbers: index build from scratch (with and without the reader's vectors), unchanged re-index,
warm ask()/retrieval p50 (the reader included), CLI cold start, and what the E5 relevance check (used when the reader is off) adds to a question in the uncertain band.

Run: python -m benchmarks.bench_core
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from assistant.evaluation.harness import load_questions
from benchmarks.bench_scale import HARD
from benchmarks.common import percentiles, report, temp_settings, timed

BUILD_SNIPPET = """
import json, sys, time
started = time.perf_counter()
from assistant.indexing.indexer import build_index
from assistant.settings import Settings
result = build_index(Settings(index_dir=sys.argv[1], cache_dir=sys.argv[2], shipped_vectors=False), rebuild=sys.argv[3] == "1", progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "built": result.built, "papers": result.manifest.papers}))
"""

QUESTIONS = [
    "Is there work on pruning spiking neural networks?",
    "What is PRepBN and what problem does it solve in Transformers?",
    "Which papers tackle imitation learning from imperfect demonstrations?",
    "How can a grid-based NeRF be compressed?",
    "What guarantees does the FESSNC controller provide?",
    "Which paper studies grokking of permutation groups?",
]


def _build(settings, rebuild: bool, reranker: str = "auto") -> dict:
    """A fresh process, so model loading and imports count as a user would see them."""
    out = subprocess.run(
        [sys.executable, "-c", BUILD_SNIPPET, str(settings.index_dir), str(settings.cache_dir), "1" if rebuild else "0"],
        capture_output=True, text=True, check=True, env={**os.environ, "RERANKER": reranker},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    bare = temp_settings(llm_provider="extractive")
    report("index build from scratch without the reader's vectors (RERANKER=none; `assistant serve`'s first start)",
           _build(bare, rebuild=False, reranker="none")["seconds"], "s", target=60)
    settings = temp_settings(llm_provider="extractive")
    first = _build(settings, rebuild=False)
    report(f"index build from scratch ({first['papers']} papers, new process, the reader's vectors included)", first["seconds"], "s", target=60)
    report("re-index, nothing changed (new process)", _build(settings, rebuild=False)["seconds"], "s", target=3)
    report("forced rebuild, embeddings cached (new process)", _build(settings, rebuild=True)["seconds"], "s")

    from assistant.engine import Assistant

    assistant = Assistant(settings)
    assistant.ask(QUESTIONS[0])
    samples = [timed(lambda q=q: assistant.ask(q)) * 1000 for _ in range(10) for q in QUESTIONS]
    stats = percentiles(samples)
    report("ask() warm, extractive, p50", stats["p50"], "ms", target=50)
    report("ask() warm, extractive, p95", stats["p95"], "ms")
    retrieval = [timed(lambda q=q: assistant.search(q)) * 1000 for _ in range(10) for q in QUESTIONS]
    report("retrieval only, warm, p50", percentiles(retrieval)["p50"], "ms")
    # questions in a researcher's own words: the first stage is unsure, so the reader reads (one mpnet encoding)
    paraphrases = [q["question"] for q in load_questions(HARD) if q.get("kind") == "paraphrase"][:12]
    reading = [timed(lambda q=q: assistant.ask(q)) * 1000 for _ in range(3) for q in paraphrases]
    report("ask() warm, extractive, hard paraphrases (the reader reads), p50", percentiles(reading)["p50"], "ms", target=50)

    from assistant.retrieval.relevance import E5Scorer

    abstracts = [p.abstract for p in assistant.papers()[:20]]
    E5Scorer().score(QUESTIONS[0], abstracts[-1])  # loads the model
    scorer = E5Scorer()  # an empty passage cache
    first = [timed(lambda a=a: scorer.score(QUESTIONS[0], a)) * 1000 for a in abstracts]
    again = [timed(lambda a=a: scorer.score(QUESTIONS[0], a)) * 1000 for a in abstracts]
    report("E5 relevance check, abstract seen first, p50", percentiles(first)["p50"], "ms")
    report("E5 relevance check, abstract cached, p50", percentiles(again)["p50"], "ms")

    env = {**os.environ, "INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(settings.cache_dir), "LLM_PROVIDER": "extractive"}
    cli = [os.path.join(os.path.dirname(sys.executable), "assistant"), "ask", QUESTIONS[1]]
    cold = [timed(lambda: subprocess.run(cli, env=env, capture_output=True, check=True)) for _ in range(3)]
    report("`assistant ask` cold start, index built, p50 of 3", percentiles(cold)["p50"], "s", target=2)
    cold = [timed(lambda: subprocess.run([*cli[:2], paraphrases[0]], env=env, capture_output=True, check=True)) for _ in range(3)]
    report("`assistant ask` cold start, a paraphrase (loads the reader), p50 of 3", percentiles(cold)["p50"], "s", target=3)


if __name__ == "__main__":
    main()
