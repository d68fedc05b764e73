"""Short human-readable labels for papers that have no title.

A researcher scanning citations needs something to recognise a paper by. The
method's own name (usually an acronym such as "PRepBN") is the best handle;
failing that, the abstract's opening clause says what the paper is about.
"""

from __future__ import annotations

import re

from assistant.text.words import GENERIC_NAMES, NAME

MAX_WORDS = 12

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_PROPOSAL = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:paper|work))\s+"
    r"(?:propose|proposes|introduce|introduces|present|presents|develop|develops|design|designs)\b",
    re.IGNORECASE,
)
_NAMED = re.compile(
    r"\b(?:called|named|dubbed|termed|coined|namely)\s+(?:as\s+)?[\"“']?"
    r"([A-Z][A-Za-z0-9]*(?:[-+][A-Za-z0-9]+)*)"
)
# An acronym defined in parentheses: "(SMAT)", "(Grad-ECLIP)", "(P&N Encoder)".
_DEFINED = re.compile(r"\(([A-Za-z][A-Za-z0-9&+\- ]{0,20}[A-Za-z0-9])\)")


def _first_words(text: str, limit: int = MAX_WORDS) -> str:
    words = text.split()
    cut = " ".join(words[:limit]).rstrip(",;:.")
    return cut + ("…" if len(words) > limit else "")


def _first_clause(sentence: str) -> str:
    clause = re.split(r"[,;:]\s|\s[—–-]\s", sentence, maxsplit=1)[0]
    return clause if len(clause.split()) >= 4 else sentence


def _method_name(sentences: list[str]) -> tuple[str | None, str | None]:
    """The name the abstract gives its own method, and the sentence naming it."""
    for sentence in sentences:
        if not _PROPOSAL.search(sentence):
            continue
        for acronym in _DEFINED.findall(sentence):
            if sum(c.isupper() for c in acronym) >= 2 and acronym not in GENERIC_NAMES:
                return acronym, sentence
    for sentence in sentences:
        named = _NAMED.search(sentence)
        if named and named.group(1) not in GENERIC_NAMES and len(named.group(1)) >= 3:
            return named.group(1), sentence
    for sentence in sentences:
        if not _PROPOSAL.search(sentence):
            continue
        for token in NAME.findall(sentence):
            if token not in GENERIC_NAMES and len(token) >= 3 and not token.isdigit():
                return token, sentence
    return None, None


def make_label(abstract: str, title: str | None = None) -> str:
    """A label of at most a dozen words: the title, else `Name: what it is`, else the opening clause."""
    if title and title.strip():
        return " ".join(title.split())
    text = " ".join(abstract.split())
    sentences = [s for s in _SENTENCE_END.split(text) if s]
    if not sentences:
        return ""
    name, sentence = _method_name(sentences)
    if name and sentence:
        proposal = _PROPOSAL.search(sentence)
        tail = sentence[proposal.end():] if proposal else sentence
        return f"{name}: {_first_words(_first_clause(tail.strip()), MAX_WORDS - 1)}"
    return _first_words(_first_clause(sentences[0]))
