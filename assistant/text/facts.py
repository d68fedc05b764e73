"""The checkable facts of a sentence: its numbers and its names, and which of them a source does not contain.

A chat model that was not given the sentence holding an answer makes one up
("evaluated on the HalfCheetah-v2 benchmark", "on 10 tasks" where the abstract
says 20). Whatever else a paraphrase may change, a number or a named dataset,
benchmark, model or method must come from the cited abstract; this needs no
model to check.
"""

from __future__ import annotations

import re

from assistant.text.words import GENERIC_KINDS, STOPWORDS, names_in

# A number as written in prose: "20", "17,720", "3.3" (of "3.3%"), "0.5"; not the digits inside a name ("GPT-4").
_NUMBER = re.compile(r"(?<![\w.\-/])\d+(?:[.,]\d+)*")
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
    "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16",
    "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
}
_WORD = re.compile(r"[a-z]+")
_SHOUTED = STOPWORDS | {"yes", "note", "true", "false", "none"}  # "YES [1]": a word in capitals, not a name


def _number(text: str) -> str:
    """"17,720" and "17720" alike; "3.50" and "3.5" alike."""
    plain = text.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", text) else text.replace(",", ".")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def numbers(text: str) -> set[str]:
    """The numbers `text` states, normalised."""
    return {_number(match.group()) for match in _NUMBER.finditer(text)}


def _squashed(text: str) -> str:
    """Lower case, letters and digits only: "Meta-World", "Metaworld" and "meta world" compare equal."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def unsupported_facts(sentence: str, sources: list[str]) -> list[str]:
    """The numbers and names of `sentence` that none of `sources` contains, in order; [] when all are there.

    A source states a number in digits or in words ("ten tasks" holds 10). A name matches regardless of case,
    hyphens and spaces, and in the singular; generic acronyms (LLM, GPU, RL) are not facts.
    """
    text = " ".join(sources)
    known = numbers(text) | {_NUMBER_WORDS[w] for w in _WORD.findall(text.lower()) if w in _NUMBER_WORDS}
    squashed = _squashed(text)
    missing = [match.group() for match in _NUMBER.finditer(sentence) if _number(match.group()) not in known]
    for name in names_in(sentence):
        if name in GENERIC_KINDS or name.rstrip("s") in GENERIC_KINDS or name.lower() in _SHOUTED:
            continue
        if _squashed(name) not in squashed and _squashed(name.rstrip("s")) not in squashed:
            missing.append(name)
    return list(dict.fromkeys(missing))
