"""Write index/papers.jsonl: title, authors, status and links for each paper of the shipped sample corpus.

The facts come from ICML 2024's public metadata (`../shared/data/icml2024_matched.jsonl`, which names
the corpus file and paragraph of each paper); each is keyed by the corpus's own `paper_id` (a hash of
the abstract), so the file holds no abstract text. The indexer attaches it whenever the shipped corpus is
indexed without another metadata file. Run once, when the sample corpus changes:

    python scripts/sample_facts.py [--matched PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from assistant.ingest.corpus import clean_markup, paper_id, read_corpus
from assistant.settings import PROJECT_ROOT, SAMPLE_CORPUS, SAMPLE_FACTS

MATCHED = PROJECT_ROOT.parent / "shared" / "data" / "icml2024_matched.jsonl"


def paragraphs(path: Path) -> list[str]:
    """The blank-line-separated, non-empty paragraphs of a corpus file, as the matched file counts them."""
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matched", type=Path, default=MATCHED)
    args = parser.parse_args()
    indexed = {paper.paper_id for paper in read_corpus(SAMPLE_CORPUS).papers}
    facts: dict[str, dict] = {}
    for line in args.matched.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        text = paragraphs(SAMPLE_CORPUS / record["seed_file"])[record["paragraph_index"]]
        key = paper_id(clean_markup(text))
        if key not in indexed:
            continue  # a truncated copy the corpus reader drops in favour of the full text
        links = {name: record[name] for name in ("openreview", "pmlr", "pdf") if record.get(name)}
        facts[key] = {"paper_id": key, "title": record["title"], "authors": record["authors"], "status": record.get("status"), "url": record.get("url"), "links": links}
    SAMPLE_FACTS.write_text("".join(json.dumps(fact, ensure_ascii=False) + "\n" for fact in facts.values()), encoding="utf-8")
    print(f"{len(facts)} of {len(indexed)} papers → {SAMPLE_FACTS}")


if __name__ == "__main__":
    main()
