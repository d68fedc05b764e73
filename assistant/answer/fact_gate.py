"""A model's answer passes sentence by sentence: one stating a number or name its cited abstracts lack is never shown.

The gate sits between the model's stream and the reader. It holds text until a
sentence ends (its citation markers included, as in "… sparsity. [2]"), checks
the sentence's numbers and names against the sources it cites
(`text.facts.unsupported_facts`), and lets through only sentences that pass, so
the streamed text is the final text. A dropped sentence is kept, with what it
lacked, for `Answer.unsupported`. Sentences that cite nothing are passed on:
the citation checks flag them as ungrounded. Every sentence is made inert first
(`text.markup.inert`): a model's images, links and HTML never reach a client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assistant.answer.citations import stated_part
from assistant.answer.result import MARKER, marker_numbers
from assistant.ingest.papers import Paper
from assistant.text.facts import unsupported_facts
from assistant.text.markup import inert

# Where a sentence ends: its full stop and any markers after it, then a space or new line before the next word;
# a new line ends a list item. A "[" after the space may open a marker still arriving: wait for it.
_END = re.compile(r"[.!?](?:[ \t]*\[[\d\s,;]*\])*[ \t]*(?:\n+|[ \t]+)(?=[^\s\[])|\n+(?=[^\s\[])")


@dataclass
class Dropped:
    """A sentence the gate kept back: what it said, whom it cited, and the numbers or names they lack."""

    sentence: str
    sources: list[int]
    lacking: list[str]

    def as_unsupported(self) -> dict:
        """As an entry of `Answer.unsupported`: removed from the answer for what it lacked."""
        return {"number": 0, "sentence": self.sentence, "score": 0.0, "lacking": self.lacking, "removed": True}


@dataclass
class FactGate:
    """Feed the model's raw text (markers as source numbers, [n] = the n-th of `sources`); get back what may be shown."""

    sources: list[Paper]
    dropped: list[Dropped] = field(default_factory=list)
    _held: str = ""

    def feed(self, text: str) -> str:
        """The sentences completed by `text` that pass; an unfinished one is held."""
        self._held += text
        out = []
        while match := _END.search(self._held):
            sentence, self._held = self._held[: match.end()], self._held[match.end() :]
            out.append(self._checked(sentence))
        return "".join(out)

    def flush(self) -> str:
        """The last sentence, checked, at the end of the stream."""
        rest, self._held = self._held, ""
        return self._checked(rest) if rest.strip() else rest

    def _checked(self, sentence: str) -> str:
        sentence = inert(sentence)  # no image, link or tag of the model's reaches a client that renders Markdown or HTML
        cited = [n for match in MARKER.finditer(sentence) for n in marker_numbers(match) if 1 <= n <= len(self.sources)]
        if not cited:
            return sentence
        plain = MARKER.sub("", sentence)
        claimed = stated_part(plain)  # "… but the abstract does not state X" asserts nothing about X
        papers = [self.sources[n - 1] for n in dict.fromkeys(cited)]
        lacking = unsupported_facts(claimed, [f"{p.title or ''} {p.abstract}" for p in papers]) if claimed else []
        if not lacking:
            return sentence
        self.dropped.append(Dropped(plain.strip(), list(dict.fromkeys(cited)), lacking))
        return ""
