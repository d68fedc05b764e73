"""Which papers a comparison compares: those it names or describes, one per side, or those the reader ticked.

"How do InterpreTabNet and the NPT-based anomaly detector differ?" cites both: the paper it names, then for each
side it only describes, the paper that fits the description best. Papers ticked in the UI and a comparison
question are compared exactly.
"""

from __future__ import annotations

import re

from assistant.answer import extractive
from assistant.answer.record import QuestionRecord
from assistant.ingest.papers import Paper
from assistant.retrieval.builds import Build
from assistant.retrieval.filters import Filters
from assistant.text import details
from assistant.text.naming import names_title
from assistant.text.sentences import content_words
from assistant.text.words import GENERIC_NAMES, name_pattern, names_in

_CHOSEN_MAX = 10  # papers a reader may tick to compare at once
_SIDES = {"two": 2, "both": 2, "three": 3, "four": 4}  # how many papers a comparison says it compares
_CAPITALISED = re.compile(r"(?<=[\w,;:] )[A-Z][^\W\dA-Z_]{2,}\b")  # a capitalised word inside a sentence ("Föllmer"), not its first
_SIDES_END = re.compile(r"[:?.]|\b(?:differ\w*|both|compar\w*|contrast\w*|in how|in what)\b", re.I)
_GROUP = re.compile(r"\b(?:papers|works|takes|studies|ones)\b", re.I)
# Words that say a question sets papers side by side: "the X paper with the one on Y", "three takes on calibration".
_PAPERS_COMPARED = re.compile(
    r"\b(?:paper|one|work|method)\b[^?]*\b(?:with|and|vs\.?|versus)\b[^?]*\b(?:paper|one|work|method)s?\b"
    r"|\b(?:two|three|four)\s+(?:\w+\s+)?(?:papers|works|takes|methods|approaches)\b", re.I)
_NAME_WORDS = re.compile(r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*){1,3}")  # a side named in capitalised words: "Deep LoRA"
_COMPARE_LEAD = re.compile(r"^\s*(?:compare|contrast|how (?:do|does)|what(?:'s| is) the difference between)\s+", re.I)
_SIDE_BREAK = re.compile(r",\s*(?:and\s+)?|\s+(?:with|and|vs\.?|versus|against|to)\s+", re.I)


def compare_sides(record: QuestionRecord, build: Build, allowed: frozenset[str] | None) -> None:
    """A comparison ("how do InterpreTabNet and the NPT-based detector differ?") quotes every side: the papers it
    names (a coined name only one abstract uses counts: "Charms"), then for each side it describes the paper that
    matches the description best, up to the number of sides it speaks of (two unless it says three or four)."""
    question = record.question
    if not details.compares(question) or extractive.asks_for_list(question):
        return
    sides = max([2, *(n for word, n in _SIDES.items() if re.search(rf"\b{word}\b", question, re.I))])
    described = _sides_described(question)
    coined = [p for p in _coined_names(question, described, build) if allowed is None or p in allowed]
    known = {paper.paper_id for paper in record.papers}
    record.add_papers([build.papers[p] for p in coined if p not in known])
    ids = [p.paper_id for p in record.papers]
    named = list(dict.fromkeys([*record.named, *(ids.index(p) for p in coined)]))
    if not named and not _PAPERS_COMPARED.search(question):  # "comparing two classifiers": one paper's topic
        return
    chosen = list(named)
    for part in described:  # "the one saying benchmarking is limited": the paper that says so best
        if len(chosen) >= sides or any(_mentions(part, record.papers[i]) for i in named):
            continue
        others = [i for i in range(len(record.papers)) if i not in chosen]
        best = extractive.best_match(part, [record.papers[i] for i in others], build.sentences)
        if best is not None:
            chosen.append(others[best])
    chosen += [i for i in range(len(record.papers)) if i not in chosen][: max(sides - len(chosen), 0)]
    record.compared = sorted(chosen)


def chosen_to_compare(question: str, filters: Filters | None) -> list[str]:
    """The papers a reader chose to compare (the UI's ticked cards: a comparison over two to `_CHOSEN_MAX` paper ids)."""
    ids = filters.paper_ids if filters is not None else []
    return list(ids) if 2 <= len(ids) <= _CHOSEN_MAX and details.compares(question) else []


def _sides_described(question: str) -> list[str]:
    """The sides a comparison sets against each other, as it words them: "Compare [the position paper on environment
    shaping] with [the one saying benchmarking is limited]: what does each argue?" gives the two bracketed parts."""
    head = _COMPARE_LEAD.sub("", question)
    head = _SIDES_END.split(head, maxsplit=1)[0]  # what follows asks how they compare, not who they are
    parts = [part for part in _SIDE_BREAK.split(head) if len(content_words(part)) >= 2]
    return [part for part in parts if not _GROUP.search(part)]  # "the two stochastic-interpolant papers" is every side


def _mentions(part: str, paper: Paper) -> bool:
    """Whether a side's words name `paper`: its title, a name its title or abstract uses, or the side's words as they
    stand there ("Random Masking")."""
    text = paper.title_and_abstract
    names = [name for name in names_in(part) if name not in GENERIC_NAMES]  # "RL" names a field, not a paper
    phrase = " ".join(part.split())
    return names_title(part, paper.title) or any(name_pattern(name).search(text) for name in [*names, phrase])


def _coined_names(question: str, sides: list[str], build: Build) -> list[str]:
    """Papers a question names by a capitalised word, or one of its `sides` by capitalised words ("Random Masking and Deep LoRA"),
    that only one abstract or title uses, capitalised the same way ("… with Charms": "optiMal tranSport (Charms)"):
    the words are that paper's name for its method."""
    found = []
    named = [" ".join(side.split()) for side in sides]
    for word in dict.fromkeys([*_CAPITALISED.findall(question), *(side for side in named if _NAME_WORDS.fullmatch(side))]):
        spelled = r"\s+".join(re.escape(part) for part in word.split())
        pattern = re.compile(rf"(?<![\w-]){spelled}(?![\w-])")
        in_abstracts = build.retriever.lexical.papers_using(sorted(build.retriever.terms(word)))  # BM25's postings (abstracts)
        using = dict.fromkeys([*in_abstracts, *build.papers.with_title_word(word)])
        papers = [paper_id for paper_id in using if pattern.search(build.papers[paper_id].title_and_abstract)]
        if len(papers) == 1:
            found.append(papers[0])
    return list(dict.fromkeys(found))
