"""Scores for evaluation runs: IR measures through `ir-measures`, answer measures over records.

A record is one question answered under one configuration (see
`assistant.evaluation.harness`). IR metrics (Recall@1/5/10, MRR, nDCG@10) are computed by
ir-measures (pytrec_eval underneath) from the retrieved ranking and the gold
papers; the answer metrics are plain ratios defined in each function.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import ir_measures
from ir_measures import RR, R, nDCG

IR_MEASURES = {"R@1": R @ 1, "R@5": R @ 5, "R@10": R @ 10, "MRR": RR, "nDCG@10": nDCG @ 10}
RECALL_CURVE = range(1, 11)


@dataclass
class EvalRecord:
    """One question under one configuration: what was retrieved, cited and said, and how long it took."""

    config: str
    qid: str
    qtype: str
    question: str
    gold: list[str]
    ranking: list[str]
    cited: list[str]
    abstained: bool
    text: str
    keywords: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    notice: str | None = None
    relevance: dict[str, float] = field(default_factory=dict)
    kind: str = ""  # the question file's finer grouping (paraphrase, absent-topic, …), where it has one
    confidence: str = ""
    partial: bool = False  # answered that the cited abstract lacks what was asked
    about: list[str] = field(default_factory=list)  # the paper a question without an answer is about, where it names one

    @property
    def declined(self) -> bool:
        """Abstained or partial: did not present an answer. Wrong on an answerable question, right on the others."""
        return self.abstained or self.partial

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


def ir_scores(records: Iterable[EvalRecord]) -> dict[str, float]:
    """Mean IR measures over answerable records (ir-measures), plus the recall@k curve."""
    records = [r for r in records if r.answerable]
    if not records:
        return {}
    qrels = [ir_measures.Qrel(r.qid, doc, 1) for r in records for doc in r.gold]
    # a question that retrieved nothing still counts, with a placeholder that matches no gold paper
    run = [ir_measures.ScoredDoc(r.qid, doc, float(len(r.ranking) - i)) for r in records for i, doc in enumerate(r.ranking or ["<nothing>"])]
    measures = list(IR_MEASURES.values()) + [R @ k for k in RECALL_CURVE]
    found = ir_measures.calc_aggregate(measures, qrels, run)
    scores = {name: float(found.get(measure, 0.0)) for name, measure in IR_MEASURES.items()}
    scores.update({f"recall@{k}": float(found.get(R @ k, 0.0)) for k in RECALL_CURVE})
    return scores


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def answer_scores(records: Iterable[EvalRecord]) -> dict[str, float | None]:
    """Citation precision/recall, abstention, keyword hits; None where no question qualifies."""
    records = list(records)
    answered = [r for r in records if r.answerable and not r.declined]
    cited = [r for r in answered if r.cited]
    with_keywords = [r for r in answered if r.keywords]
    return {
        # of the papers an answer cites, the share that are gold
        "citation_precision": _mean([len(set(r.cited) & set(r.gold)) / len(set(r.cited)) for r in cited]),
        # of the gold papers, the share the answer cites
        "citation_recall": _mean([len(set(r.cited) & set(r.gold)) / len(set(r.gold)) for r in answered]),
        # answers citing at least one gold paper
        "cites_gold": _mean([float(bool(set(r.cited) & set(r.gold))) for r in answered]),
        "abstention_rate_none": _mean([float(r.abstained) for r in records if not r.answerable]),
        # no answer presented (abstained, or partial: "the abstract does not state …") where none exists
        "declined_rate_none": _mean([float(r.declined) for r in records if not r.answerable]),
        "false_abstention_rate": _mean([float(r.abstained) for r in records if r.answerable]),
        # answerable questions that got no answer: abstained, or partial as if a stated fact were missing
        "refused_rate": _mean([float(r.declined) for r in records if r.answerable]),
        # partial answers that cite the paper the question is about
        "partial_cites_about": _mean([float(bool(set(r.cited) & set(r.about))) for r in records if r.partial and r.about]),
        "keyword_hit_rate": _mean([sum(k.lower() in r.text.lower() for k in r.keywords) / len(r.keywords) for r in with_keywords]),
        # answers holding every asked fact (all answer keywords), of the answerable questions that list them
        "facts_present": _mean([float(all(k.lower() in r.text.lower() for k in r.keywords)) for r in records if r.answerable and r.keywords]),
        # answers given with high confidence that are wrong: no gold paper cited, or an answer where none exists
        "confident_wrong": _mean([float(not r.answerable or not set(r.cited) & set(r.gold))
                                  for r in records if r.confidence == "high" and not r.declined]),
        "fallbacks": float(sum(1 for r in records if r.notice)),
    }


def latency(records: Iterable[EvalRecord]) -> dict[str, float]:
    """p50/p95 in milliseconds per stage (retrieval, first_token, total)."""
    records = list(records)
    out: dict[str, float] = {}
    for stage in ("retrieval", "first_token", "total"):
        values = sorted(r.timings[stage] * 1000 for r in records if stage in r.timings)
        if values:
            out[f"{stage}_p50_ms"] = statistics.median(values)
            out[f"{stage}_p95_ms"] = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return out


def summarize(records: list[EvalRecord]) -> dict[str, Any]:
    """All metrics, overall, per question type and per kind (when the question file has kinds)."""
    types = sorted({r.qtype for r in records})
    def block(subset: list[EvalRecord]) -> dict[str, Any]:
        return {"questions": len(subset), **ir_scores(subset), **answer_scores(subset), **latency(subset)}
    kinds = sorted({r.kind for r in records if r.kind})
    return {
        "overall": block(records),
        "by_type": {t: block([r for r in records if r.qtype == t]) for t in types},
        "by_kind": {k: block([r for r in records if r.kind == k]) for k in kinds},
    }
