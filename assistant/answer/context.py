"""The messages sent to a chat model: numbered, delimited sources fitted into a token budget.

Sources go in rank order, each as its full abstract if that fits, else as
its best-matching passage (whole sentences) marked as shortened; the first
source that fits neither way ends the list, so the lowest-ranked are dropped
first. A best source too long even as a passage is cut at a sentence boundary,
again marked, so the model is never handed half a sentence without being told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assistant.answer.prompts import render, template
from assistant.ingest.chunking import count_tokens
from assistant.ingest.papers import Paper
from assistant.text.instructions import withheld
from assistant.text.questions import Message
from assistant.text.sentences import split_sentences


@dataclass
class Prompt:
    """Chat messages plus which retrieved papers they number as [1], [2], …"""

    messages: list[Message]
    papers: list[Paper]
    tokens: int
    dropped: int = 0
    shortened: list[int] = field(default_factory=list)


def source_block(number: int, paper: Paper, abstract: str, prompts_dir: Path | None) -> str:
    """One source as the model sees it: data it cannot close early (its own tags escaped) or take orders from
    (a sentence that gives the reading model orders is withheld)."""
    safe = withheld(abstract).replace("</source", "&lt;/source").replace("<source", "&lt;source")
    label = (paper.title or paper.label).replace("<", "&lt;")
    return render("source", prompts_dir, number=number, label=label, abstract=safe)


def _shorten(paper: Paper, budget: int, prompts_dir: Path | None) -> str | None:
    """The abstract's leading sentences that fit `budget` tokens, marked as shortened."""
    marker = template("shortened_source", prompts_dir).strip()
    kept: list[str] = []
    for sentence in split_sentences(paper.abstract):
        if count_tokens(source_block(1, paper, " ".join([*kept, sentence, marker]), prompts_dir)) > budget:
            break
        kept.append(sentence)
    return " ".join([*kept, marker]) if kept else None


def build_prompt(
    question: str, history: list[Message], papers: list[Paper], budget: int, prompts_dir: Path | None = None, note: str = "",
    excerpts: dict[str, str] | None = None,
) -> Prompt:
    """System prompt, earlier turns and the question with as many sources as fit `budget` tokens.

    The fixed text comes first (system prompt, then the answer template's instructions), so a server that
    keeps its prompt cache (llama.cpp) reads only the sources and the question anew for each question.
    `note`: what the pipeline already knows about the sources (a detail the best abstract does not state).
    `excerpts`: paper id → the sentences to show instead of its whole abstract (marked as shortened).
    """
    system = {"role": "system", "content": template("system", prompts_dir).strip()}
    turns = list(history)
    while True:
        fixed = count_tokens(system["content"]) + sum(count_tokens(m["content"]) for m in turns)
        fixed += count_tokens(render("answer", prompts_dir, sources="", question=question, note=note))
        if fixed <= budget // 2 or not turns:
            break
        turns = turns[1:]  # oldest turns go first when the history alone would crowd out the sources
    remaining = budget - fixed
    blocks: list[str] = []
    chosen: list[Paper] = []
    shortened: list[int] = []
    marker = template("shortened_source", prompts_dir).strip()
    for paper in papers:
        number = len(chosen) + 1
        excerpt = (excerpts or {}).get(paper.paper_id)
        texts = [f"{excerpt} {marker}"] if excerpt and excerpt != paper.abstract else [paper.abstract]
        if not excerpt and paper.snippet and paper.snippet != paper.abstract:
            texts.append(f"{paper.snippet} {marker}")
        fitting = [t for t in texts if count_tokens(source_block(number, paper, t, prompts_dir)) + 2 <= remaining]
        if not fitting and not chosen:
            fitting = [t for t in [_shorten(paper, remaining - 2, prompts_dir)] if t]
        if not fitting:
            break
        block = source_block(number, paper, fitting[0], prompts_dir)
        if fitting[0] != paper.abstract:
            shortened.append(number)
        blocks.append(block)
        chosen.append(paper)
        remaining -= count_tokens(block) + 2
    user = render("answer", prompts_dir, sources="\n\n".join(blocks), question=question, note=note)
    messages = [system, *turns, {"role": "user", "content": user}]
    return Prompt(messages, chosen, budget - remaining, dropped=len(papers) - len(chosen), shortened=shortened)
