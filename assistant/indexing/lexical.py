"""The lexical side of a build: BM25 over its chunks, the table of rare names, and word rarity, saved once.

BM25 (`bm25s`, Snowball stemming) catches rare terms that a small embedding
model blurs; the names table ("MorseDet", "PRepBN") lets a question that names
a method put that paper first; word rarity (IDF) and which papers use a word
come from BM25's own inverted index. All of it is built while a build is
written and saved beside it, then memory-mapped when the build is opened: an
app serving 100,000 abstracts neither tokenizes them at start nor holds a
copy of their words per process.
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from bm25s.tokenization import Tokenizer, convert_tokenized_to_string_list

from assistant.infra.files import atomic_write
from assistant.text import acronyms
from assistant.text.naming import author_key, cited_authors, listed_authors, proper_words
from assistant.text.words import (
    DESCRIPTIVE_TAIL,
    GENERIC_KINDS,
    GENERIC_NAMES,
    TO_SHORTHAND,
    Stemming,
    compact,
    names_in,
    stems,
)

logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG on import, and each build then printed a debug line

_SPELLED_CHUNKS = 2  # chunks that must spell an acronym out the same way for a build to read one as the other
_LOWER_SHARE = 0.05  # … and at most this share of the chunks using it may write it in lower case (a word, then)
_LOWER_WORD = re.compile(r"\b[a-z][a-z0-9]{1,7}\b")
RARE_NAME_CHUNKS = 5  # a name in more chunks than this says little about which paper is meant
FILTERED_DEPTH_MAX = 10_000  # the deepest unfiltered search a filtered one may use instead (lexical and dense)
# A filter admitting at most this share of the chunks has BM25 scored on theirs alone (`LexicalIndex._best_of`):
# at 100k chunks, 2,000 admitted cost ~0.5 ms and 8,000 ~2 ms, where scoring every chunk costs 3–5 ms.
_SCORED_ALONE_SHARE = 0.1
_BM25_FOLDER = "bm25"
_HYPHENATED = re.compile(r"(?<![\w-])([A-Za-z]{2,})-([A-Za-z]{3,})\b(?!-)")  # "fine-tuning", "pre-training", "multi-modal"
_TABLE = "chunks.json"


def with_joined_words(text: str) -> str:
    """`text` followed by its hyphenated words written as one ("fine-tuning" as "finetuning"), as people often type
    them: a question saying "finetuning" then finds, and counts as covered, the abstracts writing "fine-tuning"."""
    joined = [first + second for first, second in _HYPHENATED.findall(text)]
    return " ".join([text, *joined]) if joined else text


def filtered_depth(n: int, admitted: int, total: int) -> int:
    """How deep an unfiltered search must go to hold ~2n of `admitted` chunks out of `total` (lexical and dense)."""
    return min(total, math.ceil(2 * n * total / admitted))


class LexicalBuilder:
    """Collects a build's chunks batch by batch (tokens, names, owners) and makes the `LexicalIndex`.

    Chunks arrive in build order, so a paper's chunks are neighbours; the texts themselves are not kept.
    """

    def __init__(self) -> None:
        self._stemming = Stemming()
        self._tokenizer = Tokenizer(stopwords="en", stemmer=self._stemming.stemmer)
        self._ids: list[np.ndarray] = []  # per batch, its chunks' token ids end to end (int32: a third of a list's memory)
        self._batch_lengths: list[list[int]] = []
        self.chunk_ids: list[str] = []
        self.chunk_papers: list[str] = []
        self.names: dict[str, list[int]] = {}
        self._spelled: Counter[tuple[str, str]] = Counter()  # (acronym key, long form) -> chunks spelling it out so
        self._lower: Counter[str] = Counter()  # short words -> chunks using them in lower case ("map", "at": words, not acronyms)

    def add(self, chunks: Iterable[tuple[str, str, str, list[str]]]) -> None:
        """Add `(chunk_id, paper_id, text, keys)` chunks; `keys` go into the names table beside the text's names."""
        batch = list(chunks)
        texts = [with_joined_words(text) for _, _, text, _ in batch]
        ids = self._tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
        self._ids.append(np.fromiter((token for doc in ids for token in doc), dtype=np.int32))  # type: ignore[union-attr]
        self._batch_lengths.append([len(doc) for doc in ids])  # type: ignore[union-attr]
        for chunk_id, paper_id, text, keys in batch:
            row = len(self.chunk_ids)
            self.chunk_ids.append(chunk_id)
            self.chunk_papers.append(paper_id)
            for name in dict.fromkeys([*names_in(text), *keys]):
                self.names.setdefault(name, []).append(row)
            self._spelled.update({(acronyms.key(short), long.lower()) for short, long in acronyms.definitions(text)})
            self._lower.update(set(_LOWER_WORD.findall(text)))

    def finish(self) -> LexicalIndex:
        """The BM25 index over everything added."""
        documents: list[np.ndarray] = []
        for ids, lengths in zip(self._ids, self._batch_lengths):
            if lengths:  # an empty batch would split into one empty document
                documents.extend(np.split(ids, np.cumsum(lengths)[:-1]))  # views into each batch's array, no copies
        bm25 = bm25s.BM25()
        bm25.index((documents, self._tokenizer.get_vocab_dict()), show_progress=False)
        self._ids, self._batch_lengths = [], []
        index = LexicalIndex(bm25, self.chunk_ids, self.chunk_papers, self.names, self._stemming)
        index.long_forms = self._long_forms(index)
        return index

    def _long_forms(self, index: LexicalIndex) -> dict[str, str]:
        """Each acronym's long form as most chunks spell it out (two chunks at least: a convention, not one paper's
        coinage), for acronyms the papers write in capitals: "at" and "map" are words too, so a question's "at" is not AT."""
        best: dict[str, tuple[int, str]] = {}
        for (short, long), count in self._spelled.items():
            if short and count >= _SPELLED_CHUNKS and count > best.get(short, (0, ""))[0] and len(acronyms.long_stems(long)) >= 2:
                best[short] = (count, long)
        used = {short: index.chunks_using(short) for short in best}
        return {short: long for short, (_, long) in best.items() if self._lower[short] <= _LOWER_SHARE * used[short]}


class LexicalIndex:
    """BM25, rare names and word rarity over one build's chunks; read-only, so threads share it."""

    def __init__(
        self, bm25: bm25s.BM25, chunk_ids: list[str], chunk_papers: list[str], names: dict[str, list[int]], stemming: Stemming | None = None,
        long_forms: dict[str, str] | None = None,
    ) -> None:
        self.bm25 = bm25
        self.chunk_ids = chunk_ids
        self.chunk_papers = chunk_papers
        self.names = names
        self.long_forms = long_forms or {}  # acronym stem -> its long form as the papers spell it out ("rl" -> "reinforcement learning")
        self._acronym_rows: dict[str, np.ndarray | None] = {}  # acronym stem -> rows using it or its long form (`_users`)
        self._compact_names: frozenset[str] | None = None  # the names table's keys, `compact` (`knows`), made on first use
        self._folded_names: dict[str, list[int]] | None = None  # the names table by lower-case key (`name_rows`), made on first use
        self._folded_keys: list[str] = []  # its keys, sorted (`_versions_elsewhere`)
        self._stemming = stemming or Stemming()
        self.paper_rows: dict[str, list[int]] = {}
        for row, paper_id in enumerate(chunk_papers):
            self.paper_rows.setdefault(paper_id, []).append(row)
        self._indptr = np.asarray(bm25.scores["indptr"])
        self._last_rows: tuple[frozenset[str], np.ndarray] | None = None
        self.unseen_idf = math.log(1 + (len(chunk_ids) + 0.5) / 0.5)
        self.title_of: Callable[[str], str] = lambda paper_id: ""  # a paper's title, where the build knows it (`coverages`)
        self._title_words = functools.lru_cache(maxsize=4096)(self._words_of_title)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def save(self, folder: Path) -> None:
        """Write the BM25 arrays and the chunk table into `folder` (which the caller renames into place)."""
        self.bm25.save(str(folder / _BM25_FOLDER), show_progress=False)
        table = {"chunk_ids": self.chunk_ids, "chunk_papers": self.chunk_papers, "names": self.names, "long_forms": self.long_forms}
        atomic_write(folder / _TABLE, lambda tmp: tmp.write_text(json.dumps(table), encoding="utf-8"))

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        """Open a saved index; BM25's arrays stay on disk, memory-mapped."""
        bm25 = bm25s.BM25.load(str(folder / _BM25_FOLDER), mmap=True, show_progress=False)
        table = json.loads((folder / _TABLE).read_text(encoding="utf-8"))
        return cls(bm25, table["chunk_ids"], table["chunk_papers"], table["names"], long_forms=table.get("long_forms"))

    def spelled_out(self, text: str) -> str:
        """`text` with the long form of each acronym it uses that the papers spell out: "offline RL" also searches
        for "reinforcement learning", which many abstracts say without the acronym."""
        found = [self.long_form(word) for word in dict.fromkeys(stems(text))]
        return " ".join([text, *(long for long in found if long)])

    def long_form(self, word: str) -> str:
        """What the papers spell the acronym `word` (a stem: "rl", "llms") out as, or ""."""
        return self.long_forms.get(word) or (self.long_forms.get(word[:-1], "") if word.endswith("s") else "")

    def tokenize(self, texts: list[str], stopwords: list[str] | str = "en") -> Any:
        with self._stemming.lock:
            return bm25s.tokenize(texts, stopwords=stopwords, stemmer=self._stemming.stemmer, show_progress=False, return_ids=True)

    def rows_of(self, papers: AbstractSet[str]) -> np.ndarray:
        """The rows of the chunks of `papers`, sorted; the last frozen set's are kept (a filtered search asks twice,
        ~5 ms for 8,000 papers at 100,000, and a build hands out the same set while the user's filters stay)."""
        last = self._last_rows
        if last is not None and last[0] is papers:
            return last[1]
        rows = np.sort(np.fromiter((row for paper_id in papers for row in self.paper_rows.get(paper_id, ())), dtype=np.int64))
        if isinstance(papers, frozenset):
            self._last_rows = (papers, rows)
        return rows

    def search(self, tokens: Any, n: int, allowed: AbstractSet[str] | None = None) -> list[int]:
        """Rows of the `n` best BM25 chunks for a tokenized question (of `allowed` papers only, when given).

        With filters, a few admitted chunks are scored alone; more, by a deeper unfiltered search kept to them
        (~2–5 ms at 100k chunks); bm25s's `weight_mask`, which takes ~15 ms there, only when that falls short.
        """
        if not tokens.ids or not tokens.ids[0] or not self.chunk_ids:
            return []
        if allowed is None:
            return self._best(tokens, n)
        rows = self.rows_of(allowed)
        if not len(rows):
            return []
        if len(rows) <= _SCORED_ALONE_SHARE * len(self.chunk_ids):
            return self._best_of(tokens, rows, n)
        depth = filtered_depth(n, len(rows), len(self.chunk_ids))
        if depth <= FILTERED_DEPTH_MAX:
            found = self._best(tokens, depth)
            hits = [row for row in found if self.chunk_papers[row] in allowed]
            if len(hits) >= n or len(found) < depth:  # enough, or every chunk that matches at all was seen
                return hits[:n]
        mask = np.zeros(len(self.chunk_ids), dtype=np.float32)
        mask[rows] = 1.0
        return self._best(tokens, n, mask)

    def _best(self, tokens: Any, n: int, mask: np.ndarray | None = None) -> list[int]:
        docs, scores = self.bm25.retrieve(tokens, k=min(n, len(self.chunk_ids)), show_progress=False, n_threads=1, weight_mask=mask)
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]

    def _best_of(self, tokens: Any, rows: np.ndarray, n: int) -> list[int]:
        """The `n` best of `rows` (sorted) by BM25, each the sum bm25s computes (its stored score of each of the
        question's words in that chunk, in the question's order), read from those words' postings alone."""
        scores = np.zeros(len(rows), dtype=np.float32)
        data = self.bm25.scores["data"]
        for token in self.bm25.get_tokens_ids(convert_tokenized_to_string_list(tokens)[0]):
            start, end = self._span(token)
            if end > start:
                at, hit = _found_in_sorted(rows, np.asarray(self.bm25.scores["indices"][start:end]))
                scores[hit] += np.asarray(data[start:end])[at[hit]]
        best = np.argsort(-scores, kind="stable")[:n]
        return [int(rows[i]) for i in best if scores[i] > 0]

    def exact_names(self, query: str, allowed: AbstractSet[str] | None = None) -> list[int]:
        """Rows of chunks containing a rare name-like token of the query, or by an author it cites; most names first."""
        hits: Counter[int] = Counter()
        for name in [*(n for n in names_in(query) if not _kind_described(n)), *cited_authors(query)]:
            rows = self.name_rows(name)  # not "LLM-based", "CNN-based": a kind of thing, whichever few papers write it so
            if len(rows) <= RARE_NAME_CHUNKS:
                hits.update(row for row in rows if allowed is None or self.chunk_papers[row] in allowed)
        for listed in listed_authors(query):  # "Petrov, Torr and Bibi": the papers all of them wrote, however common each name
            shared = set.intersection(*({self.chunk_papers[row] for row in self.name_rows(key)} for key in listed))
            if len(shared) <= RARE_NAME_CHUNKS:
                hits.update(row for row in self.name_rows(listed[0]) if self.chunk_papers[row] in shared and (allowed is None or self.chunk_papers[row] in allowed))
        return [row for row, _ in hits.most_common()]

    def named_papers(self, query: str, owns: Callable[[str, str], bool]) -> set[str]:
        """Papers the question names: each is the only paper using some name-like token of the query ("TSLANet"),
        and `owns(name, paper_id)` it as a name of its own (not a term it mentions once, "LiDAR")."""
        named: set[str] = set()
        for name in names_in(query):
            papers = {self.chunk_papers[row] for row in self.name_rows(name)}
            if len(papers) == 1 and owns(name, next(iter(papers))) and not self._versions_elsewhere(name, papers):
                named |= papers
        for word in proper_words(query):  # a capitalised plain word, which the names table does not hold: "… did Albatross need?"
            if author_key(word) in self.names:
                continue  # an author's surname ("Hossain, Wang and Lin"): the author search reads it
            papers = set(self.papers_using([stem for stem in self.tokenize([word]).vocab if stem]))
            if len(papers) == 1 and owns(word, next(iter(papers))):
                named |= papers
        return named

    def name_rows(self, name: str) -> list[int]:
        """Rows of the chunks using `name` (or an author key) as written, else in any case: "SafeCLIP" finds the abstract
        writing "SAFECLIP", while "EXO" keeps to the paper writing it so (another writes "ExO")."""
        if name in self.names:
            return self.names[name]
        return self._folded().get(name.lower(), [])

    def _folded(self) -> dict[str, list[int]]:
        """The names table by lower-case key, made on first use."""
        if self._folded_names is None:
            folded: dict[str, list[list[int]]] = {}
            for key, rows in self.names.items():
                folded.setdefault(key.lower(), []).append(rows)
            self._folded_names = {key: sorted(set().union(*lists)) if len(lists) > 1 else lists[0] for key, lists in folded.items()}
            self._folded_keys = sorted(self._folded_names)
        return self._folded_names

    def _versions_elsewhere(self, name: str, papers: AbstractSet[str]) -> bool:
        """Whether other papers write `name` with a version after it ("ImageNet-1K", "CIFAR100"): a family of names, a
        dataset's say, which one paper of a small corpus writing it bare does not own ("… does DivBS train on ImageNet?")."""
        folded, low, own = self._folded(), name.lower(), set(papers)
        at = bisect.bisect_right(self._folded_keys, low)
        while at < len(self._folded_keys) and self._folded_keys[at].startswith(low):
            key = self._folded_keys[at]
            at += 1
            if _VERSION.fullmatch(key[len(low) :]) and {self.chunk_papers[row] for row in folded[key]} - own:
                return True
        return False

    def knows(self, name: str) -> bool:
        """Whether some chunk, title or author of the build uses `name`, however it is spelled ("GPT4" as "GPT-4",
        "Llama-2" as "Llama 2"): a name no paper uses is something the corpus says nothing about."""
        if self._compact_names is None:
            self._compact_names = frozenset(compact(key) for key in self.names)
        head = DESCRIPTIVE_TAIL.sub("", name)  # "GSM8K-based" is about GSM8K
        if compact(head) in self._compact_names or author_key(head) in self.names:
            return True
        words = [word for word in stems(head) if len(word) > 1]
        return bool(words) and all(word in self.bm25.vocab_dict for word in words)

    def uses(self, word: str) -> bool:
        """Whether some chunk uses `word` (a stem), or for an acronym its long form."""
        return self._users(word) is not None

    def papers_using(self, words: list[str]) -> list[str]:
        """Papers with a chunk that uses every one of `words` (stems), in index order: the candidates a text search checks."""
        rows = self.rows_using(words)
        return list(dict.fromkeys(self.chunk_papers[int(row)] for row in rows)) if rows is not None else []

    def chunks_using(self, word: str) -> int:
        """How many chunks use `word` (a stem)."""
        rows = self._postings(word)
        return 0 if rows is None else len(rows)

    def rows_using(self, words: list[str]) -> np.ndarray | None:
        """Rows of the chunks that use every one of `words` (stems), sorted; None if none does."""
        rows: np.ndarray | None = None
        for word in words:
            found = self._postings(word)
            if found is None:
                return None
            rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
        return rows if rows is not None and len(rows) else None

    def _span(self, token: int) -> tuple[int, int]:
        """Where BM25's inverted index (a CSC matrix: one column of chunk rows and scores per word) keeps `token`'s."""
        if token + 1 >= len(self._indptr):
            return 0, 0
        return int(self._indptr[token]), int(self._indptr[token + 1])

    def _postings(self, word: str) -> np.ndarray | None:
        """Rows of the chunks that use `word` (a stem), sorted, from BM25's inverted index; None if no chunk does."""
        token = self.bm25.vocab_dict.get(word)
        start, end = self._span(token) if token is not None else (0, 0)
        return np.asarray(self.bm25.scores["indices"][start:end]) if end > start else None

    def coverage(self, terms: set[str], paper_ids: Iterable[str]) -> float:
        """Share of the question's topic words (IDF-weighted) found in the best-covering paper.

        Words the corpus never uses weigh the most: a question about
        "deepfake detection" over a corpus without "deepfake" scores low, however
        close its embedding happens to fall to some abstract.
        """
        return max(self.coverages(terms, paper_ids).values(), default=0.0)

    def coverages(self, terms: set[str], paper_ids: Iterable[str]) -> dict[str, float]:
        """Each paper's share of the question's topic words, IDF-weighted (`coverage` keeps the best)."""
        paper_ids = list(paper_ids)
        if not terms or not paper_ids:
            return {}
        weight, users = self._weighted(terms)
        total = sum(weight.values())
        found = {}
        for paper_id in paper_ids:
            own = np.asarray(self.paper_rows.get(paper_id, []), dtype=np.int64)
            titled = self._title_words(paper_id)  # "impatient" is only in "On Multi-Armed Bandit with Impatient Arms"
            found[paper_id] = sum(w for t, w in weight.items() if t in titled or t in users and _any_in_sorted(own, users[t])) / total
        return found

    def _words_of_title(self, paper_id: str) -> frozenset[str]:
        """The stems of a paper's title, as BM25 reads words."""
        title = self.title_of(paper_id)
        return frozenset(self.tokenize([title]).vocab) - {""} if title else frozenset()

    def weights(self, terms: Iterable[str]) -> dict[str, float]:
        """Each topic word's weight in `coverages`: its IDF over the chunks, the most for a word no chunk uses."""
        return self._weighted(terms)[0]

    def _weighted(self, terms: Iterable[str]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """Each word's weight, and the rows of the chunks using it (words no chunk uses have none), looked up once."""
        weight, users = {}, {}
        for term in terms:
            rows = self._users(term)
            if rows is None:
                weight[term] = self.unseen_idf
            else:
                weight[term] = math.log(1 + (len(self.chunk_ids) - len(rows) + 0.5) / (len(rows) + 0.5))
                users[term] = rows
        return weight, users

    def _users(self, word: str) -> np.ndarray | None:
        """Rows of the chunks that use `word`, or for an acronym the papers spell out, its long form in one chunk
        ("RL" or "reinforcement learning"); None if none does."""
        long = self.long_form(word)
        if not long:
            return self._postings(word)
        if word not in self._acronym_rows:
            rows = self._postings(word)
            spelled = self.rows_using(list(acronyms.long_stems(long)))
            if spelled is not None:
                rows = spelled if rows is None else np.union1d(rows, spelled)
            self._acronym_rows[word] = rows
        return self._acronym_rows[word]

    def papers_using_any(self, words: Iterable[str], most: int) -> list[str]:
        """Papers with a chunk that uses one of `words` (stems), for the words no more than `most` chunks use; in the
        same order whatever order `words` come in (a set's differs from one process to the next)."""
        found: dict[str, None] = {}
        for word in sorted(words):
            rows = self._postings(word)
            if rows is not None and len(rows) <= most:
                found.update(dict.fromkeys(self.chunk_papers[int(row)] for row in rows))
        return list(found)


_VERSION = re.compile(r"-?(?=[\w.]*\d)[\w.]{1,6}|-[a-z]{1,2}")  # "-1k", "100", "-v2", "-r": not "-daslab" (a lab's name in a link)


def _found_in_sorted(rows: np.ndarray, postings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of `rows`, its position in `postings` (sorted, as BM25's CSC matrix keeps them) and whether it is
    there: a binary search per row, not a scan of the postings."""
    at = np.minimum(np.searchsorted(postings, rows), len(postings) - 1)
    return at, postings[at] == rows


def _any_in_sorted(rows: np.ndarray, postings: np.ndarray) -> bool:
    """Whether any of `rows` is in `postings`."""
    return bool(np.any(_found_in_sorted(rows, postings)[1]))


def _kind_described(name: str) -> bool:
    """Whether `name` is a kind of thing with a descriptive tail ("LLM-based", "CNN-based"), not one thing's name."""
    head = DESCRIPTIVE_TAIL.sub("", name)
    return head != name and head in GENERIC_NAMES


def unknown_names(lexical: LexicalIndex, question: str, titled: Callable[[str], bool] = lambda word: False) -> list[str]:
    """The names `question` uses ("Kinetics-400", "LiDAR", "IC50", "Granger-causal") that no paper of the build uses:
    kinds of thing ("LLM", "GPU"), two letters ("IP cores": an abbreviation more than a name) and X-to-Y shorthand
    ("seq2seq", which the papers write "sequence-to-sequence") aside. A capitalised word is a name only past a
    sentence's start, and one that some title uses (`titled`: "To Cool or Not to Cool?") is known."""
    names = [
        name for name in names_in(question)
        if name not in GENERIC_KINDS and len(compact(name)) > 2 and not TO_SHORTHAND.fullmatch(name) and not lexical.knows(name)
    ]
    heads = dict.fromkeys(DESCRIPTIVE_TAIL.sub("", word) for word in proper_words(question))
    return names + [head for head in heads if not lexical.knows(head) and not titled(head)]
