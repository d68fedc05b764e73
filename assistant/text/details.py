"""Whether an abstract states the specific fact a question asks for: a number, or the name of a dataset, model, licence….

A question such as "which network architecture produced the expert
trajectories, and how many GPU-hours did distilling TinyImageNet take?" is
about a paper the index has, but abstracts rarely give such details. Retrieval
finds the paper either way; quoting it as if it answered would be wrong. So
the question is parsed for what it asks (`asks`), and each ask is looked for in
the abstract's sentences (`check`): a number next to the asked quantity's
words, or a proper name (CamelCase, acronym, name with digits) in a sentence
about the asked kind of thing. Anything not found makes the answer partial.

The rules read the question's wording, not a model; they were written against
the hard development file's absent-detail questions and checked for false
alarms on every answerable development question (docs/grounding.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assistant.text.acronyms import definitions, spelled_in_capitals
from assistant.text.naming import BRACKETED_NAME
from assistant.text.roles import reports_data
from assistant.text.words import (
    DESCRIPTIVE_TAIL,
    GENERIC_KINDS,
    PHRASE_ENDS,
    STOPWORDS,
    TO_SHORTHAND,
    compact,
    names_in,
    plain_scripts,
    singular,
    stem,
)

# What kind of named thing an ask is about, by the noun asked for; a sentence about that kind holds one of these words.
_NAME_KINDS: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset", "data", "benchmark", "corpus", "corpora", "task", "experiment", "evaluat", "environment", "suite", "test"),
    "model": ("model", "llm", "backbone", "architecture", "network", "encoder", "decoder", "agent", "transformer", "net"),
    "licence": ("licen",),
    "company": ("company", "firm", "platform", "provider", "partner"),
    "language": ("language",),
    "hardware": ("gpu", "tpu", "hardware", "cpu", "accelerator", "fpga", "board", "chip"),
    "attribute": ("attribute", "feature", "variable"),
    "domain": ("domain", "application", "field", "area"),
    "software": ("librar", "package", "toolkit", "software"),
    "game": ("game",),
    "task": ("task", "problem", "application", "benchmark", "experiment", "evaluat"),
}
_NAME_NOUNS = {
    "dataset": "dataset", "datasets": "dataset", "benchmark": "dataset", "benchmarks": "dataset", "corpus": "dataset", "corpora": "dataset",
    "game": "game", "games": "game", "environment": "dataset", "environments": "dataset",
    "model": "model", "models": "model", "llm": "model", "llms": "model", "backbone": "model", "backbones": "model",
    "architecture": "model", "architectures": "model", "network": "model", "networks": "model", "encoder": "model", "decoder": "model",
    "licence": "licence", "license": "licence", "licences": "licence", "licenses": "licence",
    "company": "company", "companies": "company", "firm": "company",
    "language": "language", "languages": "language",
    "gpu": "hardware", "gpus": "hardware", "hardware": "hardware", "accelerator": "hardware", "fpga": "hardware", "board": "hardware",
    "chip": "hardware", "chips": "hardware", "cpu": "hardware", "tpu": "hardware",
    "attribute": "attribute", "attributes": "attribute",
    "domain": "domain", "domains": "domain", "area": "domain", "areas": "domain", "application": "domain", "applications": "domain",
    "library": "software", "libraries": "software", "package": "software", "packages": "software", "toolkit": "software",
    "toolkits": "software", "software": "software", "task": "task", "tasks": "task",
}
# Kinds of name an abstract gives where it reports its experiments ("An empirical evaluation on SysAdmin and …").
_EVALUATED_ON = {"dataset", "domain", "task"}
_LISTED_AS = {"task": ("problem", "application")}  # other words a list of such things ends or starts with
# A task named by the activity it is, a noun ending as activities do: "the spoken command classification task",
# "question answering tasks"; not "many / downstream tasks" or "an important task"
_NAMED_TASK = re.compile(
    r"\b(?!(?:following|remaining|existing|corresponding|underlying|challenging|increasing|varying|competing|"
    r"demanding|interesting|promising|outstanding)\b)[a-z][\w-]*(?:tion|sion|ing|ment|sis)\s+tasks?\b", re.I)
# … or by what a model is trained or applied for: "processed by a transformer model trained for object and gesture
# recognition"; not "used for training"
_TRAINED_FOR = re.compile(
    r"\b(?:trained|used|applied|tailored|fine-?tuned|deployed)\s+(?:for|to)\s+"
    r"(?:(?!(?:on|in|with|of|from|by|at|training|learning)\b)[a-z][\w-]*\s+){0,3}"
    r"(?!(?:training|learning|testing|pretraining|fine-?tuning|evaluation|inference|optimization)\b)[a-z][\w-]*(?:tion|sion|ing|sis)\b", re.I)
# Quantities asked for by name ("what BLEU score", "what accuracy"); the word itself must sit beside the number.
_METRICS = (
    "ratio", "accuracy", "bleu", "rouge", "psnr", "ssim", "f1", "auc", "auroc", "score", "error", "perplexity", "speedup", "speed-up",
    "cost", "fee", "fees", "price", "runtime", "latency", "throughput", "size", "sizes", "fraction", "percentage", "proportion",
    "rate", "reward", "improvement", "gain", "memory", "fid", "fvd", "mos", "wer", "cer", "map", "miou", "iou", "rmse", "mae",
    "flops",
)
# … and those asked for only as the phrase's last word: "what context length", not "the 'length complexity' measure".
_HEAD_METRICS = ("length", "resolution", "horizon")
# Words between "what" and the asked thing that say nothing of it ("what was the exact MOS value").
_LEADING_FILLER = re.compile(r"^\s*(?:(?:about|its|their|was|were|is|are|the|a|an|exact|exactly|precise|precisely|specific|final|reported)\s+)+", re.I)
# Whose the asked thing is ("what is HALC's speedup"): the owner is the paper or its method, not what is asked.
_OWNER = re.compile(r"^\s*(?:the\s+)?(?:(?!(?:is|are|was|were|does|do|did|of|in|for|on)\b)[\w\-]+\s+){0,3}[\w\-]+(?:'s|’s)\s+", re.I)
# Nouns that only say what is measured ("how much search compute"): the words before them name the thing.
_MEASURES = {"compute", "time", "budget", "resources", "resource", "amount", "overhead", "effort"}
# How an abstract states a change the question names otherwise: "what gain" is stated as "improves … by 6.77%".
_SAID_AS = {
    "gain": ("improv", "increas", "boost", "outperform"), "improvement": ("improv", "increas", "boost", "gain", "outperform"),
    "speedup": ("faster", "speed", "accelerat"), "speed-up": ("faster", "speed", "accelerat"),
    "cost": ("reduc", "saving", "cheaper"),
    # "how much better / faster / smaller than …" is stated as the change: "a 1.72× improvement over …", "2× speedup"
    "better": ("improv", "outperform", "gain", "surpass", "higher"), "faster": ("speed", "accelerat"),
    "cheaper": ("reduc", "saving", "cost"), "smaller": ("reduc", "compress", "fewer"),
}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-/]*|\d[\d,.]*")
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9\-/])(?:[~≈<>]?\d+(?:[.,]\d+)*(?:\s?[-–]\s?\d+(?:[.,]\d+)*)?\s?(?:%|×|x\b|-fold|\s?(?:k|K|M|B)\b)?)(?![A-Za-z]*-?\d)"
    r"|\b(?:widetilde|tilde|mathcal)?[OΘΩÕ]\([^()]{1,30}\)"  # a rate or complexity: "within O(ε^-2) iterations", "Õ(log K)"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|fifty|hundred|hundreds|thousand|thousands|million|millions|billion|billions|half|double|twice|dozen)\b",
    re.I,
)
# A rate stated in words: "achieving a parametric rate of convergence", "converges at a linear rate"
_RATE_IN_WORDS = re.compile(
    r"\b(?:parametric|linear|sublinear|superlinear|exponential|polynomial|quadratic|geometric|logarithmic|optimal)\s+"
    r"(?:convergence\s+)?rates?\b", re.I)
_LICENCE = re.compile(r"\b(?:MIT|Apache|GPL|LGPL|AGPL|BSD|CC[- ]BY(?:-\w+)*|Creative Commons)\b|\b[Ll]icen[cs]ed?\b")
_SENTENCE_OPENERS = {"We", "Our", "In", "The", "This", "These", "To", "For", "It", "As", "By", "On", "With", "A", "An", "However", "Finally", "Moreover", "Experiments", "Extensive", "Code", "Furthermore", "Additionally", "Specifically", "Unlike", "Existing", "Recent", "Although", "While", "Using"}


@dataclass(frozen=True)
class Ask:
    """One fact a question asks for: a `number` (how many / what score) or a `name` of some `kind`."""

    kind: str  # "number", "called" (the name a paper gives it), "listed" (a few things counted), "mention" (a name the
    # question uses), or a key of _NAME_KINDS
    words: tuple[str, ...]  # the question's words for the asked thing, lower-case ("gpu-hours",) ("bleu", "score")
    phrase: str  # as the question put it, for the answer's "does not state …"
    count: bool = False  # "how many X": a number of X, not any number in a sentence about X
    against: bool = False  # "which model does it outperform": a name the paper sets its own against
    verbs: tuple[str, ...] = ()  # what the question says the thing does ("which model powers it": "power"), singular stems


# Where a direct question starts: the beginning, after punctuation, a dash ("ICV paper - what tasks …") or a
# conjunction, maybe after a preposition.
_ASK_START = re.compile(
    r"(?:^|[,;:?.(]\s*|\s[-–—]+\s+|\b(?:and|or|but)\s+)(?:(?:in|for|on|with|at|of|from|by|under|across|over|among|within|during|per)\s+)?"
    r"(how\s+(?:many|much|often|long)|which|what)\b", re.I
)
# "What do they conclude about the cost of privacy?" asks for a finding, not an amount.
_FINDING_VERBS = {"conclude", "concluded", "find", "found", "say", "said", "show", "showed", "argue", "argued", "claim", "claimed", "report", "reported"}
# What "how long" with nothing after it ("how long does X-Oscar take?") is stated in: a number beside one of these, not
# any number ("3D", a year).
_ACRONYM_WORD = re.compile(r"[A-Z]{2,}s?")  # "BBO", "GPs", "LLMs"
_DURATION = ("second", "sec", "minut", "hour", "day", "week", "month", "step", "epoch", "iteration", "time", "faster", "speed", "token", "length", "long")
_WHICH_ONES = re.compile(r"\b(?:and|but)\s+which\s+ones?\W*$", re.I)
_UNIT = re.compile(r"\bin\s+(seconds|minutes|hours|days|milliseconds|gigabytes|megabytes|dollars)\b", re.I)
# "which model does it outperform / beat / compare against": the stating sentence sets the paper against that name
_AGAINST_ASKED = re.compile(r"\b(?:outperform\w*|beat|beats|surpass\w*|compared?|against|better\s+than)\b", re.I)
_SETS_AGAINST = re.compile(
    r"\b(?:outperform\w*|beat|beats|beating|surpass\w*|better\s+than|exceed\w*|compared?\s+(?:to|with)|against|"
    r"competitive\s+with|over\s+(?:the\s+)?(?:state|baselines?|prior|previous|existing))\b", re.I
)
# Verbs any sentence may use, so they say nothing of what a named thing does ("which model do they use").
_PLAIN_VERBS = {"does", "have", "use", "uses", "used", "using", "make", "makes", "take", "takes", "give", "gives", "need", "needs", "work", "works", "their", "they",
                "this", "that", "paper", "authors", "with", "from"} | STOPWORDS
_AUXILIARIES = {"do", "does", "did", "is", "are", "was", "were", "can", "could", "will", "would", "has", "have", "had"}
_PRONOUNS = {"they", "it", "we", "you", "he", "she", "this", "these"}
# What follows a kind of thing when a sentence lists its instances: "domains: computer vision, …", "such as scikit-learn"
_LISTED_AFTER = re.compile(
    r"^\s*(?::\s*[\w-]+|,?\s+(?:including|such\s+as|like|e\.g\.,?|namely):?\s+[\w-]+"
    r"|\s+(?:on|in|to)\s+(?:[a-z][\w-]*\s+){0,3}[a-z][\w-]*(?:,\s+(?:[a-z][\w-]*\s+){0,3}[a-z][\w-]*)*,?\s+(?:and|or)\s+[a-z])", re.I)
# ("applications on domain adaptation and missing data imputation": a coordinated list after the kind)
# … and what precedes it when the list ends with the kind: "… on image restoration, enhancement and denoising tasks"
_LISTED_BEFORE = re.compile(r",\s+(?:[\w-]+\s+){0,3}(?:and|or)\s+(?:(?!(?:that|which|the|a|an|of|to|in|on|for|with|by|are|is|was|were)\b)[\w-]+\s+){1,3}$", re.I)
_CALLED_WORD = r"\b(?:called|named|dubbed|termed)"
_CALLED = re.compile(rf"{_CALLED_WORD}(?:\s+(?:in|by|within)\s+(?:the|their|this|that)\b[^,;]*)?\s*$", re.I)  # "… called in the X paper"
_NAME_OF = re.compile(r"\W*(?:s|is|are|was|were)?\s*(?:the\s+)?names?\s+of\b", re.I)
NAME_ASKED = re.compile(rf"{_CALLED_WORD}(?=\W*$)", re.I)  # "what is the unified model called?": the question's form, no topic
# Where an abstract gives a thing its name: "denoted as MobileLLM-LS", "called PDHG-Net", "Reward Model (URM)"
_GIVES_NAME = re.compile(
    rf"\b(?:(?:called|named|dubbed|termed|coined|denoted)(?:\s+as)?|referred\s+to\s+as)\s+(?:\(?[A-Z]|[a-z]+-[a-z])|{BRACKETED_NAME.pattern}"
)  # "… dubbed as kernel-graph alignment" too
# "which three pretraining methods …": a few things of a kind, stated by a sentence listing them ("methods, including
# 2D graph masking, 2D-3D contrastive learning, and 3D denoising"); a paper may list them in its title, so never missing
_FEW = r"(?:two|three|four|five|[2-5])"
_COUNTED_THINGS = re.compile(rf"\s*{_FEW}\s+(?:[\w-]+\s+){{0,2}}?([a-z]*[a-rt-z]s)\b", re.I)
_ENUMERATES = re.compile(r"(?:including|such\s+as|namely|e\.g\.|:)\s*,?\s+[^.;]*?,?\s+(?:and|or)\s+", re.I)
_NEVER_MISSING = {"called", "listed"}
_PAPERS = {"papers", "works", "studies", "articles"}  # "which two papers …" asks for papers, not a paper's parts
_CLAUSE_END = re.compile(r"[?.;,]|\s+and\s+", re.I)
_NEAR_WORDS = 6  # a device and its name ("a Xilinx Zynq-7020 FPGA board") sit within this many words
_VERBISH = re.compile(r"^(?:[a-z]+ed|define|defines|acts?|produce[sd]?|generate[sd]?|supplie[sd]|make[s]?|give[s]?)$")


def _cue(text: str, stop_at: set[str] | None = None) -> list[str]:
    """The noun phrase `text` starts with: up to six words, ending at a function word, a verb, or a word in `stop_at`."""
    cue: list[str] = []
    words = _WORD.findall(text)[:6]
    for i, word in enumerate(words):
        lower = word.lower()
        if lower in PHRASE_ENDS or (cue and _VERBISH.match(lower) and lower not in _NAME_NOUNS):
            break
        cue.append(word)
        following = words[i + 1].lower() if i + 1 < len(words) else ""
        if stop_at and lower in stop_at and following not in stop_at:
            break
    while cue and cue[-1].lower() in ("and", "or"):
        cue.pop()
    return cue


def _heads(cue: list[str]) -> tuple[str, ...]:
    """The nouns a quantity is counted in: the last word of each and/or-joined part, last piece of a hyphenated word."""
    parts, current = [], []
    for word in cue:
        if word.lower() in ("and", "or"):
            parts.append(current)
            current = []
        else:
            current.append(word)
    parts.append(current)
    return tuple(re.split(r"[-/]", part[-1].lower())[-1] for part in parts if part)


def _verb_after(words: list[str], at: int) -> tuple[str, ...]:
    """What the question says the asked thing does: the word after it ("which model powers it"), or past an auxiliary
    and a pronoun or name ("which LLM do they / does INSTINCT optimize …"); none past a longer subject ("which LLMs did
    the in-context unlearning paper test?") or for a verb any sentence may use."""
    if at < len(words) and words[at].lower() in _AUXILIARIES:
        at += 1
        if at >= len(words) or not (words[at].lower() in _PRONOUNS or any(c.isupper() for c in words[at])):
            return ()
        at += 1
    if at >= len(words) or len(words[at]) <= 3 or words[at].lower() in _PLAIN_VERBS or not words[at].islower():
        return ()
    return (singular(words[at]),)


def asks(question: str) -> list[Ask]:
    """The specific facts `question` asks for, in order; empty for questions about what a paper does or whether work exists."""
    found: list[Ask] = []
    for match in _ASK_START.finditer(question):
        wh = re.sub(r"\s+", " ", match.group(1).lower())
        rest = question[match.end() :]
        if not wh.startswith("how"):
            rest = _OWNER.sub("", _LEADING_FILLER.sub("", rest))
        raw = _WORD.findall(rest)[:8]
        words = [w.lower() for w in raw]
        if wh.startswith("how"):
            cue = _cue(rest)
            if cue and cue[0].lower() == "of":  # "how much of the teacher's performance": a share, any number states it
                cue = []
            heads = _heads(cue) or (_DURATION if wh == "how long" else ())
            if heads and heads[-1] in _MEASURES:  # "how much search compute": the measure says little, what it measures does
                heads += tuple(w.lower() for w in cue[:-1])
            found.append(Ask("number", heads, " ".join([wh, *cue]), count=wh.endswith("many") and bool(cue)))
            continue
        window = words[:4]
        clause = _CLAUSE_END.split(rest, maxsplit=1)[0]
        if _CALLED.search(clause) or wh == "what" and _NAME_OF.match(clause):  # "what is the resulting model called?", "what's the name of the
            # algorithm …?": the name the paper gives it, not an amount
            named = tuple(w for w in (w.lower() for w in _WORD.findall(_NAME_OF.sub(" ", clause)))
                          if len(w) > 3 and w not in STOPWORDS and not _CALLED.match(w))
            found.append(Ask("called", named, "what it is called"))
            continue
        head = [w.lower() for w in _cue(rest)][-1:]
        metric = next((w for w in window[:3] if w in _METRICS or (w in _HEAD_METRICS and head == [w])), None)
        noun = next((w for i, w in enumerate(window) if w in _NAME_NOUNS and not (window[i + 1 :] and window[i + 1] in _NAME_NOUNS)), None)
        if metric:
            cue = _cue(rest, stop_at={*_METRICS, *_HEAD_METRICS})
            tail = rest.lower().split(metric, 1)[-1]
            if metric in ("fraction", "percentage", "proportion") and tail.lstrip().startswith("of "):
                cue += _cue(tail.lstrip()[3:])
            found.append(Ask("number", tuple(dict.fromkeys([*_heads(cue), *(w.lower() for w in cue if w.lower() not in _METRICS), metric])), " ".join([wh, *cue])))
        elif noun and not set(window[: window.index(noun)]) & {"paper", "papers", "work", "works", "method", "methods", "approach", "approaches"}:
            if PHRASE_ENDS & set(window[: window.index(noun)]):
                continue  # "in which the model …": a relative clause, not a question about a model
            cue = _cue(rest, stop_at=set(_NAME_NOUNS))
            against = bool(_AGAINST_ASKED.search(" ".join(raw)))
            verbs = _verb_after(raw, window.index(noun) + 1)
            found.append(Ask(_NAME_NOUNS[noun], tuple(w.lower() for w in cue), " ".join([wh, *cue]), against=against, verbs=verbs))
        elif wh == "what" and (measure := next((w for w in window[:3] if w in _MEASURES - {"time"}), None)):  # "what compute budget"
            cue = _cue(rest)
            found.append(Ask("number", tuple(dict.fromkeys([*(w.lower() for w in cue), measure])), " ".join([wh, *cue])))
        elif wh == "what" and set(words) & {"cost", "costs", "fee", "fees", "price"} and not set(words) & _FINDING_VERBS:
            found.append(Ask("number", ("cost", "fee", "price", "dollar", "usd"), "what it costs"))
        elif (counted := _COUNTED_THINGS.match(rest)) and counted.group(1).lower() not in _PAPERS:  # "which three methods"
            found.append(Ask("listed", (singular(counted.group(1).lower()),), f"{wh} {counted.group(0).strip()}"))
    if _WHICH_ONES.search(question) and found and found[-1].count:  # "how many benchmarks … and which ones?": them named too
        noun = next((w for w in found[-1].words if w in _NAME_NOUNS), None)
        if noun:
            found.append(Ask(_NAME_NOUNS[noun], (noun,), f"which {noun}"))
    for unit in dict.fromkeys(u.lower() for u in _UNIT.findall(question)):  # "what running time in seconds": an amount of them
        if not any(unit in ask.words for ask in found):
            found.append(Ask("number", (unit,), f"how many {unit}"))
    return found


_PROPOSES = re.compile(r"\b(?:propos|introduc|present|develop|design)\w*", re.I)
_COINED = re.compile(r"\b(?:termed|called|named|dubbed|coined)\s+(?:the\s+|as\s+)?([A-Z][\w\-]*)")


def _names(sentence: str, ignore: set[str]) -> list[str]:
    """Proper names in a sentence (CamelCase, acronyms, words with digits, capitalised words past the first), less `ignore`."""
    names = []
    tokens = sentence.split()
    for position, token in enumerate(tokens):
        after_marker = position > 0 and tokens[position - 1].endswith((")", ":", "."))  # "2) Selecting …" starts a clause
        token = re.sub(r"['’]s$", "", token.strip(".,;:()[]\"'“”"))  # "the LLM's capacity" names no model but "LLM"
        if len(token) < 2 or "http" in token or token.rstrip("s") in ignore or token.split("-")[0] in ignore or token in GENERIC_KINDS:
            continue
        inner_upper = any(c.isupper() for c in token[1:])
        has_digit = any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
        capitalised = token[0].isupper() and position > 0 and not after_marker and token not in _SENTENCE_OPENERS
        if inner_upper or has_digit or capitalised:
            names.append(token)
    return names


def _not_answers(question: str, sentences: list[str]) -> set[str]:
    """Names that cannot answer "which X": those the question uses, the paper's own coined names, generic acronyms.

    An acronym spelled out in lower case ("vision-language model (VLM)") names a
    kind of thing, not one; one spelled out in capitals ("Time Series Lightweight
    Adaptive Network (TSLANet)") or introduced with "termed"/"called" is the
    paper's own method; a name used three times or more is too.
    """
    ignore = {t.strip(".,;:()[]\"'“”?").split("-")[0] for t in question.split()} - {""}
    counts: dict[str, int] = {}
    for sentence in sentences:
        own = not reports_data(sentence) or bool(_PROPOSES.search(sentence))  # "experiments in the Arcade Learning
        # Environment (ALE)" name the data, not the paper's method; "graph neural networks (GNNs)" is a kind anywhere
        ignore.update(acronym for acronym, long_form in definitions(sentence) if own or not long_form[:1].isupper())
        if own:
            ignore.update(word for long_form in spelled_in_capitals(sentence) for word in long_form.split())
        ignore.update(_COINED.findall(sentence))
        for name in _names(sentence, set()):
            counts[name] = counts.get(name, 0) + 1
    return ignore | {name for name, n in counts.items() if n >= 3}


def _mentions(sentence: str, stems: set[str]) -> bool:
    """Whether a word of `sentence` starts with one of `stems`, or is one of those of three letters or fewer, or its
    plural ("sec" is not "section", "map" not "mapping"; "gpus" is "gpu")."""
    words = {singular(w) for w in re.findall(r"[a-z0-9]+", sentence.lower())}
    return any(any(w.startswith(s) if len(s) > 3 else w in (s, f"{s}s") for w in words) for s in stems)


def _counts(sentence: str, stems: set[str]) -> bool:
    """Whether the sentence gives a count of the stemmed thing: a number (not a percentage) a few words before it."""
    for match in _NUMBER.finditer(sentence):
        if "%" in match.group():
            continue
        following = sentence[match.end() : match.end() + 40]
        if _mentions(following, stems):
            return True
    return False


def _stating(ask: Ask, sentences: list[str], ignore: set[str]) -> int | None:
    """The position of the sentence that states `ask` best (most names of the asked kind; the first of equals), or None."""
    stating = [(i, _weight(ask, s, ignore)) for i, s in enumerate(sentences) if _states(ask, s, ignore)]
    return max(stating, key=lambda found: (found[1], -found[0]))[0] if stating else None


def _weight(ask: Ask, sentence: str, ignore: set[str]) -> tuple[bool, int]:
    """How much of an answer a stating sentence holds: for "which datasets / domains", whether it speaks of experiments
    (a method sentence names its parts too: "Monte Carlo Tree Search"), then its names ("QuALITY, NarrativeQA and QMSum")."""
    if ask.kind == "number":  # a number counting the asked thing ("in 8 sec") before one merely beside it ("44.1kHz … long-form")
        return (False, 2 if _counts(sentence, _number_stems(ask)) else 1)
    if ask.kind == "called":  # the naming sentence about the thing asked: "The resultant models, denoted as MobileLLM-LS"
        return (False, sum(_mentions(sentence, {singular(w)[:6]}) for w in ask.words))
    return (ask.kind in _EVALUATED_ON and reports_data(sentence), len(set(_names(sentence, ignore))))


def _number_stems(ask: Ask) -> set[str]:
    """The words a sentence stating an asked number names it by: the asked words' stems, and how papers also say them."""
    stems = {singular(w) for w in ask.words if len(w) > 2} | {said for w in ask.words for said in _SAID_AS.get(w, ())}
    return stems | {w[:-1] for w in stems if len(w) == 4 and w.endswith("s") and not w.endswith("ss")}  # "bits": "a 2bit cache"


def _states(ask: Ask, s: str, ignore: set[str]) -> bool:
    if ask.kind == "called":
        return bool(_GIVES_NAME.search(s))
    if ask.kind == "listed":
        return _mentions(s, set(ask.words)) and bool(_ENUMERATES.search(s))
    if ask.kind == "number":
        stems = _number_stems(ask)
        if not stems:
            return bool(_NUMBER.search(s))
        if stems & {"parameter", "param"}:
            stems |= {"billion", "million"}
        if ask.count:
            return _counts(s, stems)
        return bool(_NUMBER.search(s)) and _mentions(s, stems) or "rate" in ask.words and bool(_RATE_IN_WORDS.search(s))
    if ask.kind == "licence":
        return bool(_LICENCE.search(s))
    if ask.kind == "mention":
        return compact(ask.words[0]) in compact(plain_scripts(s))
    if ask.against and not _SETS_AGAINST.search(s):
        return False
    kinds = {_NAME_KINDS[ask.kind][0], *_LISTED_AS.get(ask.kind, ())} | {singular(w) for w in ask.words if len(w) > 3}
    kind_words = list(re.finditer(rf"\b(?:{'|'.join(map(re.escape, kinds))})\w*", s, re.I))
    if any(_LISTED_AFTER.search(s[m.end() :]) or _LISTED_BEFORE.search(s[: m.start()]) for m in kind_words):
        return True  # "spanning 3 research domains: computer vision, …", "libraries such as scikit-learn"
    if ask.kind == "task" and (_NAMED_TASK.search(s) or _TRAINED_FOR.search(s)):
        return True
    if ask.kind in _EVALUATED_ON and not reports_data(s):  # "the Weisfeiler-Leman test" names no data it was tested on
        return False
    stems = set(_NAME_KINDS[ask.kind]) | {singular(w) for w in ask.words if w not in _NAME_NOUNS and len(w) > 3}
    if ask.kind == "hardware":  # the name is the device's own ("8 NVIDIA A100 GPUs"), not one elsewhere in the sentence
        return any(_mentions(" ".join(near), stems) and _names(" ".join(near), ignore) for near in _windows(s.split(), _NEAR_WORDS))
    return (_mentions(s, stems) or bool(ask.verbs) and _mentions(s, {stem(v) for v in ask.verbs})) and bool(_names(s, ignore))


def _windows(words: list[str], size: int) -> Iterator[list[str]]:
    """Every run of `size` consecutive words (the whole list when shorter)."""
    for start in range(max(1, len(words) - size + 1)):
        yield words[start : start + size]


@dataclass
class Findings:
    """What an abstract gives for each ask: `stated` sentence positions, and the asks it does not state."""

    stated: list[int]
    missing: list[Ask]


def check(question: str, question_asks: list[Ask], sentences: list[str]) -> Findings:
    """Look for each ask of `question` in an abstract's `sentences`."""
    ignore = _not_answers(question, sentences) if question_asks else set()
    found = [(ask, _stating(ask, sentences, ignore)) for ask in question_asks]
    # a name the abstract does not give may be the title's: "what is it called" makes no answer partial
    return Findings(sorted({i for _, i in found if i is not None}), [ask for ask, i in found if i is None and ask.kind not in _NEVER_MISSING])


# A number precise enough that a sentence writing it is the one a question quoting it asks about ("which model gets up
# to 2.19% better?"): with a decimal point, a percent or times sign, three digits, or two digits with a unit ("95
# seconds", written "95 sec" in the abstract); not "2 models" or "top-5".
_PRECISE_NUMBER = re.compile(
    r"(?<![\w.\-])(\d+[.,]\d+|\d+(?=\s?(?:%|×|x\b))|\d{3,}|\d{2}(?=\s?(?:sec|seconds?|s|ms|min|minutes?|hours?|h|days?|"
    r"[kMG]Hz|Hz|[KMGT]B|dB|epochs?|layers?|languages?)\b))(?![\w.\-]*\d)")


def quoting(question: str, sentences: list[str]) -> list[int]:
    """The positions of the sentences that write a precise number the question quotes."""
    quoted = set(_PRECISE_NUMBER.findall(question))
    return [i for i, sentence in enumerate(sentences) if quoted & set(_PRECISE_NUMBER.findall(sentence))] if quoted else []


def quotes_number(question: str, text: str) -> bool:
    """Whether `text` writes a precise number the question quotes ("… generate 95 seconds of audio?")."""
    return bool(quoting(question, [text]))


# A question about several papers ("how do X and Y differ?"); "compare with/to/against" a baseline is about one.
# The words that set things side by side; not "contrastive", "differentiable", "comparable".
COMPARING = r"compar(?:e|es|ed|ing|ison|isons)|differ(?:s|ed|ing|ence|ences)?|different(?=\s+from)|contrast(?:s|ed|ing)?"
_COMPARES = re.compile(
    rf"\b(?:(?:{COMPARING})\b(?! with| to| against)|both|versus|vs|whereas|papers|works|methods)\b"
    r"|\bpaper\s+(?:and|with)\s+(?:the|their)\s+[^?]{1,80}?\bpaper\b"  # "how do the X paper and the Y paper use Z?"
    r"|^\s*(?:how|why|what|where|which\s+[\w-]+)\s+do\s+(?!(?:they|you|we|i|these|those|their|its)\b)[^?,]{1,80}?\s+and\s+",  # "how do OSSCAR and SFC …?"
    re.I,
)


# "which three pretraining methods does UniCorn unify?": a paper's few parts, counted, are no papers asked for or compared
COUNTED_PARTS = re.compile(rf"\b{_FEW}\s+(?:[\w-]+\s+){{0,2}}?(?:methods|approaches|techniques)\b", re.I)


def compares(question: str) -> bool:
    """Whether `question` is about several papers side by side ("how do X and Y differ?", "which papers…")."""
    return bool(_COMPARES.search(COUNTED_PARTS.sub(" ", question)))


_COMPARISON_WORD = re.compile(rf"\b(?:{COMPARING}|versus|vs)\b", re.I)


def speaks_of_comparing(question: str) -> bool:
    """Whether `question` uses a word of comparison at all ("how does it compare with TopDis?"), which with one paper
    named besides the conversation's sets the two side by side."""
    return bool(_COMPARISON_WORD.search(question))


def unmentioned_names(question: str, paper_text: str, other_papers: Sequence[str] = (), unknown: Sequence[str] = ()) -> list[Ask]:
    """The names the question itself uses ("on HPO-B", "with CLIP ViT-L/14") that the paper's title and abstract never
    mention: asked about that paper, each is a detail its abstract does not give ("Does X beat its baselines on HPO-B?").

    `other_papers`: the texts of other papers the question names ("TENG and DPOT"): their names are theirs, not asks.
    `unknown`: names the question uses that no paper of the index uses ("benchmarks like Cora"), unmentioned too.
    """
    text, others = compact(plain_scripts(paper_text)), [compact(plain_scripts(other)) for other in other_papers]
    spelled = initials(paper_text, shortest=2)
    text += " " + " ".join(i for i in spelled if len(i) > 2)  # "MCTS" where the abstract writes "Monte Carlo tree search"
    plain = sorted({DESCRIPTIVE_TAIL.sub("", _versioned(name, question)) for name in names_in(question)})  # "GSM8K-based" is about GSM8K
    names = {name: compact(name) for name in plain}
    found = [] if compares(question) else [  # "compare X and Y": each name is its own paper's, not a detail of one
        name for name, folded in names.items()
        if len(folded) > 2 and name not in GENERIC_KINDS  # two letters ("LP", "BO") name a kind of thing, not one
        and not _written(name, folded, text) and not any(folded in other for other in others)
        and not _written_out(name, spelled)  # "GPs" for "Gaussian process models"
    ]
    unknown = [name for name in unknown if not _written_out(name, spelled)]  # "BBO": no paper writes it, this one writes
    # "black-box optimization"
    return [Ask("mention", (name.lower(),), f"anything about {name}") for name in dict.fromkeys([*found, *unknown])]


def _written_out(name: str, spelled: set[str]) -> bool:
    """Whether `name` is an acronym, in the singular or the plural (`names_in` keeps "GPs"), whose letters begin a run of
    words the paper writes (`spelled`, its `initials`)."""
    return bool(_ACRONYM_WORD.fullmatch(name)) and name.removesuffix("s").lower() in spelled


def initials(text: str, longest: int = 6, shortest: int = 3) -> set[str]:
    """The acronyms runs of `text`'s words spell by their first letters ("Monte Carlo tree search" → "mcts", "mixture of
    experts" → "moe"), `shortest` to `longest` letters: a question's acronym for what an abstract writes out."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {"".join(w[0] for w in words[i : i + n]) for n in range(shortest, longest + 1) for i in range(len(words) - n + 1)}


def _written(name: str, folded: str, text: str) -> bool:
    """Whether the compacted `text` writes `name`: "text2image" as "text-to-image" too."""
    return folded in text or bool(TO_SHORTHAND.fullmatch(name)) and folded.replace("2", "to", 1) in text


def _versioned(name: str, question: str) -> str:
    """`name` with the version the question writes after a dot, which names stop at: "OPT-1" → "OPT-1.3B", "GPT-3" → "GPT-3.5"."""
    found = re.search(rf"(?<![\w-]){re.escape(name)}(?:\.\d[\w-]*)+", question)
    return found.group() if found else name


def listed(phrases: list[str], conjunction: str = "or") -> str:
    """Phrases as one: asks for "does not state …" ("which network architecture or how many GPU-hours")."""
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + f" {conjunction} " + phrases[-1]


# What a question asks of a paper's record rather than its abstract: who wrote it, how it was presented, where to read it.
_RECORD_ASKS: dict[str, re.Pattern[str]] = {
    "authors": re.compile(
        r"\bwho\s+(?:wrote|writes|authored|is the author|are the authors|were the authors|proposed|developed|made|is behind|are behind)\b"
        r"|\b(?:which|what|list the|name the) authors\b(?!\s+(?:of|find|found|show|argue|propose|claim|say|use|study))"
        r"|\bauthors?(?:'s?)? (?:names?|list)\b|\bby whom\b",
        re.I,
    ),
    "status": re.compile(
        r"\b(?:is|was)\s+(?:it|this|that|the paper|the [\w-]+ paper|(?-i:[A-Z][\w-]*))\s+(?:an?\s+)?(?:oral|spotlight|poster)\b"
        r"|\b(?:is|was)\s+(?!there\b)[^?.]{1,80}?\s(?:paper|work|study)\s+(?:an?\s+)(?:oral|spotlight|poster)\b"  # "is Xu and Zeng's DGP paper an oral?"
        r"|\b(?:oral|spotlight|poster) or (?:an? )?(?:oral|spotlight|poster)\b|\b(?:presentation|acceptance) (?:type|status|format)\b",
        re.I,
    ),
    "link": re.compile(
        r"\b(?:url|pdf|openreview)\b|(?:^\W*|\b(?:the|a|its|their)\s+)links?\b(?=\s*(?:[?.!]|$|to\b|for\b))"
        r"|\b(?:give|send|share|show)(?: me)? (?:the |a )?links?\b|\bwhere (?:can|do) i (?:find|read|get)\b",
        re.I,
    ),
}


def record_asks(question: str) -> list[str]:
    """What `question` asks of a paper's record, in a fixed order: "authors" ("who wrote …?"), "status" ("is it an
    oral?"), "link" ("link to the paper?"). "What do the authors of … find?" asks for a finding, not for authors."""
    return [field for field, pattern in _RECORD_ASKS.items() if pattern.search(question)]

