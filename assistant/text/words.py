"""Words: what counts as a name, which words say nothing about a topic, and stemming, for every rule that needs them.

Retrieval's exact-name ranking, paper labels, topic detection and the detail
rules all ask "is this token a name?"; they must agree, or a fix to one (such
as counting Moment-10M and Llama-2 as names) misses the others.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import bm25s
import Stemmer

from assistant.text.markup import GREEK_LETTERS

# A name-like token: an upper-case letter or digit after the first character (PRepBN, GPT-4, MorseDet), a
# capitalised word, a hyphen and a digit (Moment-10M, Llama-2; not "top-5", which any sentence may use), or a capital
# letter, a hyphen and a capital (C-SOBA, X-Oscar).
NAME = re.compile(r"(?<![\w-])(?:[A-Za-z][a-z]*[A-Z0-9]|[A-Z][a-z]+-(?:\d|[A-Z]{2})|[A-Z]-[A-Z])[\w-]*")  # "Grad-ECLIP", "Llama-2" too

# Acronyms that name a kind of thing (a model family, a field, a unit), never one thing: not a fact a source must hold.
GENERIC_KINDS = frozenset({
    "AI", "ML", "RL", "LLM", "LLMs", "NLP", "GPU", "GPUs", "CPU", "CPUs", "CNN", "CNNs", "RNN", "RNNs", "GNN", "GNNs", "DNN",
    "DNNs", "MLP", "MLPs", "SGD", "KL", "SOTA", "VAE", "VAEs", "GAN", "GANs", "PDE", "PDEs", "ODE", "ODEs", "SDE", "SDEs",
    "MDP", "MDPs", "ViT", "ViTs", "IID", "OOD", "API", "APIs", "NeRF", "NeRFs", "SNN", "SNNs", "MCMC", "PAC", "ReLU", "RLHF",
    "FL", "QA", "2D", "3D", "TD", "MSE",
})
# Name-like tokens that are not a paper's own method: the kinds above and the most used models and datasets.
GENERIC_NAMES = GENERIC_KINDS | {"BERT", "GPT", "LoRA", "ImageNet", "CIFAR", "CIFAR-10", "CIFAR-100", "COCO"}

# Words that every question about papers uses and that say nothing about its topic.
STOPWORDS = frozenset(
    set(bm25s.stopwords.STOPWORDS_EN)
    | {"paper", "papers", "work", "works", "study", "studies", "research", "propose", "proposes", "proposed",
       "method", "methods", "approach", "approaches", "technique", "techniques", "there", "any", "which", "what",
       "how", "does", "do", "did", "show", "shows", "new", "novel", "use", "uses", "using", "used", "way", "ways"}
    # function words bm25s's short English list lacks ("papers are about X" weighed "about" as a topic word)
    | {"about", "all", "some", "other", "others", "ones", "can", "could", "would", "should", "may", "might", "has", "have",
       "had", "been", "being", "were", "am", "from", "when", "where", "who", "whom", "whose", "why", "whether", "also",
       "than", "those", "them", "its", "our", "we", "you", "your", "i", "me", "my", "us", "so", "very", "just", "each",
       "both", "either", "via", "upon", "list", "tell", "try", "tries", "trying", "apply", "applies", "applying", "vs", "versus"}
    # "what is the algorithm for impatient arms called?": the question's form, no topic (a paper saying "called" fit it)
    | {"called"}
    # what "e.g.", "i.e.", "etc." and "et al." become as words: rare in abstracts, they weighed as a question's rarest
    # topic words (a paper citing "Puigcerver et al." used more of "which pruning method do Obando Ceron et al. use?")
    | {"eg", "ie", "etc", "et", "al"}
    # chat's fillers and pronouns of no topic ("thanks. anything on speculative decoding?" was declined for them)
    | {"anything", "something", "everything", "nothing", "anyone", "someone", "thanks", "thank", "thx", "hmm", "ok",
       "okay", "please", "hi", "hello", "hey"}
)
# Where the noun phrase a question asks about ends ("how many GPU hours does it take"): function words and light
# verbs, but not "method" or "model", which are the asked thing itself.
PHRASE_ENDS = frozenset({
    "a", "an", "the", "of", "in", "on", "for", "to", "at", "by", "per", "with", "from", "into", "than", "that", "this",
    "does", "do", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "should",
    "it", "its", "they", "their", "which", "what", "how", "when", "where", "who", "whom", "whose", "why",
    "exactly", "really", "actually", "there", "be", "been", "being", "get", "gets", "take", "takes", "took", "run", "runs",
    "use", "uses", "used", "reach", "reaches", "reached", "need", "needs", "needed", "each", "all", "any",
    "across", "over", "among", "between", "within", "during", "via", "through", "under", "against", "after", "before",
    "without", "versus", "vs", "while", "if",
})
# Words of a claim that any abstract's sentence may share with it, so they show nothing about support.
CLAIM_STOPWORDS = frozenset({
    "this", "that", "with", "from", "which", "their", "these", "paper", "method", "approach", "propose", "proposes",
    "also", "such", "into", "than", "using", "based",
})

_WORD = re.compile(r"[a-z0-9]+")


def is_name(token: str) -> bool:
    """Whether `token` is a name as a whole ("PRepBN", "NeRFs", "Llama-2"), the way `names_in` finds them."""
    return NAME.fullmatch(token) is not None


def _singular(name: str) -> str:
    """An acronym's plural is the same name: "NeRFs" and "LLMs" find "NeRF" and "LLM"."""
    return name[:-1] if len(name) > 3 and name.endswith("s") and name[-2].isupper() else name


_GREEK = "|".join(GREEK_LETTERS)
# "S^2IP-LLM" and "AD^varepsilon", as "$S^2$IP-LLM" and "AD$^\\varepsilon$" read without LaTeX
_SUPERSCRIPT = re.compile(rf"(?<![\w-])([A-Z][\w-]*)\^\{{?\\?(?:var)?({_GREEK}|[A-Za-z0-9]{{1,3}})\}}?")  # a name's, not "x^2"


def plain_scripts(text: str) -> str:
    """`text` with a short superscript inside a name written inline ("S^2IP-LLM" → "S2IP-LLM", "AD^varepsilon" →
    "ADepsilon", "Hybrid^2" → "Hybrid2"), as people type such names."""
    return _SUPERSCRIPT.sub(r"\1\2", text)


def names_in(text: str) -> list[str]:
    """The name-like tokens of `text` ("TSLANet", "CIFAR-10", "S2IP-LLM" for "S^2IP-LLM"), plurals as singulars,
    sorted: the same ties every run."""
    return sorted({_singular(name) for name in NAME.findall(plain_scripts(text))})


# "seq2seq", "text2image": X to Y in lower case, a description rather than a name ("C2S", "S2IP" are names)
TO_SHORTHAND = re.compile(r"[a-z]{2,}2[a-z]{2,}")
DESCRIPTIVE_TAIL = re.compile(r"(?:-[a-z]+)+$")  # lower-case hyphen tails that describe a name: "-based", "-style", "-capable"
_COMPOUND = re.compile(r"(?<![\w-])[A-Z][a-z]+(?:-[A-Z][a-z0-9]*)+(?![\w-])")  # "Meta-World", "Atari-Gym": names too


CAPITALISED_TERM = re.compile(r"(?<![\w-])[A-Z][a-z]+(?:[ -][A-Z][a-z]+){1,4}(?![\w-])")  # "Monte Carlo Tree Search", "Gaussian Processes"
_USED = r"(?:use[sd]?|using|on|with|mentions?|mentioning|via|employ\w*|adopt\w*|apply\w*|leverag\w*)\s+(?:the\s+)?"
_KIND_AFTER = r"\s+(?:benchmarks?|datasets?|suites?|environments?|tasks|games)\b"
_WORD_NAME = re.compile(r"(?<=\s)[A-Z][a-z]{2,}\b")  # "Atari": a name when the question ends with it or names its kind


def listed_names(text: str) -> list[str]:
    """The names a "which papers use X" question lists papers by: a name-like token or capitalised compound the
    question says is used ("use MuJoCo", "experiments on D4RL", "the Meta-World benchmark"). A compound that ends
    in a lower-case word describes something ("AI-generated content", "LLM-based agents") and names nothing."""
    candidates = {*names_in(text), *_COMPOUND.findall(text), *(_singular_phrase(term) for term in CAPITALISED_TERM.findall(text))}
    words = {word for word in _WORD_NAME.findall(text) if not any(word in other.split() for other in candidates)}
    return sorted(
        {name for name in candidates
         if not DESCRIPTIVE_TAIL.search(name)
         and re.search(rf"\b{_USED}{re.escape(name)}{_plural(name)}(?!\w)|(?<!\w){re.escape(name)}s?{_KIND_AFTER}", text, re.I)}
        | {word for word in words  # "on Atari?" or "Atari games", not "use Bayesian optimization"
           if re.search(rf"\b{_USED}{word}\s*(?:[?.!,;]|$)|(?<!\w){word}{_KIND_AFTER}", text)}
    )


_OR = re.compile(r"([\w-]+)\s+or\s+([\w-]+)", re.I)


def alternatives(text: str) -> list[str]:
    """`text` read once for each side of its first "A or B" between two words ("time series forecasting or
    classification" → "… forecasting", "… classification"): a paper doing either qualifies; `[text]` without one."""
    found = _OR.search(text)
    if found is None:
        return [text]
    head, tail = text[: found.start()], text[found.end() :]
    return [f"{head}{found.group(1)}{tail}", f"{head}{found.group(2)}{tail}"]


def _singular_phrase(term: str) -> str:
    """A capitalised term with its last word singular: "Gaussian Processes" is listed as "Gaussian Process"."""
    head, _, last = term.rpartition(" ")
    return f"{head} {singular(last).capitalize()}" if head else term


def name_pattern(name: str) -> re.Pattern[str]:
    """Where a text uses `name` as a whole word, case ignored, as `grep -iw` finds it: "MuJoCo" in "Gym-Mujoco",
    "ImageNet" in "ImageNet-1K", but not in "TinyImageNet", nor "GPT-4" in "GPT-4o"; a term of several words in
    its plural too ("Gaussian processes")."""
    return re.compile(rf"(?<!\w){re.escape(name)}{_plural(name)}(?!\w)", re.I)


def _plural(name: str) -> str:
    """The plural ending a term of several words may take in a text ("Gaussian process" → "Gaussian processes")."""
    return "(?:e?s)?" if " " in name else ""


# British spellings as American ones, so "regularisation", "behaviour", "centre" and "defence" find "regularization",
# "behavior", "center" and "defense": about one abstract in 25 of the conference writes such a word.
_BRITISH = [
    (re.compile(r"^(\w{3,})is(e|ed|es|er|ers|ing|ation|ations)$"), r"\1iz\2"),
    (re.compile(r"^(\w{3,})ys(e|ed|es|ing)$"), r"\1yz\2"),
    (re.compile(r"^(\w{2,})our(s|ed|ing|hood|hoods|al|ally)?$"), r"\1or\2"),
    (re.compile(r"^(\w{2,})([tb])re(s)?$"), r"\1\2er\3"),
]
_BRITISH_WORDS = {"defence": "defense", "defences": "defenses", "licence": "license", "licences": "licenses", "grey": "gray",
                  "programme": "program", "programmes": "programs", "offence": "offense"}


def american(word: str) -> str:
    """A lower-case word in American spelling ("optimisation" → "optimization", "neighbourhood" → "neighborhood")."""
    word = _BRITISH_WORDS.get(word, word)
    for pattern, replacement in _BRITISH:
        word = pattern.sub(replacement, word)
    return word


class _AmericanSnowball:
    """Snowball's English stemmer reading British spellings as American ones (`american`); PyStemmer's interface."""

    def __init__(self) -> None:
        self._snowball = Stemmer.Stemmer("english")

    def stemWord(self, word: str) -> str:  # noqa: N802 - the interface bm25s calls
        return self._snowball.stemWord(american(word))

    def stemWords(self, words: list[str]) -> list[str]:  # noqa: N802
        return self._snowball.stemWords([american(word) for word in words])


class Stemming:
    """One stemmer behind a lock (PyStemmer objects are not thread-safe), for bm25s and for `stem`."""

    def __init__(self) -> None:
        self.stemmer = _AmericanSnowball()
        self.lock = threading.Lock()


_shared = Stemming()


def compact(text: str) -> str:
    """Lower-case letters and digits only ("GPT-4" → "gpt4", "HPO-B" → "hpob"): names compared however they are spelled."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """The Snowball stem of a lower-case word: the same stems BM25 indexes."""
    with _shared.lock:
        return _shared.stemmer.stemWord(word)


def stems(text: str) -> list[str]:
    """The stems of `text`'s words, in order."""
    return [stem(word) for word in _WORD.findall(text.lower())]


def singular(word: str) -> str:
    """A plural noun as its singular ("benchmarks" → "benchmark", "studies" → "study"), lower-cased; short words kept."""
    word = word.lower().strip("-/")
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word
