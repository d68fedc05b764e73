"""The evaluation harness: run a question set under several configurations and score them.

    from assistant.evaluation import harness as eval
    report = eval.run("eval/dev.jsonl", configs=["hybrid", "bm25"], out_dir="eval/runs/today")

Question files use the development set's format (`id`, `type`, `question`,
`history`, `gold` as `{file, para, prefix}`, `answer_keywords`). Gold papers
are matched to the index by their text, so one question file scores any index
built from those corpus files, including one with other ids or extra papers.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from assistant.answer.result import Answer
from assistant.engine import Assistant
from assistant.errors import AssistantError
from assistant.evaluation.metrics import EvalRecord, summarize
from assistant.evaluation.report import EvalReport, write_report
from assistant.ingest.corpus import text_key
from assistant.ingest.papers import Paper
from assistant.settings import PROJECT_ROOT, SAMPLE_CORPUS, Settings

# Named configurations: per-call options for `Assistant.ask`, plus `k`. All but
# "model" answer extractively, so they need no model server.
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {"llm_provider": "extractive"},  # the configured retrieval (RERANKER=auto included), extractive answers
    "lexical-gate": {"llm_provider": "extractive", "relevance_check": "none", "reranker": "none"},  # abstention on the lexical signal alone (no reader, no E5)
    "hybrid": {"retrieval_mode": "hybrid", "llm_provider": "extractive", "reranker": "none"},
    "dense": {"retrieval_mode": "dense", "llm_provider": "extractive", "reranker": "none"},
    "bm25": {"retrieval_mode": "bm25", "llm_provider": "extractive", "reranker": "none"},
    "hybrid-k3": {"retrieval_mode": "hybrid", "llm_provider": "extractive", "reranker": "none", "k": 3},
    "hybrid-k10": {"retrieval_mode": "hybrid", "llm_provider": "extractive", "reranker": "none", "k": 10},
    "hybrid-rerank": {"retrieval_mode": "hybrid", "llm_provider": "extractive", "reranker": "mpnet"},
    "model": {},  # the configured retrieval and chat model (LLM_PROVIDER)
}


def load_questions(path: Path | str, types: Iterable[str] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Questions from a JSONL file, optionally only some types and the first `limit`."""
    path = Path(path)
    wanted = set(types) if types else None
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            item["question"], item["id"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise AssistantError(f"{path}:{number}: not a question record ({exc})") from exc
        if wanted is None or item.get("type") in wanted:
            questions.append(item)
    return questions[:limit] if limit else questions


def _paragraph(folder: Path, name: str, index: int) -> str | None:
    path = folder / name
    if not path.is_file():
        return None
    paragraphs = [p for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
    return paragraphs[index] if 0 <= index < len(paragraphs) else None


class GoldMatcher:
    """Maps gold `{file, para, prefix}` entries to the ids of indexed papers with that text."""

    def __init__(self, papers: Iterable[Paper], corpus_dirs: Iterable[Path]) -> None:
        self.keys = {paper.paper_id: text_key(paper.abstract) for paper in papers}
        self.corpus_dirs = [d for d in corpus_dirs if d.is_dir()]

    def match(self, gold: dict[str, Any]) -> list[str]:
        text = next((t for d in self.corpus_dirs if (t := _paragraph(d, gold.get("file", ""), gold.get("para", -1)))), None)
        key = text_key(text or gold.get("prefix", ""))
        if len(key) < 20:
            return []
        return [pid for pid, k in self.keys.items() if k.startswith(key) or (key.startswith(k) and len(k) >= 40)]


def _record(
    config: str, question: dict[str, Any], gold: list[str], about: list[str], assistant: Assistant, options: dict[str, Any],
    opening: Sequence[dict[str, str]] = (),
) -> EvalRecord:
    history = [*opening, *(question.get("history") or [])]
    try:
        answer = _ask(assistant, question["question"], history, options)
        cited, abstained, text, timings, notice = [p.paper_id for p in answer.citations], answer.abstained, answer.text, answer.timings, answer.notice
        relevance, ranking, confidence, partial = answer.relevance, answer.ranking, answer.confidence, answer.partial
    except AssistantError as exc:
        cited, abstained, text, timings, notice, relevance, ranking, confidence, partial = [], False, "", {}, str(exc), {}, [], "", False
    return EvalRecord(
        config=config, qid=str(question["id"]), qtype=question.get("type", "unknown"), question=question["question"], gold=gold,
        ranking=ranking, cited=cited, abstained=abstained, text=text,
        keywords=list(question.get("answer_keywords") or []), timings=timings, notice=notice, relevance=relevance,
        kind=str(question.get("kind") or ""), confidence=confidence, partial=partial, about=about,
    )


def run(
    questions: Path | str,
    configs: Iterable[str] = ("default",),
    out_dir: Path | str | None = None,
    limit: int | None = None,
    types: Iterable[str] | None = None,
    settings: Settings | None = None,
    progress: bool = True,
    after: str | None = None,
) -> EvalReport:
    """Answer every question under every configuration, score, and write reports to `out_dir` if given.

    `after`: ask every question as a later turn of a conversation that opened with this question and its answer, so
    the scores show whether an earlier topic leaks into answers (every question in a chat after the first has one)."""
    configs = list(configs)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise AssistantError(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    items = load_questions(questions, types, limit)
    if not items:
        raise AssistantError(f"{questions}: no questions to run")
    assistant = Assistant(settings)
    papers = assistant.papers()
    corpus_dirs = [Path(assistant.manifest.corpus_path), assistant.settings.corpus_path, Path(questions).parent.parent / "corpus", SAMPLE_CORPUS]
    matcher = GoldMatcher(papers, corpus_dirs)
    golds: dict[str, list[str]] = {}
    abouts: dict[str, list[str]] = {}  # for questions on a paper whose abstract lacks the asked detail: that paper
    unmatched = []
    for item in items:
        ids: list[str] = []
        for gold in item.get("gold") or []:
            found = matcher.match(gold)
            if not found:
                unmatched.append(f"{item['id']}: {gold.get('file')}#{gold.get('para')}")
            ids.extend(found)
        golds[str(item["id"])] = list(dict.fromkeys(ids))
        abouts[str(item["id"])] = matcher.match(item["about"]) if isinstance(item.get("about"), dict) else []

    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    records: list[EvalRecord] = []
    bar = tqdm(total=len(items) * len(configs), desc="Evaluating", unit="q", disable=not progress)
    for config in configs:
        opening = _opening(assistant, after, CONFIGS[config]) if after else []
        for item in items:
            records.append(_record(config, item, golds[str(item["id"])], abouts[str(item["id"])], assistant, CONFIGS[config], opening))
            bar.update()
    bar.close()
    summaries = {c: summarize([r for r in records if r.config == c]) for c in configs}
    report = EvalReport(str(questions), configs, records, summaries, started_at, unmatched)
    if out_dir is not None:
        report.out_dir = write_report(report, Path(out_dir))
    return report


def _ask(assistant: Assistant, question: str, history: list[Any], options: dict[str, Any]) -> Answer:
    """`question` asked under a configuration's `options` (`k` and per-call settings)."""
    per_call = {key: value for key, value in options.items() if key != "k"}
    return assistant.ask(question, history, k=options.get("k"), **per_call)


def _opening(assistant: Assistant, question: str, options: dict[str, Any]) -> list[dict[str, str]]:
    """A conversation's first turn and the answer it gets under `options`."""
    answer = _ask(assistant, question, [], options)
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer.text}]


def shared_dir() -> Path:
    """The folder of conference data and public question files a user brings (`data/`, `eval/`), never copied in.

    `ASSISTANT_SHARED_DIR` names it; otherwise `shared/` beside the checkout.
    """
    return Path(os.environ.get("ASSISTANT_SHARED_DIR") or PROJECT_ROOT.parent / "shared")


def default_out_dir() -> Path:
    """eval/runs/<time> under the working directory."""
    return Path("eval") / "runs" / time.strftime("%Y%m%d-%H%M%S")
