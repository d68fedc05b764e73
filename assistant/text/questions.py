"""Clean up what a user typed and turn a follow-up into a question retrieval can use."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from assistant.errors import QuestionError
from assistant.text.details import COUNTED_PARTS, NAME_ASKED, compares
from assistant.text.words import STOPWORDS

Message = dict[str, str]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_HISTORY_TURNS = 2


def clean_text(text: str) -> str:
    """Drop control characters and lone surrogates, normalise Unicode, collapse whitespace."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = unicodedata.normalize("NFKC", text)
    return " ".join(_CONTROL.sub(" ", text).split())


def clean_question(question: Any, max_chars: int) -> str:
    """The question ready for retrieval, or a `QuestionError` that says what to change."""
    if not isinstance(question, str):
        raise QuestionError(f"The question must be text, not {type(question).__name__}.")
    text = clean_text(question)
    if not text or not any(ch.isalnum() for ch in text):
        raise QuestionError("The question is empty. Type a question about the papers, e.g. 'Is there work on pruning spiking neural networks?'")
    if len(text) > max_chars:
        raise QuestionError(
            f"The question is {len(text):,} characters long; the limit is {max_chars:,} (MAX_QUESTION_CHARS). "
            "Ask about one topic at a time instead of pasting a document."
        )
    return text


def content_text(content: Any) -> str | None:
    """A message's text: a string as it is, or the text parts of OpenAI's (and Gradio's) content-part list joined;
    None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text") or "") for part in content if isinstance(part, dict) and part.get("type") == "text")
    return None


def normalize_history(history: list[Any] | None, max_chars: int) -> list[Message]:
    """Accept previous turns as strings or OpenAI-style `{"role", "content"}` dicts, content a string or parts."""
    messages: list[Message] = []
    for turn in history or []:
        if isinstance(turn, str):
            role, content = "user", turn
        elif isinstance(turn, dict) and (text := content_text(turn.get("content"))) is not None:
            role, content = str(turn.get("role", "user")), text
        else:
            raise QuestionError("Each history turn must be a string or a {'role': ..., 'content': ...} dict.")
        if role not in ("user", "assistant"):
            continue
        content = clean_text(content)[: max_chars * 4]
        if content:
            messages.append({"role": role, "content": content})
    return messages


# "which of them quantize the cache?", "which one is …"; not "how many benchmarks … and which ones?", the same question's things
_SOME_OF_THEM = r"(?<!and )which (?:(?:of|among) (?:them|those|these)|ones?(?![\w-]))"
_DESCRIBED_ONE = re.compile(r"the ((?:[\w-]+ ){1,2})ones?(?![\w-])", re.I)  # "the forward-only one", "the GAN-based ones"
_ONE_DESCRIBED = re.compile(r"\bthe ones? (?:on|about|for|with|using|that|which)\s+([^?.,;]{3,60})", re.I)  # "the one on anomaly detection"
_POSITIONS = frozenset({"first", "second", "third", "last", "next", "previous", "other", "same", "former", "latter"})
# Words by which a question points back at the conversation ("does it …", "that method", "the authors", "the two methods",
# "the forward-only one").
_REFERS_BACK = re.compile(
    r"\b(?:it|its|they|them|their|this|that|these|those|he|she|his|her|above|previous|former|latter|same|"
    r"the (?:paper|method|work|approach|model|authors|study|technique|one)|the (?:two|three|four|proposed) [\w-]+|"
    rf"{_DESCRIBED_ONE.pattern}|{_SOME_OF_THEM})\b"
    r"|(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )\bthere\b(?!\s+(?:is|are|was|were|be|been|a|an|any|some|exists?)\b)",
    re.I,  # "which LLMs do better there?" points back; "is there work on …" does not
)
_TOPIC_WORD = re.compile(r"[A-Za-z][\w-]{3,}")
_HOW = re.compile(r"\bhow\s+(?:many|much|often|long|well|far)\b", re.I)  # the question's form: "how many control tasks?" asks of two words
FEW_TOPIC_WORDS = 2  # "And on ImageNet?", "Which dataset?": too little of its own to be a new question
OWN_TOPIC_WORDS = 5  # topic words from which a question whose pointing words may point inside it may be a new one
STANDS_ALONE_WORDS = 8  # topic words from which a question may be a new one, whatever its pointing words


def topic_words(question: str) -> list[str]:
    """The words `question` names its topic with, in order: not function words ("what", "does", "with", "how many")."""
    return [word for word in _TOPIC_WORD.findall(_HOW.sub(" ", question)) if word.lower() not in STOPWORDS]


# "anything on X?", "is there work about X?": whether work exists on a topic is asked of the whole index
_ASKS_FOR_WORK = re.compile(
    r"\b(?:anything|something|any (?:work|research|papers?)|(?:is|are) there (?:any )?(?:work|research|papers?))\s+(?:on|about|regarding|using)\b",
    re.I,
)


_CONTINUES = re.compile(r"\W*(?:and|but|also|plus)\b(?!\s*(?:is|are)\s+there\b)", re.I)  # "and in the finite horizon case?"


def is_follow_up(question: str) -> bool:
    """Whether `question` leans on the conversation: it points back at something, or names too little of its own.

    "How can a grid-based NeRF be compressed?" after another topic is a new question and is searched alone; so is
    "Which papers do anomaly detection?" and "anything on speculative decoding?": a list of papers, or whether any
    work exists, is asked of the whole index, one word of its own is enough.
    """
    few = 0 if asks_for_list(question) or _ASKS_FOR_WORK.search(question) else FEW_TOPIC_WORDS
    return bool(_REFERS_BACK.search(question) or _CONTINUES.match(question)) or len(topic_words(NAME_ASKED.sub("", question))) <= few


_ANTECEDENT_WORDS = 4  # topic words after which a word pointing back may point at them ("a memory layer … when it is trained")
_LAST_WORD = re.compile(r"([A-Za-z][\w-]+)\W*$")
# words after which "that" is a demonstrative ("does that method …", "for that"), not a relative ("a model that …")
_BEFORE_DEMONSTRATIVE = frozenset(
    "do does did is are was were be about of in on for with from by like to at and or but than how what why where when "
    "which so use uses used using into onto over under".split()
)


def points_back_in_itself(question: str) -> bool:
    """Whether every word by which `question` could point back at the conversation may point inside it instead: a
    "that" after a noun or verb ("a model that rewrites …", "show that …"), any after a few topic words ("a memory
    layer storing word pairs oscillates when it is trained", "… an analysis of the approach where …"). "How much does
    it retain?" and "does that method …" point back."""
    for match in _REFERS_BACK.finditer(question):
        before = question[: match.start()]
        last = _LAST_WORD.search(before)
        if match.group().lower() == "that" and last and last.group(1).lower() not in _BEFORE_DEMONSTRATIVE:
            continue
        if len(topic_words(before)) < _ANTECEDENT_WORDS:
            return False
    return True


def may_be_new(question: str) -> bool:
    """Whether a question that reads as a follow-up may be a new one: it says enough of its own, and its pointing words
    may all point inside it ("is there a model that rewrites a molecule into one that can be synthesized?") or it says
    so much that it stands alone ("What did researchers find when they completely reverse-engineered small networks
    that had learned to compose permutations?"). The conversation then decides (`engine._switch_topic`)."""
    words = len(topic_words(question))
    return words >= OWN_TOPIC_WORDS and (points_back_in_itself(question) or words >= STANDS_ALONE_WORDS)


def has_own_topic(turn: str) -> bool:
    """Whether an earlier user turn set a topic of its own: one that does not lean on the conversation, or one that
    `may_be_new`."""
    return not is_follow_up(turn) or may_be_new(turn)


def described_one(question: str) -> str:
    """What "the forward-only one" or "the one on anomaly detection" says of the paper it points back at, to pick it
    among the conversation's papers; "" when the question describes none, or only by its place ("the second one")."""
    after = _ONE_DESCRIBED.search(question)
    if after:
        return after.group(1).strip()
    match = _DESCRIBED_ONE.search(question)
    words = match.group(1).split() if match else []
    return "" if not words or words[0].lower() in _POSITIONS else " ".join(words)


_PLACES = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3, "fifth": 4, "5th": 4, "last": -1}
_PLACED_ONE = re.compile(rf"\bthe ({'|'.join(_PLACES)}) (?:one|paper|work|method|approach|study)\b", re.I)


def placed_one(question: str) -> int | None:
    """Which of the papers an earlier answer showed "the second one" or "the last paper" points at (0 the first, -1
    the last), or None."""
    match = _PLACED_ONE.search(question)
    return _PLACES[match.group(1).lower()] if match else None


_MOVES_ON = re.compile(
    r"^\W*(?:(?:ok|okay|so|and|but|thanks|thank you|thx|hmm+|cool|great|nice|alright|right|well)\W+)*(?:what|how)\s+about\b|\b(?:anything|something|any work|one)\s+(?:similar|like (?:that|this|it))\b"
    r"|^\W*and\s+for\s+(?!how|what|which|when|where|why|who|them|it\b)",  # "and for transformers?", not "and for how long?"
    re.I,
)


def moves_on(question: str) -> bool:
    """Whether `question` asks for the conversation's kind of work on something else ("what about for tabular data?",
    "anything similar for diffusion-generated images?"): its own words name the new part, the conversation the rest.
    Not when the rest points back ("what about the loss makes it robust?" is about the conversation's paper)."""
    return _MOVES_ON.search(question) is not None and not _REFERS_BACK.search(_MOVES_ON.sub(" ", question))


def standalone_query(question: str, history: list[Message]) -> str:
    """A retrieval query for a follow-up without a chat model: the last user turns plus the question.

    A follow-up such as "what objective does that method use?" names none of
    its topic; the previous user turns do, and BM25 and the embedding both
    pick the topic up from them. A question that is not a follow-up is its own query.
    """
    return with_earlier_turns(question, history) if is_follow_up(question) else question


def with_earlier_turns(question: str, history: list[Message]) -> str:
    """The last user turns and the question, as one query: the conversation's topic with what is asked now.

    The turns go back only to the one that set the topic (the last that was not itself a follow-up): a new
    question before the follow-up ends the earlier topic, which would otherwise pull the search its way.
    """
    earlier: list[str] = []
    for turn in reversed([m["content"] for m in history if m["role"] == "user"][-_HISTORY_TURNS:]):
        earlier.insert(0, turn)
        if has_own_topic(turn):
            break
    return " ".join([*earlier, question])


# "works" after "that", "which" or "it" is the verb ("a test that works on streaming data"), not papers
_PLURAL = re.compile(
    rf"\b(papers|(?<!that )(?<!which )(?<!it )works|studies|methods|approaches|techniques|which (?:\w+ )?(?:papers|works)|list|{_SOME_OF_THEM})\b",
    re.I,
)
_LIST = re.compile(
    r"\b(?:which|what|any|all|list|name|find|show me)\b(?:\s+\S+){0,3}?\s+(?:papers|works|studies|articles|abstracts)\b|^\s*list\b"
    r"|\bpapers (?:that|which|on|about|using|where)\b", re.I)


def asks_for_list(question: str) -> bool:
    """Whether `question` asks for a list of papers in so many words ("which papers…", "list the work on…"), not
    only uses a plural ("learning-based methods need many trials; is there one that…")."""
    return bool(_LIST.search(question))


# "which environments does the target network convergence paper test on?": the paper is described by the words before
# "paper"; the rest asks about it
_DESCRIBED_PAPER = re.compile(r"\bthe\s+((?:[\w-]+\s+){1,6}?)(?:paper|work|study|article)\b", re.I)


def described_paper(question: str) -> str:
    """The words `question` describes the paper it asks about by ("target network convergence"), or ""."""
    found = _DESCRIBED_PAPER.search(question)
    return found.group(1).strip() if found else ""


def asks_for_several(question: str) -> bool:
    """Whether `question` asks for a list of papers ("which papers…", "any works on…"), not for a paper's few
    parts ("which three pretraining methods does UniCorn unify?")."""
    return bool(_PLURAL.search(COUNTED_PARTS.sub(" ", question)))


_SOME_OF_THEM_RE = re.compile(rf"\b{_SOME_OF_THEM}\b", re.I)


def asks_for_some_of_them(question: str) -> bool:
    """Whether `question` asks which of the conversation's papers do something ("which of them quantize the cache?"):
    those of its topic the follow-up's words fit, not the one paper the conversation was about."""
    return _SOME_OF_THEM_RE.search(question) is not None


def about_several_papers(question: str) -> bool:
    """Whether `question` is about several papers: it asks for a list of them or compares them."""
    return asks_for_several(question) or compares(question)
