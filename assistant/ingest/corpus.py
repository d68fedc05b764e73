"""Read a corpus of abstracts into de-duplicated `Paper`s with stable ids.

Accepted inputs: a file or a folder (searched recursively) of
- `.txt`: one abstract per blank-line-separated paragraph (a short first
  paragraph without a full stop, such as "ICML 2024 Papers", is a header);
- `.jsonl`: one object a line with `abstract` and optional `title`, `authors`,
  `url`, `year`;
- `.csv`: a header row with an `abstract` column and the same optional ones.

Anything unreadable raises `CorpusError` naming the file and line, before a
single paper reaches the index.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.errors import CorpusError
from assistant.ingest.papers import Paper
from assistant.text.labels import make_label
from assistant.text.markup import clean_markup

log = logging.getLogger(__name__)

SUFFIXES = (".txt", ".jsonl", ".csv")
LINK_FIELDS = ("openreview", "pmlr", "pdf")
_TRUNCATION_MARKS = ("…", "...")
_HEADER_MAX_WORDS = 8
# Limits that keep a build bounded in time and memory whatever a file holds. Real abstracts are under
# ~5,000 characters; a longer "abstract" is a paper, a book or a broken export.
MAX_ABSTRACT_CHARS = 50_000
MAX_LINE_CHARS = 1_000_000  # one JSONL record
MAX_FILE_BYTES = 500_000_000
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass
class Corpus:
    """The papers of a corpus and what reading it found."""

    papers: list[Paper]
    files: list[Path]
    paragraphs: int = 0
    duplicates: int = 0
    truncated_copies: int = 0
    headers: list[str] = field(default_factory=list)
    empty_files: list[Path] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        """Changes whenever anything that ends up in the index changes."""
        digest = hashlib.sha256()
        for paper in self.papers:
            digest.update(json.dumps(paper.to_dict(), sort_keys=True).encode())
        return digest.hexdigest()[:16]

    def take_batches(self, size: int) -> Iterator[list[Paper]]:
        """The papers `size` at a time, each batch removed from `papers` as it is handed out.

        A build holds only what it has not written yet: 100,000 abstracts are ~200 MB that the store's
        index of the build's vectors, growing as they are written, needs for itself.
        """
        while self.papers:
            batch, self.papers[:size] = self.papers[:size], []
            yield batch

    def summary(self) -> str:
        return (
            f"{len(self.papers)} papers from {len(self.files)} file(s): {self.paragraphs} abstracts read, "
            f"{self.duplicates} exact duplicates and {self.truncated_copies} truncated copies dropped"
        )


def normalize(text: str) -> str:
    """The form two copies of an abstract share: NFKC, one space, lower case, no trailing ellipsis."""
    text = unicodedata.normalize("NFKC", text)
    text = " ".join(text.split()).lower()
    for mark in _TRUNCATION_MARKS:
        text = text.removesuffix(mark.lower()).rstrip()
    return text


def text_key(text: str) -> str:
    """Letters and digits of the normalised, markup-free text: equal for two copies of one abstract."""
    return _NOT_ALNUM.sub("", normalize(clean_markup(text)))


def paper_id(abstract: str) -> str:
    """Stable across machines and runs: a hash of the normalised text."""
    return hashlib.sha256(normalize(abstract).encode("utf-8")).hexdigest()[:16]


def is_truncated(abstract: str) -> bool:
    return abstract.rstrip().endswith(_TRUNCATION_MARKS)


def _decode(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CorpusError(f"{path}: {size:,} bytes; a corpus file may hold at most {MAX_FILE_BYTES:,} (split it)")
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise CorpusError(f"{path}:{line}: binary data (NUL byte); expected UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8"
        ) from exc


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, paragraph) for each blank-line-separated paragraph."""
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not lines:
                start = number
            lines.append(line.strip())
        elif lines:
            yield start, " ".join(lines)
            lines = []
    if lines:
        yield start, " ".join(lines)


def _is_header(paragraph: str) -> bool:
    return len(paragraph.split()) <= _HEADER_MAX_WORDS and not paragraph.rstrip().endswith((".", "…"))


def _clean_authors(value: Any, where: str) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return [a.strip() for a in re.split(r"[;,]", value) if a.strip()]
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return [a.strip() for a in value if a.strip()]
    raise CorpusError(f"{where}: 'authors' must be a string or a list of strings")


def _clean_year(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(str(value).strip())
    except ValueError as exc:
        raise CorpusError(f"{where}: 'year' must be a number, got {value!r}") from exc


def _text(value: Any, name: str = "", where: str = "") -> str | None:
    """A metadata field as one line of text: strings and numbers as written, a list of strings joined; else an error."""
    if value is None or value == "":
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = " ".join(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise CorpusError(f"{where}: '{name}' must be text, got {type(value).__name__}")
    if len(str(value)) > MAX_ABSTRACT_CHARS:
        raise CorpusError(f"{where}: '{name}' is {len(str(value)):,} characters long; the limit is {MAX_ABSTRACT_CHARS:,}")
    return " ".join(_SURROGATE.sub("\ufffd", str(value)).split()) or None


def _record(fields: dict[str, Any], where: str) -> dict[str, Any]:
    abstract = fields.get("abstract")
    if not isinstance(abstract, str) or not abstract.strip():
        raise CorpusError(f"{where}: missing or empty 'abstract'")
    if len(abstract) > MAX_ABSTRACT_CHARS:
        raise CorpusError(
            f"{where}: the abstract is {len(abstract):,} characters long; the limit is {MAX_ABSTRACT_CHARS:,} "
            "(is this a whole paper, or paragraphs without blank lines between them?)"
        )
    abstract = _SURROGATE.sub("\ufffd", abstract)  # a lone surrogate from a JSON escape cannot be stored as UTF-8
    title = _text(fields.get("title"), "title", where)
    links = {name: link for name in LINK_FIELDS if (link := _text(fields.get(name), name, where))}
    return {
        "abstract": clean_markup(abstract),
        "title": clean_markup(title) if title else None,
        "authors": _clean_authors(fields.get("authors"), where),
        "url": _text(fields.get("url"), "url", where),
        "year": _clean_year(fields.get("year"), where),
        "status": _text(fields.get("status"), "status", where),
        "links": links or None,
        "source": where,
    }


def _read_txt(path: Path, headers: list[str]) -> Iterator[dict[str, Any]]:
    for index, (line, paragraph) in enumerate(_paragraphs(_decode(path))):
        if index == 0 and _is_header(paragraph):
            headers.append(paragraph)
            continue
        yield _record({"abstract": paragraph}, f"{path}:{line}")


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    for line, text in enumerate(_decode(path).splitlines(), start=1):
        if not text.strip():
            continue
        if len(text) > MAX_LINE_CHARS:
            raise CorpusError(f"{path}:{line}: the line is {len(text):,} characters long; a record may have at most {MAX_LINE_CHARS:,}")
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{line}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError as exc:
            raise CorpusError(f"{path}:{line}: JSON nested too deeply to be a paper record") from exc
        if not isinstance(obj, dict):
            raise CorpusError(f"{path}:{line}: expected a JSON object with an 'abstract' field")
        yield _record(obj, f"{path}:{line}")


def _read_csv(path: Path) -> Iterator[dict[str, Any]]:
    reader = csv.DictReader(_decode(path).splitlines())
    columns = {name.strip().lower(): name for name in reader.fieldnames or [] if name}
    if "abstract" not in columns:
        found = ", ".join(columns) or "none"
        raise CorpusError(f"{path}:1: no 'abstract' column (columns found: {found})")
    try:
        for row in reader:
            fields = {key: row.get(name) for key, name in columns.items()}
            if not any((value or "").strip() for value in fields.values() if isinstance(value, str)):
                continue
            yield _record(fields, f"{path}:{reader.line_num}")
    except csv.Error as exc:
        raise CorpusError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from exc


def corpus_files(path: Path) -> list[Path]:
    """The readable corpus files at `path`, in a stable order."""
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise CorpusError(f"{path}: unsupported file type; use {', '.join(SUFFIXES)}")
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        raise CorpusError(f"{path}: no {', '.join(SUFFIXES)} files found")
    return files


def _drop_truncated_copies(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Keep the full abstract where a truncated one is a prefix of it."""
    normals = [normalize(r["abstract"]) for r in records]
    keep, dropped = [], 0
    for record, norm in zip(records, normals):
        if is_truncated(record["abstract"]) and any(
            other != norm and other.startswith(norm) for other in normals
        ):
            dropped += 1
            continue
        keep.append(record)
    return keep, dropped


def _read_file(file: Path, headers: list[str]) -> list[dict[str, Any]]:
    suffix = file.suffix.lower()
    if suffix == ".txt":
        return list(_read_txt(file, headers))
    if suffix == ".jsonl":
        return list(_read_jsonl(file))
    return list(_read_csv(file))


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every abstract record at `path`, duplicates included (metadata files are read this way)."""
    return [record for file in corpus_files(path) for record in _read_file(file, [])]


def read_corpus(path: Path | str) -> Corpus:
    """Read every corpus file at `path`; raises `CorpusError` on the first bad one."""
    files = corpus_files(Path(path))
    corpus = Corpus(papers=[], files=files)
    records: list[dict[str, Any]] = []
    for file in files:
        found = _read_file(file, corpus.headers)
        if not found:
            corpus.empty_files.append(file)
            log.warning("%s: no abstracts found", file)
        records.extend(found)
    corpus.paragraphs = len(records)

    unique: dict[str, dict[str, Any]] = {}
    for record in records:
        key = paper_id(record["abstract"])
        if key in unique:
            corpus.duplicates += 1
            continue
        unique[key] = record
    kept, corpus.truncated_copies = _drop_truncated_copies(list(unique.values()))
    if not kept:
        raise CorpusError(f"{path}: no abstracts found in {len(files)} file(s)")
    corpus.papers = [
        Paper(
            paper_id=paper_id(r["abstract"]),
            label=make_label(r["abstract"], r["title"]),
            abstract=r["abstract"],
            title=r["title"],
            authors=r["authors"],
            url=r["url"],
            year=r["year"],
            status=r["status"],
            links=r["links"],
            truncated=is_truncated(r["abstract"]),
            source=_within(r["source"], Path(path)),
        )
        for r in kept
    ]
    return corpus


def _within(source: str, root: Path) -> str:
    """`file:line` from the corpus folder (a single-file corpus: the file's name), so no server path travels with a
    paper to API clients; errors while reading still name the full path, for whoever builds."""
    file, _, line = source.rpartition(":")
    try:
        inside = Path(file).relative_to(root if root.is_dir() else root.parent)
    except ValueError:
        inside = Path(Path(file).name)
    return f"{inside.as_posix()}:{line}"
