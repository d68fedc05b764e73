"""Evaluation reports: JSON, Markdown tables with deltas, a per-question CSV and PNG plots."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assistant.evaluation.metrics import EvalRecord


@dataclass
class EvalReport:
    """Records and per-configuration summaries of one evaluation run."""

    questions: str
    configs: list[str]
    records: list[EvalRecord]
    summaries: dict[str, dict[str, Any]]
    started_at: str
    unmatched_gold: list[str] = field(default_factory=list)
    out_dir: Path | None = None


TABLE_METRICS = [
    "R@1", "R@5", "R@10", "MRR", "nDCG@10", "citation_precision", "citation_recall", "cites_gold",
    "abstention_rate_none", "declined_rate_none", "partial_cites_about", "false_abstention_rate", "refused_rate", "keyword_hit_rate", "facts_present", "confident_wrong", "retrieval_p50_ms", "total_p50_ms", "total_p95_ms",
]


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _block(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """The overall metrics, or those of one question type or kind."""
    if name == "overall":
        return summary["overall"]
    return summary["by_type"].get(name) or summary.get("by_kind", {}).get(name, {})


def kinds(report: EvalReport) -> list[str]:
    """The question kinds the file has (empty for files without `kind`)."""
    return sorted({k for s in report.summaries.values() for k in s.get("by_kind", {})})


def comparison_rows(report: EvalReport, block: str = "overall") -> list[list[str]]:
    """One row per metric: each configuration's value, and its delta against the first configuration."""
    configs = report.configs
    rows = []
    for metric in TABLE_METRICS:
        values = [_block(report.summaries[c], block).get(metric) for c in configs]
        cells = [metric, _fmt(values[0])]
        for value in values[1:]:
            delta = f" ({value - values[0]:+.3f})" if isinstance(value, float) and isinstance(values[0], float) else ""
            cells.append(_fmt(value) + delta)
        rows.append(cells)
    return rows


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(report: EvalReport) -> str:
    header = ["metric", *report.configs]
    parts = [f"# Evaluation of `{report.questions}`", "", f"Run {report.started_at}; configurations: {', '.join(report.configs)}; "
             f"deltas are against `{report.configs[0]}`.", "", "## Overall", "", _markdown_table(header, comparison_rows(report))]
    types = sorted({t for s in report.summaries.values() for t in s["by_type"]})
    for qtype in types:
        count = report.summaries[report.configs[0]]["by_type"].get(qtype, {}).get("questions", 0)
        parts += ["", f"## `{qtype}` ({count} questions)", "", _markdown_table(header, comparison_rows(report, qtype))]
    for kind in kinds(report):
        count = report.summaries[report.configs[0]]["by_kind"][kind]["questions"]
        parts += ["", f"## kind `{kind}` ({count} questions)", "", _markdown_table(header, comparison_rows(report, kind))]
    if report.unmatched_gold:
        parts += ["", "## Gold entries not found in the index", ""] + [f"- {g}" for g in report.unmatched_gold]
    return "\n".join(parts) + "\n"


def _plots(report: EvalReport, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for config in report.configs:
        overall = report.summaries[config]["overall"]
        ks = [k for k in range(1, 11) if f"recall@{k}" in overall]
        ax.plot(ks, [overall[f"recall@{k}"] for k in ks], marker="o", label=config)
    ax.set(xlabel="k (papers retrieved)", ylabel="recall@k", title="Recall@k on answerable questions", ylim=(0, 1.02))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "recall_at_k.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    data = [[r.timings.get("total", 0.0) * 1000 for r in report.records if r.config == c] for c in report.configs]
    ax.boxplot(data)
    ax.set_xticks(range(1, len(report.configs) + 1), report.configs)
    ax.set(ylabel="ms per answer", title="Answer latency (total)")
    ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=110)
    plt.close(fig)


def write_report(report: EvalReport, out: Path) -> Path:
    """report.json, report.md, per_question.csv, recall_at_k.png and latency.png under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "questions": report.questions, "configs": report.configs, "started_at": report.started_at,
        "summaries": report.summaries, "unmatched_gold": report.unmatched_gold, "records": [asdict(r) for r in report.records],
    }
    (out / "report.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    with open(out / "per_question.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "id", "type", "question", "gold", "retrieved_top5", "cited", "gold_rank", "abstained", "relevance", "relevance_e5", "relevance_reader",
                         "keywords_hit", "total_ms", "notice", "answer"])
        for r in report.records:
            rank = next((i + 1 for i, pid in enumerate(r.ranking) if pid in r.gold), "")
            hits = sum(k.lower() in r.text.lower() for k in r.keywords)
            writer.writerow([r.config, r.qid, r.qtype, r.question, " ".join(r.gold), " ".join(r.ranking[:5]), " ".join(r.cited), rank,
                             r.abstained, r.relevance.get("lexical", ""), r.relevance.get("semantic", ""), r.relevance.get("reader", ""), f"{hits}/{len(r.keywords)}", f"{r.timings.get('total', 0) * 1000:.1f}", r.notice or "", r.text])
    _plots(report, out)
    return out
