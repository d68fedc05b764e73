"""Lists by name over the whole conference: "Which papers use X?" against a plain word search of the 2,634 abstracts;
and comparisons of papers described in words (`eval/compare_conference.jsonl`): is every side cited?

For each named benchmark, dataset or model: how many papers the word search finds, how many the answer lists, the
papers missed and the papers listed that the search does not find, and the time to answer; or why the question was
not answered as a listing. Builds the conference
into a throwaway store first (minutes: its abstracts are embedded; the reader's vectors are skipped).

Run: python -m benchmarks.bench_lists
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from benchmarks.common import SHARED, report, temp_settings
from tests.test_lists import word_search

COMPARISONS = Path(__file__).resolve().parents[1] / "eval" / "compare_conference.jsonl"
NAMES = ["D4RL", "MuJoCo", "Meta-World", "ImageNet", "CIFAR-10", "GPT-4", "LLaMA", "Atari", "MMLU", "GSM8K", "COCO", "ShapeNet", "Monte Carlo Tree Search"]


def main() -> None:
    logging.disable(logging.WARNING)
    from assistant.engine import Assistant
    from assistant.indexing.indexer import build_index

    conference = SHARED / "data" / "icml2024_all.jsonl"
    settings = temp_settings(llm_provider="extractive", shipped_vectors=True, reranker="none")
    started = time.perf_counter()
    build_index(settings, conference, progress=False, reader_vectors=False)
    print(f"built the conference index in {time.perf_counter() - started:.0f} s")
    assistant = Assistant(settings)
    papers = assistant.papers()
    missed_total = extra_total = 0
    for name in NAMES:
        expected = word_search(papers, name)
        started = time.perf_counter()
        answer = assistant.ask(f"Which papers use {name}?")
        seconds = time.perf_counter() - started
        if not answer.text.startswith(f"{len(answer.citations)} papers in the index mention"):
            why = "one paper names it: answered as that paper" if len(expected) < 2 else "the question's word is not read as a name"
            print(f"{name:<12} word search {len(expected):>4}   not a listing ({why}; {len(answer.citations)} cited)")
            continue
        listed = {paper.paper_id for paper in answer.citations}
        missed, extra = len(expected - listed), len(listed - expected)
        missed_total, extra_total = missed_total + missed, extra_total + extra
        print(f"{name:<12} word search {len(expected):>4}   listed {len(listed):>4}   missed {missed:>3}   not in search {extra:>3}   {seconds * 1000:6.0f} ms")
    report("papers the word search finds that a list missed", missed_total, "", target=0)
    report("papers listed that the word search does not find", extra_total, "", target=0)
    every = 0
    questions = [json.loads(line) for line in COMPARISONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for question in questions:
        cited = [paper.title for paper in assistant.ask(question["question"]).citations]
        missing = [title for title in question["titles"] if title not in cited]
        every += not missing
        print(f"{question['id']}: {len(question['titles']) - len(missing)} of {len(question['titles'])} sides cited" + (f"; missed {missing}" if missing else ""))
    report("comparisons citing every side", every / len(questions), "", target=0.9, lower_is_better=False)


if __name__ == "__main__":
    main()
