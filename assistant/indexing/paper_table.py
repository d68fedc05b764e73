"""A build's papers, read from its saved table when asked for instead of held in every app process.

At 100,000 papers the table as `Paper` objects took ~170 MB of each app's
memory (the abstracts alone ~100 MB) for the ten or so papers a question
shows. Here an app keeps each paper's place in `papers.jsonl` (~10 MB at
100k) and the last few thousand papers it read; a scan over all of them
(a new filter, an evaluation's list of papers) reads the file in order.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from assistant.ingest.chunking import paper_from_metadata
from assistant.ingest.papers import Paper
from assistant.text.naming import (
    capitalised_terms,
    nicknamed,
    own_name,
    quoted_pieces,
    short_names,
    title_head,
    title_text,
)

KEPT = 4_096  # papers read back and kept, as many as the sentence cache keeps abstracts
TITLED_MOST = 5  # a quoted piece found in more titles than this ("deep learning") names no paper
_BOLD = re.compile(r"\*\*(.+?)\*\*")


class PaperTable(Mapping[str, Paper]):
    """`paper_id -> Paper` over one build's `papers.jsonl` (one JSON line per paper, written once); thread-safe."""

    def __init__(self, path: Path, kept: int = KEPT) -> None:
        self.path = path
        self._rows: dict[str, int] = {}  # paper id -> its line's number
        offsets, hashes, titles, heads, self._ids = [0], [], [], set(), []
        with open(path, "rb") as lines:
            for line in lines:
                meta = json.loads(line)
                self._rows.setdefault(meta["paper_id"], len(offsets) - 1)
                hashes.append(hash(meta.get("abstract", "")))
                titles.append(title_text(meta.get("title")))
                heads.add(title_head(meta.get("title")))
                self._ids.append(meta["paper_id"])
                offsets.append(offsets[-1] + len(line))
        # every title's folded words, one line each (~9 MB at 100k): a quoted piece is looked for in them at C speed
        self._titles = "\n".join(titles)
        self._heads = frozenset(heads)  # what titles lead with before a colon: most of a question's words lead none
        self._title_starts = np.cumsum([0] + [len(t) + 1 for t in titles[:-1]]) if titles else np.zeros(0, dtype=np.int64)
        self._offsets = np.asarray(offsets, dtype=np.int64)  # line i spans offsets[i]:offsets[i + 1]
        keys = np.asarray(hashes, dtype=np.int64)
        by_hash = np.argsort(keys, kind="stable")
        self._hashes, self._hash_rows = keys[by_hash], by_hash
        self._file = open(path, "rb")
        self._reading = threading.Lock()
        weakref.finalize(self, self._file.close)
        self._paper = lru_cache(maxsize=kept)(self._read)

    def _meta(self, row: int) -> dict[str, Any]:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        with self._reading:  # one file position for every thread (os.pread would need none, but Windows lacks it)
            self._file.seek(start)
            line = self._file.read(end - start)
        return json.loads(line)

    def _read(self, row: int) -> Paper:
        return paper_from_metadata(self._meta(row))

    def __getitem__(self, paper_id: str) -> Paper:
        return self._paper(self._rows[paper_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._rows

    def scan(self) -> Iterator[Paper]:
        """Every paper, in the table's order, read from the file in one pass (not kept)."""
        with open(self.path, "rb") as lines:
            for row, line in enumerate(lines):
                meta = json.loads(line)
                if self._rows.get(meta["paper_id"]) == row:
                    yield paper_from_metadata(meta)

    def titled(self, question: str, most: int = TITLED_MOST) -> list[str]:
        """Papers whose title holds a piece `question` quotes ("What does "Don't be so Negative!" propose?"), or the one
        paper whose title leads with a short name the question uses ("D-Flow versus …" → "D-Flow: Differentiating
        through Flows …"): retrieval reads abstracts, which need not use either. A piece in more than `most` titles
        names none."""
        found: list[str] = []
        for piece in quoted_pieces(question):
            rows = self._title_rows(piece, most + 1)
            if len(rows) <= most:
                found.extend(self._ids[row] for row in rows)
        for name in short_names(question):
            if name not in self._heads:  # no title leads with it: no scan of every title
                continue
            rows = self._title_rows(name, most + 1)
            led = [row for row in rows if title_head(self._paper(row).title) == name] if len(rows) <= most else []
            if len(led) == 1:
                found.append(self._ids[led[0]])
        return list(dict.fromkeys(found))

    def shown(self, answer: str) -> list[str]:
        """The papers whose whole title an answer writes in bold ("**Title**: …", as answers here and most chat models'
        markdown head each paper), in the order it writes them."""
        found: list[str] = []
        for piece in map(title_text, _BOLD.findall(answer)):
            rows = self._title_rows(piece.strip(), 2)
            if len(rows) == 1 and title_text(self._paper(rows[0]).title) == piece:
                found.append(self._ids[rows[0]])
        return list(dict.fromkeys(found))

    def coined(self, question: str, coined: Callable[[str], bool]) -> list[str]:
        """The one paper whose title holds a capitalised term the question writes ("How did Template Programs do …")
        or what it calls a paper ("the super mario paper"), for each such term that is `coined` (few abstracts use
        it: a paper's own term, not a field's name such as "Direct Preference Optimization", which one title holding
        it whole does not make that paper's)."""
        found = []
        for term in dict.fromkeys([*capitalised_terms(question), *nicknamed(question)]):
            rows = self._title_rows(term, 2)
            if len(rows) == 1 and coined(term):
                found.append(self._ids[rows[0]])
        return found

    def owns(self, name: str, paper_id: str) -> bool:
        """Whether the paper uses `name` as a name of its own (`naming.own_name`), not a term it mentions in passing."""
        paper = self[paper_id]
        return own_name(name, paper.title, paper.abstract)

    def with_title_word(self, word: str, most: int | None = None) -> list[str]:
        """Papers whose title uses `word` as a word, in any case or accent ("Charms", "Föllmer"), in the table's order:
        found in the folded titles, not by reading every paper. Empty when more than `most` titles use it."""
        rows = self._title_rows(title_text(word).strip(), most + 1 if most is not None else None)
        return [] if most is not None and len(rows) > most else list(dict.fromkeys(self._ids[row] for row in rows))

    def _title_rows(self, piece: str, limit: int | None = None) -> list[int]:
        """The rows whose folded title holds the folded words `piece`, at most `limit` of them."""
        needle, rows = f" {piece} ", []
        at = self._titles.find(needle) if piece else -1
        while at >= 0 and (limit is None or len(rows) < limit):
            rows.append(int(np.searchsorted(self._title_starts, at, side="right")) - 1)
            at = self._titles.find(needle, at + 1)
        return rows

    def starts_of(self, abstract: str) -> str | None:
        """Where the sentences of `abstract` start, as the build saved them (`sentences.sentence_starts`), if it
        is one of these papers' abstracts."""
        key = hash(abstract)
        at = int(np.searchsorted(self._hashes, key))
        while at < len(self._hashes) and self._hashes[at] == key:
            meta = self._meta(int(self._hash_rows[at]))
            if meta.get("abstract") == abstract:
                return meta.get("abstract_starts") or None
            at += 1
        return None
