"""Whether a question names a paper by its title or its authors.

People ask about a paper they half remember: by a quoted piece of its title
("what does "No Wrong Turns" find …"), by a run of its title's words, or by
its authors ("Hvarfner et al.", "Theis's position paper", "the paper by
Malach"). Such a question is about that paper whatever else it asks, so
retrieval puts it first and the answer/abstain judge admits it. The rules
need evidence a topic question does not give by chance: a quoted phrase, four
title words in a row, or a surname used as a name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache

from assistant.text.words import CAPITALISED_TERM, STOPWORDS, is_name, plain_scripts

QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{3,200})[\"“”«»]|(?<!\w)[‘']([^‘’']{3,200})[’'](?!\w)")  # a quoted piece of the question: a title fragment, one thing
_WORD = re.compile(r"[a-z0-9]+")
TITLE_RUN = 4  # content words of the title in a row, in the question, that name the paper (three is a topic phrase)
_SHORT_TITLE = 3  # a title of at most this many words (after its colon) names the paper when it appears whole
def _fold(text: str) -> str:
    """Lower case without accents: "Hvarfner" and "hvärfner" compare equal."""
    if text.isascii():  # nothing to decompose (whole abstracts are folded: 0.2 ms each, 10 ms a question)
        return text.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def _words(text: str) -> list[str]:
    return _WORD.findall(_fold(text))


def _content(words: list[str]) -> list[str]:
    return [word for word in words if word not in STOPWORDS]


def _runs(words: list[str], length: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + length]) for i in range(len(words) - length + 1)}


def names_title(question: str, title: str | None, common: Callable[[str], bool] = lambda word: False) -> bool:
    """Whether `question` names `title`: a quoted piece of it, four of its content words in a row, or its name.

    Its name: what stands before a colon ("DiracDiffusion: …", "Just Cluster It: …"), used whole, when it is a name
    or two to three words; or a title of two to three words without a colon, used whole. A one-word name that spells
    a common word (`common`, or a stopword: "NExT", "SCoRe", "WAVES", "AND") names it only written as the title writes
    it: "the next token" or "a higher score" name no paper, "what is drct" does.
    """
    if not title:
        return False
    title_words = _words(title)
    if len(title_words) < 2:
        return False
    abbreviated = abbreviated_title(title, question)
    if abbreviated != title and names_title(_ACRONYM_PLURAL.sub(r"\1", question), abbreviated, common):
        return True  # "which four actions can a node take in cooperative GNNs?": "Cooperative Graph Neural Networks"
    asked, quoted, asked_runs = _read(question)
    text = title_text(title)
    if any(f" {piece} " in text for piece in quoted):
        return True
    if _runs(_content(title_words), TITLE_RUN) & asked_runs:
        return True
    if ":" not in title:  # a short title used whole ("Reflective Policy Optimization") is the paper's name
        return len(title_words) <= _SHORT_TITLE and bool(_runs(title_words, len(title_words)) & _runs(asked, len(title_words)))
    raw_head = title.split(":", 1)[0].strip()
    head = _words(raw_head)
    if len(head) == 1 and is_name(raw_head) and (head[0] in STOPWORDS or common(head[0])):
        return bool(re.search(rf"(?<!\w){re.escape(raw_head)}(?!\w)", question))
    named = len(head) == 1 and (is_name(raw_head) or _capitalised_within(question, raw_head)) or 2 <= len(head) <= _SHORT_TITLE
    return named and bool(_runs(head, len(head)) & _runs(asked, len(head)))


_ACRONYM_WORD = re.compile(r"(?<![\w-])([A-Z]{2,6})s?(?![\w-])")
_ACRONYM_PLURAL = re.compile(r"(?<![\w-])([A-Z]{2,6})s(?![\w-])")


def abbreviated_title(title: str, question: str) -> str:
    """`title` with the words whose initials spell an acronym the question writes put as that acronym ("Cooperative
    Graph Neural Networks" for a question writing "GNNs": "Cooperative GNN")."""
    for acronym in dict.fromkeys(_ACRONYM_WORD.findall(question)):
        words = title.split()
        for start in range(len(words) - len(acronym) + 1):
            run = words[start : start + len(acronym)]
            if "".join(word[0] for word in run).upper() == acronym and all(word[0].isalpha() for word in run):
                title = " ".join([*words[:start], acronym, *words[start + len(acronym) :]])
                break
    return title


def names_whole_title(question: str, title: str) -> bool:
    """Whether `question` writes the whole of `title`, or of its part before a colon, two words or more, an acronym for
    words it abbreviates ("cooperative GNNs" for "Cooperative Graph Neural Networks")."""
    name = _words(abbreviated_title(title, question).split(":", 1)[0])
    return len(name) >= 2 and bool(_runs(list(_asked_singular(question)), len(name)) & {tuple(name)})


@lru_cache(maxsize=256)
def _asked_singular(question: str) -> tuple[str, ...]:
    """A question's words, its acronyms in the singular ("GNNs" as "gnn"): read once, however many titles it is
    compared with."""
    return tuple(_words(_ACRONYM_PLURAL.sub(r"\1", question)))


def _capitalised_within(question: str, word: str) -> bool:
    """Whether `question` writes `word` capitalised past its first word ("How much does Seesaw reduce …"): a word
    naming a paper ("Seesaw: Compensating for …"), not the word a sentence starts with."""
    return word[:1].isupper() and bool(re.search(rf"(?<=\S)\s+{re.escape(word)}\b", question))


_PROPER = re.compile(r"(?<=[\w,;)] )[A-Z][a-z]{2,}(?:-[A-Za-z]+)*(?![\w-])(?! [A-Z])")


def proper_words(question: str) -> list[str]:
    """Capitalised words written past a sentence's start and outside quotes ("… discover Granger-causal links"): names
    as a researcher writes them, though no inner capital or digit marks them as `names_in`'s are. A word before
    another capitalised word may be a first name ("Yoshua Bengio"), and a function word after a greeting ("Hi, Is
    there …") is none."""
    found = (word for word in _PROPER.findall(QUOTED.sub(" ", question)) if word.lower() not in STOPWORDS)
    return list(dict.fromkeys(found))


def title_text(title: str | None) -> str:
    """A title as its folded words between spaces (" don t be so negative score based … "), as `quoted_pieces` are."""
    return f" {' '.join(_words(title or ''))} "


_SHORT_NAME = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")


def short_names(question: str) -> list[str]:
    """The question's words that may be a paper's short name, as titles lead with one ("D-Flow: …", "TSLANet: …"):
    two capitals or more ("D-Flow", "DPOT", "GaLore"), or a word capitalised past the question's start ("How much does
    Seesaw reduce …"), folded as titles are ("d flow")."""
    return list(dict.fromkeys(
        " ".join(_words(word)) for word in _SHORT_NAME.findall(question)
        if sum(c.isupper() for c in word) >= 2 or _capitalised_within(question, word) or _set_apart_first(question, word)
    ))


_SET_APART = re.compile(r"\s*([A-Z][a-z][\w-]*)(?=\s*[:,]|\s+[-–—]\s|\s+(?:vs\.?|versus|and|or)\s)")


def _set_apart_first(question: str, word: str) -> bool:
    """Whether `question` opens with `word` set apart as a subject ("Reprompting vs Promptbreeder: …", "Seesaw: what
    …"), not as a sentence's first word ("Does …")."""
    first = _SET_APART.match(question)
    return first is not None and first.group(1) == word


def capitalised_terms(question: str) -> list[str]:
    """Runs of two to five capitalised words outside quotes ("How did Template Programs do …"), folded as titles are
    ("template programs"): a researcher writes a paper's coined term as its title does. A run that opens the
    question loses its first word, which is capitalised as any sentence's start is ("Does Label Smoothing …" →
    "label smoothing")."""
    text = QUOTED.sub(" ", question).lstrip()
    found = []
    for match in CAPITALISED_TERM.finditer(text):
        words = _words(match.group(0))
        if match.start() == 0:
            words = words[1:]
        if len(words) >= 2:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


# "the [up to five words] paper": what a question calls a paper, and the word it calls it
_CALLED_WORDS, _PAPER_WORD = r"(?:(?![Tt]he\b)[\w-]+,?\s+){0,4}(?![Tt]he\b)[\w-]+", r"(?:paper|work|study|article)\b"
_NICKNAMED = re.compile(rf"(?:\bthe\s+|^\s*)({_CALLED_WORDS})\s+{_PAPER_WORD}", re.I)
# Words that place a paper rather than name it: "the same paper", "the position paper".
_NOT_NICKNAMES = {"same", "first", "second", "third", "last", "other", "previous", "next", "original", "position", "whole", "entire", "following"}


def nicknamed(question: str) -> list[str]:
    """What "the super mario paper" or "the calibration bottleneck paper" calls a paper, folded as titles are, with no
    function word at either end ("the paper on …" and "the same paper" call it nothing)."""
    found = []
    for match in _NICKNAMED.finditer(question):
        words = _words(match.group(1))
        while words and (words[0] in STOPWORDS or words[0] in _NOT_NICKNAMES):
            words = words[1:]
        while words and words[-1] in STOPWORDS:
            words = words[:-1]
        if words:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


OWN_VOICE = re.compile(r"\b(?:we|our|this paper|this work)\b", re.I)  # the authors speaking of their own work
BRACKETED_NAME = re.compile(r"\((?:[A-Z][\w-]*[A-Z0-9][\w-]*|[A-Z][a-z]+[A-Z]\w*)\)")  # "(DeCoOp)", "(SUDA)": a name given in brackets
_NEAR = 6  # words between a name and the authors' own voice, for the name to be theirs ("Our detector, MorseDet")


def own_name(name: str, title: str | None, abstract: str) -> bool:
    """Whether a paper uses `name` (a name-like token, "MorseDet", "LiDAR") as a name of its own, so a question using it
    is about that paper: its title holds it, or the abstract uses it twice, gives it in brackets ("(Deep LTMLE)"), opens a sentence with
    it, calls it so ("called ALMA-R"), says what it is ("Moment-10M, a large-scale video instruction dataset"), or
    writes it a few words from the authors speaking of their work ("Our detector, MorseDet, …", "we devise
    SubLoRA"). A term a paper mentions once in passing ("tasks including RGB, depth, LiDAR, event data") names
    nothing, though over a conference that paper may be the only one to use it."""
    escaped = re.escape(name)
    title, abstract = plain_scripts(title) if title else title, plain_scripts(abstract)
    word = re.compile(rf"(?<![\w-]){escaped}(?:e?s)?(?![\w-])", re.I)
    if title and word.search(title):
        return True
    near = rf"(?:\S+\s+){{0,{_NEAR - 1}}}"
    return len(word.findall(abstract)) >= 2 or bool(
        re.search(rf"\(\s*(?:[\w-]+\s+)?{escaped}(?![\w-])|(?:^|[.!?]\s+)(?:the\s+)?{escaped}\b|\b(?:called|named|dubbed|termed)\s+{escaped}|(?<![\w-]){escaped},\s+an?\s", abstract, re.I)
        or re.search(rf"{OWN_VOICE.pattern}\W+{near}{escaped}(?![\w-])|(?<![\w-]){escaped}\W+{near}{OWN_VOICE.pattern}", abstract, re.I)
    )


def title_head(title: str | None) -> str:
    """What a title names its paper by, before its colon, folded ("D-Flow: Differentiating …" → "d flow"); "" without one."""
    return " ".join(_words(title.split(":", 1)[0])) if title and ":" in title else ""


def quoted_pieces(question: str) -> list[str]:
    """The pieces of two words or more the question quotes ("Don't be so Negative!" → "don t be so negative"): a
    quoted piece of a title names its paper."""
    return _read(question)[1]


@lru_cache(maxsize=1024)
def _read(question: str) -> tuple[list[str], list[str], set[tuple[str, ...]]]:
    """A question's words, its quoted pieces of two words or more, and its runs of content words: read once,
    however many candidate titles it is compared with."""
    asked = _words(question)
    quoted = [" ".join(_words(m.group(1) or m.group(2))) for m in QUOTED.finditer(question)]
    return asked, [piece for piece in quoted if len(piece.split()) >= 2], _runs(_content(asked), TITLE_RUN)


def _given_name(author: str) -> str:
    """The first given name of "Zhiqing Sun" or "Sun, Zhiqing"."""
    parts = (author.split(",", 1)[1] if "," in author else author).split()
    return parts[0] if parts else ""


def surname(author: str) -> str:
    """The family name of "Carl Hvarfner" or "Hvarfner, Carl"."""
    author = author.strip()
    if "," in author:
        return author.split(",", 1)[0].strip()
    parts = author.split()
    return parts[-1] if parts else ""


def author_key(name: str) -> str:
    """The names-table key of an author's surname: "@hvarfner" (no name-like token starts with "@")."""
    return "@" + _fold(surname(name))


_BY_FULL_NAME = re.compile(r"\bby\s+((?-i:[A-Z])[\w-]+)\s+((?-i:[A-Z])[\w-]{2,})\b", re.I)  # "by Eran Malach": given name and surname
# A surname cited as such: "Hvarfner et al." or "Xia, Malladi et al." (group 1: the first author), "Theis's paper",
# "by Malach" or "by Eran Malach", "Rogers and Kovaleva's paper", "the Korkmaz paper" (the first author). Surnames listed before "et al." are capitalised ("for
# instance, Li et al." lists no author).
_CITED = re.compile(
    r"\b([A-Za-z][\w-]{2,})\s+et\s+al\b|\b((?-i:[A-Z])[\w-]{2,})(?:\s*,\s*(?-i:[A-Z])[\w-]+)*(?:\s*,\s*|\s*,?\s+and\s+)(?-i:[A-Z])[\w-]+\s+et\s+al\b|\b([A-Z][\w-]{2,})(?:'s|’s)(?=\s|$)"
    r"|\bby\s+(?-i:[A-Z])[\w-]*\.?\s+((?-i:[A-Z])[\w-]{2,})\b|\bby\s+([A-Z][\w-]{2,})\b"
    r"|\b([A-Z][\w-]{2,})\s+and\s+[A-Z][\w-]+(?:'s|’s)?\s+(?:paper|work|study|method|model|article|approach)"
    r"|\b((?-i:[A-Z])[\w-]{2,})(?=(?:\s+[\w-]+){0,5}\s+(?:paper|article)\b)",  # "Korkmaz deep rl diagnosing paper": its first author
    re.IGNORECASE,  # chat-box questions are typed in lower case; a key only matters if it is an author's surname
)


# Surnames listed together, capitalised: "Petrov, Torr and Bibi", "the Lin, Dangel, Eschenhagen paper". Such a list
# names a paper only if all of them are its authors ("How do TENG and DPOT differ?" lists two methods); before
# "et al." it is a citation, whose first name is the first author's (`_CITED`).
_LISTED = re.compile(r"[A-Z][\w-]+(?:\s*,\s*(?:and\s+)?[A-Z][\w-]+|\s+and\s+[A-Z][\w-]+)+(?![\w-])(?!\s+et\s+al\b)")
_LISTED_NAME = re.compile(r"(?-i:[A-Z])[\w-]+")


@lru_cache(maxsize=1024)
def listed_authors(question: str) -> tuple[tuple[str, ...], ...]:
    """Names-table keys of each list of capitalised words the question joins with commas and "and"."""
    return tuple(tuple(author_key(name) for name in _LISTED_NAME.findall(m.group())) for m in _LISTED.finditer(question))


@lru_cache(maxsize=1024)
def _cited(question: str) -> tuple[tuple[str, bool], ...]:
    """Each surname `question` cites, as its names-table key, and whether it was cited as "Surname et al."."""
    return tuple((author_key(next(g for g in match.groups() if g)), match.lastindex in (1, 2, 7)) for match in _CITED.finditer(question))


def cited_authors(question: str) -> list[str]:
    """Names-table keys of the surnames `question` cites: "Hvarfner et al.", "Theis's paper", "by Malach"."""
    return list(dict.fromkeys(key for key, _ in _cited(question)))


def without_authors(question: str, authors: list[str]) -> str:
    """`question` less the surnames that only say whose paper it means ("Balestriero et al.", "Theis's" where they name
    one of `authors`): no abstract holds them, and they pull its sentences' match towards noise. A title the question
    quotes stays: its words are often the topic ("… "A Sober Look at LLMs for Material Discovery" …")."""
    keys = {author_key(author) for author in authors}

    def cited(match: re.Match[str]) -> str:
        return " " if author_key(next(g for g in match.groups() if g)) in keys else match.group()

    bare = _CITED.sub(cited, question)
    return re.sub(r"\s+", " ", re.sub(r"\s[.’'s]+(?=\s)", " ", bare)).strip()


# What a question calls the paper it asks about, with the separator after it: "the GNN editing paper -", "Lou, Meng and
# Ermon's discrete diffusion paper:", "Teney's selective mixup paper:"
_CALLING = re.compile(
    rf"(?:\b[Tt]he\s+{_CALLED_WORDS},?\s+|(?<![\w-])[A-Z][\w-]*(?:\s*,\s*(?:and\s+)?[A-Z][\w-]*|\s+and\s+[A-Z][\w-]*)*['’]s\s+(?:[\w-]+\s+){{0,3}})"
    rf"(?i:{_PAPER_WORD})\s*[-–—:,]?"
)


def without_calling(question: str) -> str:
    """`question` less what it calls its paper ("the GNN editing paper - what property do existing editors lack?" →
    "what property do existing editors lack?"): those words found the paper, and they pull the answer's sentences
    towards the ones saying what the paper is about rather than what is asked."""
    return re.sub(r"\s+", " ", _CALLING.sub(" ", question)).strip()


def without_titles(question: str, titles: Sequence[str | None]) -> str:
    """`question` less the titles (before their colons, three words or more) it writes out: "ConvNet vs Transformer,
    Supervised vs CLIP - what do they compare?" names one paper; its "vs" compares nothing."""
    for title in titles:
        head = (title or "").split(":", 1)[0].strip()
        if len(head.split()) >= 3:
            question = re.sub(r"\s+", " ", re.sub(re.escape(head), " ", question, flags=re.I)).strip()
    return question


def names_author(question: str, authors: list[str] | None, co_author: bool = False) -> bool:
    """Whether `question` names the paper by an author: "Surname et al." (the first author, or with `co_author` any of
    them: people cite a senior author so), "Surname's …", "by Surname", or several of its authors listed ("Petrov, Torr
    and Bibi")."""
    cited, lists = _cited(question), listed_authors(question)
    if not authors or not (cited or lists):  # most questions cite no one: no author keys to make
        return False
    keys = [author_key(author) for author in authors]
    given = {author_key(m.group(2)): _fold(m.group(1)) for m in _BY_FULL_NAME.finditer(question)}  # "by Zhiqing Sun"

    def is_author(key: str, i: int) -> bool:  # a given name the question spells must be theirs: not Jialiang Sun
        return keys[i] == key and (key not in given or _fold(_given_name(authors[i])) == given[key])

    if any(len(key) > 3 and (is_author(key, 0) or ((co_author or not et_al) and any(is_author(key, i) for i in range(len(keys)))))
           for key, et_al in cited):
        return True
    return any(set(listed) <= set(keys) for listed in lists)
