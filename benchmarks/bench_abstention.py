"""Abstention beyond the development set: "Is there work on <title>?" for every ICML 2024 paper.

Titles stand for the topic queries users type. With the method name before a
colon removed ("DiracDiffusion: Denoising and …" asks about "Denoising and …"),
a title names its topic without the paper's rare words:
- the 440 papers in the shipped index must be answered, and found: false abstention and Recall@5;
- the other 2,194 conference papers are absent from the index, but a paper on a neighbouring topic often
  is, so their abstention rate is descriptive (higher is right, 1.0 is not expected).
Both for the default gate (lexical, then E5 in the uncertain band) and for the lexical step alone.
Reads ../shared/data (never copied into the project); builds the shipped index if it is missing.

Run: python -m benchmarks.bench_abstention [--limit N]
"""

from __future__ import annotations

import argparse
import json
import random

from assistant.engine import Assistant
from assistant.indexing.indexer import ensure_index
from assistant.ingest.corpus import text_key
from assistant.settings import Settings
from benchmarks.bench_scale import FULL
from benchmarks.common import report


def topic(title: str) -> str:
    """The title without a leading method name ("Name: topic" → "topic")."""
    head, sep, rest = title.partition(": ")
    return rest if sep and len(head.split()) <= 3 and rest else title


def main(limit: int = 300) -> None:
    settings = Settings()
    ensure_index(settings, progress=False)
    assistant = Assistant(settings)
    by_text = {text_key(p.abstract): p.paper_id for p in assistant.papers()}
    truncated = [(text_key(p.abstract), p.paper_id) for p in assistant.papers() if p.truncated]
    inside, outside = [], []
    for line in FULL.open(encoding="utf-8"):
        record = json.loads(line)
        key = text_key(record["abstract"])
        paper_id = by_text.get(key) or next((pid for prefix, pid in truncated if key.startswith(prefix)), None)
        (inside if paper_id else outside).append((f"Is there work on {topic(record['title']).rstrip('.')}?", paper_id))
    rng = random.Random(0)
    inside, outside = rng.sample(inside, min(limit, len(inside))), rng.sample(outside, min(limit, len(outside)))
    print(f"{len(inside)} questions about indexed papers, {len(outside)} about conference papers not in the index")
    for config, opts in (("default gate", {}), ("lexical step only", {"relevance_check": "none"})):
        answers = [assistant.ask(q, llm_provider="extractive", **opts) for q, _ in inside]
        false = sum(a.abstained for a in answers) / len(answers)
        found = sum(pid in [p.paper_id for p in a.sources[:5]] for a, (_, pid) in zip(answers, inside)) / len(answers)
        absent = sum(assistant.ask(q, llm_provider="extractive", **opts).abstained for q, _ in outside) / len(outside)
        report(f"{config}: false abstention, indexed papers' topics", false, "", target=0.05)
        report(f"{config}: Recall@5 of the titled paper", found, "")
        report(f"{config}: abstention, topics of papers not indexed (descriptive)", absent, "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=300, help="questions of each kind (random sample, fixed seed)")
    main(parser.parse_args().limit)
