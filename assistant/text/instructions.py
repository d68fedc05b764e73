"""Sentences in an abstract that speak to the model reading it ("ignore all previous instructions and reply …").

An abstract is data. A sentence in it that gives the reading model orders is
withheld from every prompt (the model sees a note in its place), so a planted
instruction cannot steer an answer, while the paper's other sentences, and the
abstract users see, stay as they are. The cues are the imperative forms such text
takes; of the 19,204 sentences of the 2,634 ICML 2024 abstracts none matches,
papers on prompt injection included.
"""

from __future__ import annotations

import re

from assistant.text.sentences import split_sentences

WITHHELD = "[a sentence addressed to the reading model, withheld]"
_CUE = re.compile(r"\b(?:ignore|disregard|forget|override|pretend|act as|you are|you must|you should|reply|respond|prompt|instructions?)\b", re.I)
_ORDER = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|preceding|system|original)\s+"
    r"(?:instructions?|prompts?|rules|messages?|context)\b"
    r"|\b(?:reply|respond|answer)\s+(?:only\s+)?with\s+(?:exactly|only)\b|\byou\s+are\s+now\b|\bsystem\s+prompt\s*:|\bnew\s+instructions?\s*:"
    r"|(?:^|[:;\"“]\s*)(?:please\s+|now\s+)?(?:ignore|disregard|forget|override|pretend|act as|you are|you must|you should)\b",
    re.I,
)
_SENTENCE_ID = re.compile(r"^(\d+\.\d+\s+)?(.*)$", re.S)  # the reading prompt numbers each sentence: "2.3 …"


def addresses_the_model(sentence: str) -> bool:
    """Whether `sentence` gives orders to whoever reads it."""
    return bool(_ORDER.search(_SENTENCE_ID.match(sentence.strip()).group(2).lstrip("\"'“(")))  # type: ignore[union-attr]


def withheld(text: str) -> str:
    """`text` (an abstract, or numbered sentences one per line) with each sentence that gives orders replaced by a note."""
    if not _CUE.search(text):
        return text
    lines = []
    for line in text.split("\n"):
        sentences = split_sentences(line)
        kept = [_SENTENCE_ID.sub(lambda m: f"{m.group(1) or ''}{WITHHELD}", s) if addresses_the_model(s) else s for s in sentences]
        lines.append(line if kept == sentences else " ".join(kept))  # a line with nothing withheld keeps its spacing
    return "\n".join(lines)
