"""Topics a question names explicitly, and whether an abstract mentions them.

A researcher often glosses the subject with its field's name: "… smooth slow
motion, i.e. video frame interpolation?", "… (dialogue state tracking)". Such a
term is what the question is about. When no retrieved abstract mentions it,
the nearest papers are neighbours of the topic, not work on it, however close
their embeddings fall: the similarity scores of paraphrases and of absent
topics overlap, a named term does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from assistant.text.words import STOPWORDS, is_name, stem, stems

_GLOSS = re.compile(r"\(([^()]{2,80})\)")
_NAMED_AS = re.compile(r"\b(?:i\.e\.|a\.k\.a\.|aka|also known as|known as|so-called)\s*,?\s*([^?.,;:()]{2,80})", re.I)
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_MAX_WORDS = 4  # a field's name is short; a longer aside is a description
WINDOW = 12  # words within which a several-word term's words must all appear, in one sentence

def named_topics(question: str) -> list[str]:
    """The terms `question` names as its subject: a short parenthesised gloss or what follows "i.e." / "known as".

    Lists of examples ("(key, tempo, genre)"), asides that open with a function word ("(not necessarily …)"),
    descriptions longer than a field's name, and names (PRepBN, NeRFs) are not topics here.
    """
    found = []
    for match in [*_GLOSS.finditer(question), *_NAMED_AS.finditer(question)]:
        term = match.group(1).strip()
        words = term.split()
        if any(mark in term for mark in ",;") or not words or len(words) > _MAX_WORDS:
            continue
        if words[0].lower().strip("-") in STOPWORDS or all(is_name(w) for w in words):
            continue
        if _content_stems(term):
            found.append(term)
    return found


# The application a short topic question closes on: "bandits for recommender systems", "… in medical imaging"; not a
# contrast ("… instead of moving average kernels")
# (each word matched one way only: a word that could be split among repetitions took ~0.2 s to rule out)
_LETTERED = r"(?=[\w'-]*[^\W_])[\w'-]+"  # a word with a letter or digit in it
_CLOSING = re.compile(rf"^.*\b(?:for|in|on|of|from|with|via|using)\s+({_LETTERED}(?:\s+{_LETTERED}){{0,5}})\W*$", re.I)
_CONTRAST = re.compile(r"\b(?:instead\s+of|rather\s+than|unlike|beyond|without|not)\s+(?:[\w'-]+\s+){0,5}(?:for|in|on|to|of|from|with|via|using)?\s*[\w'-]+(?:\s+[\w'-]+){0,5}\W*$", re.I)
TOPIC_QUESTION_WORDS = 12  # a question this short is a topic typed as a search: its closing phrase is part of the topic


def closing_application(question: str) -> str:
    """The phrase a short topic question closes on after "for / in / on …" ("detecting adversarial examples in medical
    imaging" → "medical imaging"): the application asked about, which a paper answering it mentions. Empty for longer
    questions (their last phrase may be an aside), a contrast ("instead of …") or a phrase holding a name ("on ImageNet"
    asks a detail of a paper, which `details` reads)."""
    if len(question.split()) > TOPIC_QUESTION_WORDS or _CONTRAST.search(question):
        return ""
    found = _CLOSING.search(question)
    if not found or any(is_name(token) for token in re.findall(r"[\w'-]+", found.group(1))):
        return ""
    if not _application_words(question[: found.start(1)]):  # "any work on spiking neural networks?": the whole topic
        return ""
    return found.group(1).strip() if _application_words(found.group(1)) else ""


# the asking words before a topic: "is there any work on", "papers about", "methods using"
_ASKING_FOR = re.compile(r"^\W*(?:(?:is|are)\s+there\s+)?(?:any\s+)?(?:(?:work|research|papers?|methods?|models?|approaches)\s+)?"
                         r"(?:on|about|using|that\s+use)?\s*", re.I)

# words of a clause, not of a topic's name: "a model that detects potholes", "how a wildfire spreads"
_CLAUSE_WORDS = re.compile(r"\b(?:what|which|who|how|why|when|where|that|can|could|does|do|did|is|are|was|were|find|anything|something)\b|'", re.I)


def closing_topic(question: str, application: str) -> str:
    """What a short topic question asks about before the `application` it closes on (`closing_application`: "machine
    unlearning for diffusion models" → "machine unlearning"): the method, which a paper answering it mentions too."""
    if not application:
        return ""
    before = question[: question.rindex(application)]
    topic = re.sub(r"\s+(?:for|in|on|of|from|with|via|using)\s*$", "", _ASKING_FOR.sub("", before), flags=re.I).strip()
    return "" if _CLAUSE_WORDS.search(topic) else topic


def _application_words(phrase: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9-]+", phrase.lower()) if w not in STOPWORDS and len(w) > 3]


GENERIC_SHARE = 0.2  # a word in more than this share of the chunks ("learning", "model") says nothing of an application


def lacks_application(text: str, phrase: str, used_by: Callable[[str], float]) -> bool:
    """Whether `text` uses none of the words of `phrase` (a plural, or a word it writes hyphenated on, counts: "FPGAs" for
    "FPGA-based") while the corpus uses one of them (`used_by`: the share of the index's chunks using a stem): the paper
    is a neighbour of the topic asked, not work on it ("equation discovery for climate models" over a paper discovering
    equations in hybrid systems). A word no paper uses says nothing: it may be the question's own phrasing; nor does a
    word most papers use ("federated learning clients": "learning")."""
    words = [w for w in _application_words(phrase) if all(used_by(s) <= GENERIC_SHARE for s in stems(w))]
    used = set(stems(text))
    # a hyphenated word is there only whole ("privacy-preserving" is not in "preserving all pairwise distances")
    absent = [w for w in words if not all(any(u == s or len(u) >= 4 and s.startswith(u) for u in used) for s in stems(w))]
    return bool(words) and len(absent) == len(words) and any(used_by(s) > 0 for w in words for s in stems(w))


def _content_stems(term: str) -> list[str]:
    return list(dict.fromkeys(stem(w) for w in _WORD.findall(term.lower()) if w not in STOPWORDS and len(w) > 1))


def share_used(text: str, term: str) -> float:
    """The share of `term`'s content words that `text` uses anywhere (1.0 for a term without any)."""
    wanted = _content_stems(term)
    used = set(stems(text))
    return sum(w in used for w in wanted) / len(wanted) if wanted else 1.0


def mentions(text: str, term: str) -> bool:
    """Whether `text` uses `term`: its one content word, or all of them in one sentence within `WINDOW` words."""
    wanted = _content_stems(term)
    if len(wanted) <= 1:
        return bool(wanted) and wanted[0] in stems(text)
    return any(_together(stems(sentence), wanted) for sentence in _SENTENCE_END.split(text))


def _together(words: list[str], wanted: list[str]) -> bool:
    positions = [[i for i, w in enumerate(words) if w == wanted_stem] for wanted_stem in wanted]
    if not all(positions):
        return False
    return any(all(any(start <= i < start + WINDOW for i in found) for found in positions) for start in range(len(words)))
