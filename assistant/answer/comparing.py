"""Which papers a comparison compares: those it names or describes, one per side, or those the reader ticked.

"How do InterpreTabNet and the NPT-based anomaly detector differ?" cites both: the paper it names, then for each
side it only describes, the paper that fits the description best. Papers ticked in the UI and a comparison
question are compared exactly.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from assistant.answer import extractive
from assistant.answer.record import QuestionRecord
from assistant.ingest.papers import Paper
from assistant.retrieval.builds import Build
from assistant.retrieval.filters import Filters
from assistant.retrieval.hybrid import Mode
from assistant.retrieval.search import title_words
from assistant.text import details
from assistant.text.naming import QUOTED, names_title, title_head, title_text, without_titles
from assistant.text.questions import asks_for_list, points_back_in_itself
from assistant.text.sentences import content_words
from assistant.text.words import GENERIC_NAMES, STOPWORDS, name_pattern, names_in

_CHOSEN_MAX = 10  # papers a reader may tick to compare at once
_SHORTLIST = 6  # a described side's best-fitting papers among which every side's is chosen together
_SIDE_DEPTH = 5  # papers a search for one side's description offers beside the question's own
_SIDES = {"two": 2, "both": 2, "three": 3, "four": 4}  # how many papers a comparison says it compares
_CAPITALISED = re.compile(r"(?<=[\w,;:] )[A-Z][^\W\dA-Z_]{2,}\b")  # a capitalised word inside a sentence ("Föllmer"), not its first
_SIDES_END = re.compile(rf"[:?.]|\b(?:{details.COMPARING}|both|in how|in what)\b", re.I)
_GROUP = re.compile(r"\b(?<!that )(?<!which )(?:papers|works|takes|studies|ones)\b", re.I)  # not "the paper that studies X"
_GROUP_LEAD = re.compile(r"\b(?:two|three|four|these|both)\s+(?:[\w-]+\s+){0,2}(?:papers|works|takes|studies|approaches|methods)\b", re.I)
# Words that say a question sets papers side by side: "the X paper with the one on Y", "three takes on calibration".
_PAPERS_COMPARED = re.compile(
    r"\b(?:paper|one|work|method)\b[^?]*\b(?:with|and|vs\.?|versus)\b[^?]*\b(?:paper|one|work|method)s?\b"
    r"|\b(?:vs\.?|versus)\s[^?]*\bpaper\b|\bpaper\b[^?]*\s(?:vs\.?|versus)\b"  # "X vs the Y paper": a paper on each side
    r"|\b(?:two|three|four)\s+(?:\w+\s+)?(?:papers|works|takes|methods|approaches)\b", re.I)
_NAME_WORDS = re.compile(r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*){1,3}")  # a side named in capitalised words: "Deep LoRA"
_ASKS_TO_COMPARE = r"compare|contrast|what(?:'s| is) the difference between"  # the sides follow these words
_COMPARE_LEAD = re.compile(rf"^\s*(?:{_ASKS_TO_COMPARE}|how (?:do|does))\s+", re.I)
_COMPARE_ASKED = re.compile(rf"\s*(?:{_ASKS_TO_COMPARE})\s", re.I)
_FRAMING = re.compile(rf"{details.COMPARING}|distinguish\w*|takes?|two|three|four|these|each|between|versus|vs", re.I)
_HELD = "\ue000"  # a quoted side's spaces while the question is split into sides
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
_SIDE_BREAK = re.compile(r",\s*(?:and\s+)?|\s+(?:with|and|vs\.?|versus|against|to)\s+", re.I)
_LIST_BREAK = re.compile(r",\s*(?:and\s+|or\s+)?", re.I)  # sides listed with commas
# "the Gibbs sampling paper with the online algorithm, and C"; not "the paper that evolves heuristics with an LLM"
_SET_AGAINST = re.compile(r"(?:(?<=\bpaper)|(?<=\bstudy)|(?<=\bwork)|(?<=\bone))\s+with\s+|\s+(?:vs\.?|versus|against)\s+", re.I)
_SET_AGAINST_VERB = re.compile(r"\s+(?:differs?|different|compared?|compares|contrasts?|contrasted)\s+(?:from|with|to|against)\s+", re.I)
_LAST_LISTED = re.compile(r",\s*(?:and|or)\s", re.I)  # "…, and C": the list's last side follows its last comma
# "the soft prompt compression paper make LLMs cheaper": a side described before "paper" ends there, what follows asks
# (not "the paper learning high-order relationships …", described after it)
_ASKED_AFTER = re.compile(r"\b([\w-]+)\s+(?:paper|study)(\s+(?!(?:that|which|who|whose|on|about|from|by|with|where|in|for|of|to|and|or)\b)\w.*)$", re.I)


def compare_sides(record: QuestionRecord, build: Build, allowed: frozenset[str] | None, mode: Mode = "hybrid") -> None:
    """A comparison ("how do InterpreTabNet and the NPT-based detector differ?") quotes every side: the papers it
    names (a coined name only one abstract uses counts: "Charms"), then for each side it describes the paper that
    matches the description best, up to the number of sides it speaks of (as many as it says, or as it describes);
    each described side is searched for on its own, in `mode` (RETRIEVAL_MODE)."""
    question = record.question
    titles = [record.papers[i].title for i in record.named if details.compares(record.papers[i].title or "")]
    untitled = without_titles(question, titles)
    if not details.compares(untitled) or asks_for_list(question) or (untitled != question and len(_side_parts(untitled)) < 2):
        return  # "ConvNet vs Transformer, Supervised vs CLIP - what do they compare?": one paper, its title comparing
    parts = _side_parts(question)
    described = _described(parts)
    coined = [p for p in _coined_names(question, described, build) if allowed is None or p in allowed]
    known = {paper.paper_id for paper in record.papers}
    record.add_papers([build.papers[p] for p in coined if p not in known])
    ids = [p.paper_id for p in record.papers]
    named = list(dict.fromkeys([*record.named, *(ids.index(p) for p in coined)]))
    if not named and not _PAPERS_COMPARED.search(question) and not (_COMPARE_ASKED.match(question) and len(described) >= 2):
        return  # "comparing two classifiers": one paper's topic
    said = [n for word, n in _SIDES.items() if re.search(rf"\b{word}\b", question, re.I)]
    sides = max(said) if said else min(max(2, len(parts)), max(_SIDES.values()))  # "A with B, and C": three
    chosen = list(named)
    context = _shared(question, parts)
    wanted = [part for part in described if not any(_mentions(part, record.papers[i]) for i in named)][: max(sides - len(named), 0)]
    for part in wanted:  # each side searched for with what the sides share ("… on calibration") and on its own (what
        # they share may be the question's, not the side's: "make LLMs cheaper" of a paper pruning a vision MoE's experts)
        for query in dict.fromkeys([f"{part} {context}".strip(), part]):
            known = {paper.paper_id for paper in record.papers}
            record.add_papers([build.papers[p] for p in _found_for(query, build, allowed, mode) if p not in known])
    others = [i for i in range(len(record.papers)) if i not in chosen]
    fits = [extractive.match_scores(part, [record.papers[i] for i in others], build.sentences, context) for part in wanted]
    fitted = [others[i] for i in _best_assignment(fits)]
    chosen += fitted
    record.sides_found = bool(fitted) and len(chosen) >= 2 and all(
        extractive.words_used(part, record.papers[i].title_and_abstract) == 1.0 for part, i in zip(wanted, fitted))
    chosen += [i for i in range(len(record.papers)) if i not in chosen][: max(sides - len(chosen), 0)]
    record.compared = sorted(chosen)


def _best_assignment(fits: list[list[float]]) -> tuple[int, ...]:
    """One paper per described side, a different one each, fitting the descriptions best together: taken side by side,
    "mean-field GNN generalization" took the GNN training-dynamics paper, which the other side describes better."""
    if not fits or not fits[0]:
        return ()
    shortlists = [sorted(range(len(row)), key=lambda i: -row[i])[:_SHORTLIST] for row in fits]
    picks = [pick for pick in itertools.product(*shortlists) if len(set(pick)) == len(pick)]
    return max(picks, key=lambda pick: sum(row[i] for row, i in zip(fits, pick)), default=())


def sets_against_conversation(question: str) -> bool:
    """Whether a follow-up sets its conversation's paper against one other it names ("how does it differ from TopDis?"),
    not two papers of its own ("how do PlanDQ and MACURA differ in what they use …?")."""
    names = [name for name in names_in(question) if name not in GENERIC_NAMES]
    return details.speaks_of_comparing(question) and len(names) <= 1 and not asks_for_list(question) and not points_back_in_itself(question)


def compare_with_conversation(record: QuestionRecord, build: Build, allowed: frozenset[str] | None) -> None:
    """A follow-up setting its conversation's paper (first among the papers) against another that it names ("how does
    it differ from TopDis?") quotes both: the conversation's paper, then the paper a name only it uses points to."""
    question = record.question
    if not record.papers or not sets_against_conversation(question):
        return
    first = record.papers[0].paper_id
    candidates = _coined_names(question, _described(_side_parts(question)), build, names_in(question))
    coined = [p for p in candidates if p != first and (allowed is None or p in allowed)]
    if not coined:
        return
    known = {paper.paper_id for paper in record.papers}
    record.add_papers([build.papers[p] for p in coined if p not in known])
    ids = [p.paper_id for p in record.papers]
    record.compared = [0, *sorted(ids.index(p) for p in coined)]


def chosen_to_compare(question: str, filters: Filters | None) -> list[str]:
    """The papers a reader chose to compare (the UI's ticked cards: a comparison over two to `_CHOSEN_MAX` paper ids)."""
    ids = filters.paper_ids if filters is not None else []
    return list(ids) if 2 <= len(ids) <= _CHOSEN_MAX and details.compares(question) else []


def _side_parts(question: str) -> list[str]:
    """The parts of a comparison that name or describe its sides: "Compare [the position paper on environment shaping]
    with [the one saying benchmarking is limited]: what does each argue?" gives the two bracketed parts."""
    head = _COMPARE_LEAD.sub("", question)
    lead, colon, rest = head.partition(":")
    if colon and _GROUP_LEAD.search(lead):  # "Compare three takes on calibration: A, B and C": the sides follow the colon
        head = rest
    head = QUOTED.sub(lambda quote: quote.group(0).replace(" ", _HELD), head)  # "'ReLU to the Rescue'" is one side
    head = _SET_AGAINST_VERB.sub(" vs ", head)  # "X differ from Y": Y is a side, not what is asked of them
    head = _SIDES_END.split(head, maxsplit=1)[0]  # what follows asks how they compare, not who they are
    parts = _SIDE_BREAK.split(head)
    if "," in head:  # "A, the paper that decouples X and Y training, and C": an "and" inside a side is its own
        parts = [side for part in _LIST_BREAK.split(head) for side in _SET_AGAINST.split(part)]
        if not _LAST_LISTED.search(head):  # "A, B and C": the last comma's part holds the last two
            parts[-1:] = _SIDE_BREAK.split(parts[-1])
    return [_without_asked(part.replace(_HELD, " ")) for part in parts if content_words(part)]


def _without_asked(side: str) -> str:
    """A side without what it asks after the "paper" its description ends with."""
    found = _ASKED_AFTER.search(side)
    return side[: found.start(2)] if found and found.group(1).lower() not in STOPWORDS else side


def _described(parts: list[str]) -> list[str]:
    """The sides a comparison describes in words (two content words at least; "TENG" alone is a name), not a group
    ("the two stochastic-interpolant papers" is every side)."""
    return [part for part in parts if len(content_words(part)) >= 2 and not _GROUP.search(part)]


def _shared(question: str, parts: list[str]) -> str:
    """What every side shares: the question's words outside its sides, less those framing a comparison ("Compare three
    takes on calibration: …" gives "calibration")."""
    for part in parts:
        question = question.replace(part, " ")
    return " ".join(word for word in re.findall(r"[\w-]+", question) if not _FRAMING.fullmatch(word) and word.lower() not in STOPWORDS)


def _found_for(side: str, build: Build, allowed: frozenset[str] | None, mode: Mode) -> list[str]:
    """The papers a search for one side's description (with what the sides share) finds first: the question's search,
    over all sides' words at once, may rank the paper one side describes below the others' ("the paper that decouples
    feature-extraction and classification training" among three calibration papers)."""
    retriever = build.retriever
    query = retriever.encode(side)
    rankings, _ = retriever.rankings(query, mode, {}, allowed)
    found = [chunk.paper_id for chunk in retriever.papers(rankings, _SIDE_DEPTH)]
    return list(dict.fromkeys([*title_words(build, query, rankings), *found]))  # "the neuro-symbolic point process paper"


def _mentions(part: str, paper: Paper) -> bool:
    """Whether a side's words name `paper`: its title, a name its title or abstract uses, or the side's words as they
    stand there ("Random Masking")."""
    text, part = paper.title_and_abstract, _POSSESSIVE.sub("", part)  # "Medusa's decoding heads" names Medusa
    names = [name for name in names_in(part) if name not in GENERIC_NAMES]  # "RL" names a field, not a paper
    phrase, head = " ".join(part.split()), title_head(paper.title)  # "Medusa" of "Medusa: Simple LLM Inference …"
    led = bool(head) and f" {head} " in title_text(part)
    return led or names_title(part, paper.title) or any(name_pattern(name).search(text) for name in [*names, phrase])


def _coined_names(question: str, sides: list[str], build: Build, words: Sequence[str] = ()) -> list[str]:
    """Papers a question names by a capitalised word (or one of `words`: "TopDis"), or one of its `sides` by capitalised
    words ("Random Masking and Deep LoRA"), that only one abstract or title uses, capitalised the same way ("… with
    Charms": "optiMal tranSport (Charms)"): the words are that paper's name for its method."""
    found = []
    named = [" ".join(side.split()) for side in sides]
    for word in dict.fromkeys([*_CAPITALISED.findall(question), *(side for side in named if _NAME_WORDS.fullmatch(side)), *words]):
        spelled = r"\s+".join(re.escape(part) for part in word.split())
        pattern = re.compile(rf"(?<![\w-]){spelled}(?![\w-])")
        in_abstracts = build.retriever.lexical.papers_using(sorted(build.retriever.terms(word)))  # BM25's postings (abstracts)
        using = dict.fromkeys([*in_abstracts, *build.papers.with_title_word(word)])
        papers = [paper_id for paper_id in using if pattern.search(build.papers[paper_id].title_and_abstract)]
        if len(papers) == 1:
            found.append(papers[0])
    return list(dict.fromkeys(found))
