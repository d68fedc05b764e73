"""Acronyms the papers spell out ("offline reinforcement learning (RL)"), so "offline RL" finds what they say in full.

A researcher types "RL", "GNN", "VLM"; many abstracts say "reinforcement learning" and never the
acronym. The corpus itself defines the acronyms it uses, so a build collects those definitions and
counts a paper that says the long form as using the acronym.
"""

from __future__ import annotations

import re

from assistant.text.words import STOPWORDS, stems

_DEFINED = re.compile(r"((?:[\w\-]+\s+){1,6})\(([A-Z][A-Za-z0-9\-]*?)s?\)")
_NAMED = re.compile(r"((?:[\w\-]+\s+){1,10})\(([A-Z][A-Za-z0-9\-]*)\)")
_PART = re.compile(r"[\s\-]+")
_SLACK = 2  # words between the acronym's spelled-out words and the bracket ("graph neural network models (GNN)")


def spelled_out(words: str, acronym: str) -> str:
    """The words before "(ACRONYM)" that spell it out, or "": "vision-language model" for "(VLM)", none for "a model (GPT-4)"."""
    letters = "".join(c for c in acronym if c.isupper()).lower()
    parts = [p for p in _PART.split(words.strip()) if p]
    initials = "".join(p[0].lower() for p in parts)
    if len(letters) < 2:
        return ""
    start = initials.rfind(letters, max(0, len(initials) - len(letters) - _SLACK))
    return " ".join(parts[start:]) if start >= 0 else ""


def spelled_in_capitals(text: str) -> list[str]:
    """Long forms whose capitals spell the name in brackets after them, however the letters sit in the words:
    "INSTruction optimization usIng Neural bandits Coupled with Transformers (INSTINCT)", "Time Series … (TSLANet)"."""
    found = []
    for words, name in _NAMED.findall(text):
        parts = words.split()
        letters, capitals = [c for c in name if c.isupper()], []
        for start in range(len(parts) - 1, -1, -1):
            capitals[:0] = [c for c in parts[start] if c.isupper()]
            if len(letters) >= 3 and capitals == letters:
                found.append(" ".join(parts[start:]))
                break
    return found


def definitions(text: str) -> list[tuple[str, str]]:
    """Each acronym `text` spells out, with its long form: ("RL", "reinforcement learning")."""
    found = []
    for words, acronym in _DEFINED.findall(text):
        long_form = spelled_out(words, acronym)
        if long_form:
            found.append((acronym, long_form))
    return found


def key(acronym: str) -> str:
    """The stem BM25 indexes an acronym under ("LLM" → "llm"); "" for one of several tokens ("GPT-4")."""
    found = stems(acronym)
    return found[0] if len(found) == 1 else ""


def long_stems(long_form: str) -> tuple[str, ...]:
    """The stems a chunk must use to say the long form (function words aside: BM25 does not index them)."""
    return tuple(dict.fromkeys(s for s in stems(long_form) if s not in STOPWORDS and len(s) > 1))
