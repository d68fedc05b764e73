"""Papers asked about by a capitalised term of their own title ("what did they find with Tandem Transformers?").

People remember a paper by the term its title coins and write it as the title does. For every paper of an index
whose title (after its colon) holds a run of two to four capitalised words, one question in one of three shapes
asks about that run; the score is how often the paper comes first. A run that is a field's name ("Neural
Networks", "Conformal Prediction") is counted too: many papers use it, so the paper need not come first, and
this benchmark shows how far such runs pull.

Run: python -m benchmarks.bench_titles [--collection icml2024-full] [--papers 120]
(the conference collection: `assistant index --corpus ../shared/data/icml2024_all.jsonl --collection icml2024-full`)
"""

from __future__ import annotations

import argparse
import logging
import random
import re

from benchmarks.common import report

SHAPES = ["How well does {} work compared to baselines?", "what did they find with {}?", "Can you explain the main idea of {}?"]
_RUN = re.compile(r"(?<![\w-])[A-Z][a-z]+(?:[ -][A-Z][a-z]+){1,3}(?![\w-])")
_OPENERS = {"A", "An", "The", "On", "Towards", "Learning", "When", "How", "Is", "Do", "Does", "Why", "What"}


def title_term(title: str) -> str | None:
    """The first run of two to four capitalised words after the title's colon that does not open with a function word."""
    runs = [run for run in _RUN.findall(title.split(":", 1)[-1]) if run.split()[0] not in _OPENERS]
    return runs[0] if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default=None, help="an index built before (default: the shipped sample)")
    parser.add_argument("--papers", type=int, default=0, help="ask about this many papers, chosen at random (default: all)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from assistant.engine import Assistant
    from assistant.settings import Settings

    assistant = Assistant(Settings(llm_provider="extractive", **({"collection": args.collection} if args.collection else {})))
    papers = [paper for paper in assistant.papers() if title_term(paper.title or "")]
    random.Random(7).shuffle(papers)
    papers = papers[: args.papers] if args.papers else papers
    first = 0
    for n, paper in enumerate(papers):
        found = assistant.search(SHAPES[n % len(SHAPES)].format(title_term(paper.title or "")))
        first += bool(found.ranking) and found.ranking[0] == paper.paper_id
    print(f"{len(papers)} papers of {assistant.settings.collection}, asked about by a capitalised term of their title")
    report("paper first (R@1)", first / max(1, len(papers)), "share", lower_is_better=False)


if __name__ == "__main__":
    main()
