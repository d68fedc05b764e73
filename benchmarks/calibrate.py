"""How the two thresholds of the grounding step were chosen, reproducibly, on the development set.

1. Abstention: `coverage + ABSTAIN_COSINE_WEIGHT * cosine` (lexical) for every dev question; prints the
   share of `none` questions that abstain and of answerable ones that (wrongly) do, for a range of
   thresholds; then, for questions between ABSTAIN_THRESHOLD and SEMANTIC_CHECK_BELOW, the E5 cosine of
   question and best abstract and the same two shares for a range of SEMANTIC_THRESHOLD values.
2. The reader (RERANKER=mpnet): for every question of the calibration split (dev, own, odd-numbered hard and
   realistic) and the held-out ones (even-numbered hard and realistic, fresh, near-miss), the gate's decision for a
   range of READER_THRESHOLD values, then of UNUSED_NOUN_WEIGHT: answerable questions refused and out-of-corpus
   ones abstained, per split.
3. Citation support: for each sentence the extractive answerer quotes, its support score against the
   paper it came from (must pass) and against another retrieved paper (should fail); prints accuracy
   for a range of cosine thresholds (SUPPORT_COSINE) with the lexical rule (SUPPORT_OVERLAP) alongside.

Run: python -m benchmarks.calibrate
"""

from __future__ import annotations

import numpy as np

from assistant.answer import extractive
from assistant.answer.citations import SUPPORT_COSINE, is_supported, support
from assistant.engine import Assistant
from assistant.evaluation.harness import load_questions
from assistant.retrieval.relevance import E5Scorer, judge, lexical_relevance
from assistant.retrieval.search import retrieve
from assistant.settings import PROJECT_ROOT
from assistant.text.questions import standalone_query
from benchmarks.bench_scale import DEV, HARD
from benchmarks.common import SHARED

SPLITS = {"calibration": ["dev", "own", "hard:odd", "realistic:odd"], "held out": ["hard:even", "realistic:even", "fresh", "nearmiss"]}
SPLIT_FILES = ("hard", "realistic")  # split by their questions' numbers; the other files are one group each


def reader_sweep(assistant: Assistant) -> None:
    """READER_THRESHOLD, then UNUSED_NOUN_WEIGHT, against refusals and abstentions, calibrated on one split and reported on the other."""
    files = {
        "dev": DEV, "own": PROJECT_ROOT / "eval" / "own.jsonl", "hard": HARD, "realistic": SHARED / "eval" / "questions_realistic.jsonl",
        "fresh": PROJECT_ROOT / "eval" / "fresh.jsonl", "nearmiss": PROJECT_ROOT / "eval" / "nearmiss_fresh.jsonl",
    }
    rows: dict[str, list[tuple[object, bool]]] = {name: [] for name in SPLITS}
    for name, path in files.items():
        if not path.exists():  # the public realistic file lives in ../shared
            continue
        for q in load_questions(path):
            group = f"{name}:{'even' if int(q['id'].rsplit('-', 1)[1]) % 2 == 0 else 'odd'}" if name in SPLIT_FILES else name
            split = next(s for s, groups in SPLITS.items() if group in groups)
            found = assistant.search(q["question"], q.get("history") or None, reranker="mpnet")
            rows[split].append((found, bool(q["gold"]) or q.get("kind") in ("absent-detail", "detail-absent")))
    current = assistant.settings
    _sweep(assistant, rows, "reader_threshold", np.arange(0.40, 0.53, 0.01), unused_noun_weight=0.0)
    _sweep(assistant, rows, "unused_noun_weight", np.arange(0.0, 0.61, 0.1), reader_threshold=current.reader_threshold)


def _sweep(assistant: Assistant, rows: dict[str, list[tuple[object, bool]]], setting: str, values: np.ndarray, **fixed: float) -> None:
    print(f"\n{setting.upper()} (current {getattr(assistant.settings, setting)}; {fixed}): answerable refused / out-of-corpus abstained")
    for value in values:
        settings = assistant.settings.with_overrides(**fixed, **{setting: float(value)})
        cells = []
        for split, found in rows.items():
            verdicts = [(judge(r, settings, assistant.scorer).answerable, answerable) for r, answerable in found]
            refused = np.mean([not ok for ok, answerable in verdicts if answerable])
            abstained = np.mean([not ok for ok, answerable in verdicts if not answerable])
            cells.append(f"{split} {refused:.2f} / {abstained:.2f}")
        print(f"  {value:.2f}: " + " | ".join(cells))


def main() -> None:
    assistant = Assistant()
    settings = assistant.settings
    build = assistant.index.current()
    scorer = E5Scorer()
    questions = load_questions(DEV)
    relevance, answerable, semantic = [], [], []
    positives, negatives = [], []
    for q in questions:
        query = standalone_query(q["question"], [{"role": "user", "content": h["content"]} for h in q["history"]])
        found = retrieve(build, query, settings.top_k)
        relevance.append(lexical_relevance(found, settings.abstain_cosine_weight))
        semantic.append(scorer.score(query, found.papers[0].abstract))
        answerable.append(bool(q["gold"]))
        quotes = extractive.select(query, found.papers, build.sentences, settings.answer_sentences)
        for quote in quotes:
            vector = build.sentences.query(quote.text)
            for index, paper in enumerate(found.papers):
                pair = support(quote.text, paper.abstract, build.sentences, vector)
                (positives if index == quote.paper else negatives).append(pair)

    relevance_arr, answerable_arr = np.array(relevance), np.array(answerable)
    print(f"Abstention ({(~answerable_arr).sum()} none, {answerable_arr.sum()} answerable questions); current threshold {settings.abstain_threshold}")
    for threshold in np.arange(0.40, 0.60, 0.02):
        abstain = relevance_arr < threshold
        print(f"  threshold {threshold:.2f}: none abstain {abstain[~answerable_arr].mean():.2f}, answerable abstain {abstain[answerable_arr].mean():.2f}")

    semantic_arr = np.array(semantic)
    band = (relevance_arr >= settings.abstain_threshold) & (relevance_arr < settings.semantic_check_below)
    print(f"\nE5 check on the {band.sum()} questions with lexical relevance in [{settings.abstain_threshold}, {settings.semantic_check_below})")
    print(f"  none: {np.round(np.sort(semantic_arr[band & ~answerable_arr]), 3).tolist()}")
    print(f"  answerable: {np.round(np.sort(semantic_arr[band & answerable_arr]), 3).tolist()}")
    lexical_abstain = relevance_arr < settings.abstain_threshold
    for threshold in np.arange(0.82, 0.88, 0.005):
        abstain = lexical_abstain | (band & (semantic_arr < threshold))
        print(f"  SEMANTIC_THRESHOLD {threshold:.3f}: none abstain {abstain[~answerable_arr].mean():.2f}, answerable abstain {abstain[answerable_arr].mean():.2f}")

    reader_sweep(assistant)

    print(f"\nCitation support ({len(positives)} true pairs, {len(negatives)} wrong-paper pairs); current SUPPORT_COSINE {SUPPORT_COSINE}")
    for threshold in np.arange(0.45, 0.80, 0.05):
        true_ok = np.mean([is_supported(*p, threshold) for p in positives])
        wrong_flagged = np.mean([not is_supported(*p, threshold) for p in negatives])
        print(f"  cosine ≥ {threshold:.2f}: true citations accepted {true_ok:.3f}, wrong-paper citations flagged {wrong_flagged:.3f}")


if __name__ == "__main__":
    main()
