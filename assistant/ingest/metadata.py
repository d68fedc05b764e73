"""Attach titles, authors and links from a metadata file to the corpus's papers, matched by abstract text.

Matching is deliberately strict, so a paper never shows another paper's
title: copies must agree on every letter and digit once markdown, LaTeX,
case and spacing are ignored; a truncated abstract may match the one
record that it is a prefix of; failing both, the first 200 letters and
digits may decide, again only when exactly one record shares them. Any
paper two records could claim is reported as ambiguous and left alone.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assistant.ingest.corpus import is_truncated, paper_id, read_records, text_key
from assistant.ingest.papers import Paper
from assistant.text.labels import make_label

MIN_PREFIX = 100  # key characters a truncated abstract must have to match by prefix
LOOSE_PREFIX = 200  # key characters that must agree for the loosest match


@dataclass
class MetadataReport:
    """How the metadata file matched the corpus."""

    records: int
    matched: dict[str, int] = field(default_factory=dict)  # match kind -> papers
    unmatched: list[str] = field(default_factory=list)  # labels of corpus papers without metadata
    ambiguous: list[str] = field(default_factory=list)

    @property
    def matched_total(self) -> int:
        return sum(self.matched.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.matched.items())) or "none"
        return (
            f"Metadata: {self.matched_total} papers matched ({kinds}), {len(self.unmatched)} unmatched, "
            f"{len(self.ambiguous)} ambiguous, from {self.records} records."
        )


def _match(paper: Paper, keys: dict[str, list[int]], by_prefix: dict[str, list[int]], record_keys: list[str]) -> tuple[str, list[int]]:
    key = text_key(paper.abstract)
    if key in keys:
        return "exact", keys[key]
    if is_truncated(paper.abstract) and len(key) >= MIN_PREFIX:
        found = [i for i in by_prefix.get(key[:LOOSE_PREFIX], []) if record_keys[i].startswith(key)] if len(key) >= LOOSE_PREFIX else [
            i for i, k in enumerate(record_keys) if k.startswith(key)
        ]
        if found:
            return "prefix", found
    if len(key) >= LOOSE_PREFIX:
        return "prefix200", by_prefix.get(key[:LOOSE_PREFIX], [])
    return "none", []


def read_facts(path: Path) -> dict[str, dict[str, Any]] | None:
    """A facts file's records by `paper_id`, or None if `path` is not one.

    A facts file (like the shipped `index/papers.jsonl`) is JSONL whose records carry `paper_id` (the
    corpus's hash of the abstract) and the metadata fields, but no abstract: titles and links can ship
    without the abstracts they describe.
    """
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return None
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        records = [json.loads(line) for line in lines]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not records or not all(isinstance(r, dict) and isinstance(r.get("paper_id"), str) and "abstract" not in r for r in records):
        return None
    return {r["paper_id"]: r for r in records}


def attach_metadata(papers: list[Paper], path: Path | str) -> tuple[list[Paper], MetadataReport]:
    """Papers with metadata attached where it matches; a full abstract replaces a truncated one.

    `path` is a corpus-format file with abstracts (matched by text), or a facts file (matched by `paper_id`).
    """
    facts = read_facts(Path(path))
    if facts is not None:
        report = MetadataReport(records=len(facts))
        result = []
        for paper in papers:
            if paper.paper_id in facts:
                report.matched["id"] = report.matched.get("id", 0) + 1
                result.append(_merge(paper, facts[paper.paper_id]))
            else:
                report.unmatched.append(paper.label)
                result.append(paper)
        return result, report
    records = read_records(Path(path))
    record_keys = [text_key(r["abstract"]) for r in records]
    keys: dict[str, list[int]] = defaultdict(list)
    by_prefix: dict[str, list[int]] = defaultdict(list)
    for index, key in enumerate(record_keys):
        keys[key].append(index)
        by_prefix[key[:LOOSE_PREFIX]].append(index)
    report = MetadataReport(records=len(records))
    result = []
    for paper in papers:
        kind, found = _match(paper, keys, by_prefix, record_keys)
        distinct = {record_keys[i] for i in found}
        if len(distinct) > 1:
            report.ambiguous.append(paper.label)
            result.append(paper)
            continue
        if not found:
            report.unmatched.append(paper.label)
            result.append(paper)
            continue
        report.matched[kind] = report.matched.get(kind, 0) + 1
        result.append(_merge(paper, records[found[0]]))
    unique = list({paper.paper_id: paper for paper in reversed(result)}.values())[::-1]  # first copy wins
    return unique, report


def _merge(paper: Paper, record: dict[str, Any]) -> Paper:
    abstract = paper.abstract
    full = record.get("abstract") or ""
    if paper.truncated and not is_truncated(full) and len(full) > len(abstract):
        abstract = full
    title = record.get("title") or paper.title
    return replace(
        paper,
        paper_id=paper_id(abstract),
        abstract=abstract,
        truncated=is_truncated(abstract),
        title=title,
        label=make_label(abstract, title),
        authors=record.get("authors") or paper.authors,
        url=record.get("url") or paper.url,
        year=record.get("year") or paper.year,
        status=record.get("status") or paper.status,
        links={**(paper.links or {}), **(record.get("links") or {})} or None,
    )
