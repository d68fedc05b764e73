"""What part an abstract's sentence plays: the problem, the approach, the data or benchmarks, or the headline result.

A comparison table puts one sentence of each paper under each of these. Abstracts follow a convention (context and
problem first, "we propose" next, experiments and results last), so cue words and the sentence's place decide, with
no model: the cues are the field's stock phrases, not any question file's wording.
"""

from __future__ import annotations

import re

ROLES = ("problem", "approach", "data", "result")
LABELS = {"problem": "Problem", "approach": "Approach", "data": "Data / benchmarks", "result": "Headline result"}

_CUES = {
    "problem": re.compile(
        r"\b(?:challeng\w*|problems?|remains?|limit(?:s|ed|ation\w*)|however|difficult\w*|struggl\w*|costly|expensive|suffer\w*|"
        r"lacks?|bottleneck\w*|issues?|gap|unclear|hinder\w*|fails?|crucial|fundamental|important|despite|although|"
        r"increasingly|widely|prone|vulnerab\w*|poorly)\b", re.I),
    "approach": re.compile(
        r"\b(?:we (?:propose|introduce|present|develop|design|devise|formulate|leverage|adopt|build|employ|extend|cast|frame)|"
        r"(?:this|the) (?:paper|work) (?:proposes|introduces|presents|develops)|in this (?:paper|work)|"
        r"our (?:method|approach|framework|algorithm|model|technique|idea)|called|named|dubbed|termed|novel|framework|"
        r"algorithm|architecture|based on|by (?:\w+ing)|via)\b", re.I),
    "data": re.compile(
        r"\b(?:benchmarks?|datasets?|data sets?|corpus|corpora|experiments?|experimental|evaluat\w*|empirical\w*|environments?|"
        r"suites?|tasks|simulat\w*|real[- ]world|tested|trained on)\b", re.I),
    "result": re.compile(
        r"\b(?:outperform\w*|state[- ]of[- ]the[- ]art|sota|improv\w*|achiev\w*|surpass\w*|significant(?:ly)?|gains?|faster|"
        r"speed-?ups?|reduc\w*|competitive|superior|better|prove[sd]?|guarantee\w*|bounds?|converge\w*|demonstrat\w*|"
        r"(?:we|results|experiments) show|results)\b", re.I),
}
_CONTRIBUTION = re.compile(r"\b(?:we (?:propose|introduce|present|develop)|in this (?:paper|work)|(?:this|the) (?:paper|work) (?:proposes|introduces|presents))\b", re.I)
# "Experiments on D4RL show that X beats Y": the clause before the verb is the data, the one after it the result.
_FINDING = re.compile(r"\s(?:show|shows|showed|demonstrate|demonstrates|demonstrated|indicate|indicates|suggest|suggests|reveal|reveals|confirm|confirms)\s+that\s")
_OWN_FINDING = re.compile(r"\b(?:we|our (?:\w+ )?(?:analysis|results|findings|experiments))\s+(?:\w+\s+)?(?:find|found|prove|proved|observe|argue|reveals?|suggests?)\b", re.I)
_ASKS_FINDING = re.compile(  # "what do the authors of X find", "their main insight"; not "how do I find papers on X"
    r"(?:\b(?:their|the|its|is|main|key|central|headline|core)|['’]s)\s+(?:\w+\s+)?(?:findings?|argument|conclusions?|takeaways?|insights?|lessons?)\b|"
    r"\b(?:do|does|did)\s+(?!I\b|you\b|we\b)[^?]*?\b(?:find|argue|conclude)\b", re.I)
_NUMBER = re.compile(r"\d+(?:\.\d+)?\s*(?:%|x\b|×|times\b)|\b\d+(?:\.\d+)?\b")
_NAME = re.compile(r"\b(?:[A-Z][a-z]*[A-Z0-9][\w-]*|[A-Z]{2,}[\w-]*)\b")  # "ImageNet", "D4RL", "MuJoCo", "GLUE"
_ASKED = {
    "problem": re.compile(r"\b(?:problems?|goals?|address\w*|tackl\w*|motivat\w*|why|aims?|challenges?|focus\w*|purpose)\b", re.I),
    "approach": re.compile(
        r"\b(?:methods?|approach\w*|strateg\w*|techniques?|how (?:do|does|did)|architectures?|algorithms?|frameworks?|"
        r"mechanisms?|ideas?|designs?)\b", re.I),
    "data": re.compile(r"\b(?:datasets?|benchmarks?|data|evaluat\w*|experiments?|tasks?|environments?|tested|test)\b", re.I),
    "result": re.compile(
        r"\b(?:results?|perform\w*|accura\w*|outperform\w*|better|faster|speed\w*|gains?|improv\w*|how well|efficien\w*|scores?|"
        r"findings?|show)\b", re.I),
}


def role_scores(sentence: str, position: int, count: int) -> dict[str, float]:
    """How strongly `sentence`, the `position`-th of an abstract's `count`, reads as each role (0: not at all).

    Each distinct cue counts one (at most three); the place in the abstract adds up to one: problems come first,
    data and results last. A sentence with no cue of a role scores 0 for it, whatever its place, except the
    first sentence, which sets out the problem unless it says something else.
    """
    late = position / max(count - 1, 1)
    scores = {}
    for role, cue in _CUES.items():
        hits = min(len({m.group().lower() for m in cue.finditer(sentence)}), 3)
        scores[role] = float(hits)
    scores["data"] += 0.5 * bool(scores["data"] and _NAME.search(sentence))
    scores["result"] += 0.5 * bool(scores["result"] and _NUMBER.search(sentence))
    scores["problem"] = scores["problem"] + (1.0 if position == 0 else 0.5 if position == 1 else -0.5 * late)
    if position > 0 and not _CUES["problem"].search(sentence):
        scores["problem"] = 0.0
    for role in ("data", "result"):
        if scores[role]:
            scores[role] += late
    if scores["approach"] and late < 0.75:
        scores["approach"] += 0.5
    scores["approach"] += 1.0 * bool(_CONTRIBUTION.search(sentence))
    for role in ("data", "result"):  # experiments and results are reported after the method, and say nothing is lacking
        if scores[role]:
            scores[role] -= 0.5 * min(len(_CUES["problem"].findall(sentence)), 2) + (1.0 if late < 0.3 else 0.0)
    return scores


def finding(sentence: str) -> tuple[str, str] | None:
    """A sentence that reports a finding on some data ("Experiments on D4RL show that X beats Y"), cut in two verbatim
    parts: what it was tested on, and what was found; None for any other sentence."""
    match = _FINDING.search(sentence)
    if not match or len(sentence[: match.start()].split()) < 5 or len(sentence) - match.end() < 10:
        return None  # "Our results show that …": the part before says nothing of the data
    return sentence[: match.start()].strip(), sentence[match.end():].strip()


def asks_for_finding(question: str) -> bool:
    """Whether the question asks what a paper found or argues ("what do they find about …", "their main insight")."""
    return bool(_ASKS_FINDING.search(question))


def reports_finding(sentence: str) -> bool:
    """Whether the authors state a finding in `sentence` ("We show that …", "Our analysis reveals that …")."""
    return bool(_FINDING.search(sentence) or _OWN_FINDING.search(sentence))


def reports_data(sentence: str) -> bool:
    """Whether `sentence` speaks of data, benchmarks or experiments ("An empirical evaluation on SysAdmin …")."""
    return bool(_CUES["data"].search(sentence))


def asked_roles(question: str) -> list[str]:
    """Every role, those the question asks about first in the order it names them ("which datasets, and how well?")."""
    found = sorted((m.start(), role) for role, cue in _ASKED.items() if (m := cue.search(question)))
    asked = [role for _, role in found]
    return asked + [role for role in ROLES if role not in asked]
