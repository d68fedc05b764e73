"""The evaluation harness: metrics on a hand-made case, gold matching by text, the CLI writing its reports."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assistant.cli import app
from assistant.evaluation import harness
from assistant.evaluation.metrics import EvalRecord, answer_scores, ir_scores, latency
from assistant.ingest.corpus import read_corpus
from assistant.settings import Settings
from tests.conftest import DEV_SET, SHIPPED_CORPUS


def _rec(qid: str, gold: list[str], ranking: list[str], cited: list[str], abstained: bool = False, text: str = "", keywords: list[str] | None = None) -> EvalRecord:
    return EvalRecord("c", qid, "single" if gold else "none", "q", gold, ranking, cited, abstained, text, keywords or [], {"retrieval": 0.01, "total": 0.02})


def test_ir_metrics_match_hand_computation() -> None:
    records = [_rec("q1", ["a", "b"], ["b", "x", "a"], []), _rec("q2", ["c"], ["y", "c"], []), _rec("q3", [], ["z"], [])]
    scores = ir_scores(records)
    assert scores["R@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert scores["R@5"] == pytest.approx(1.0)
    assert scores["MRR"] == pytest.approx((1.0 + 0.5) / 2)
    ndcg_q1 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    ndcg_q2 = (1 / math.log2(3)) / 1
    assert scores["nDCG@10"] == pytest.approx((ndcg_q1 + ndcg_q2) / 2)
    assert scores["recall@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert ir_scores([_rec("q4", ["a"], [], [])])["R@10"] == 0.0  # nothing retrieved still counts


def test_answer_metrics_match_hand_computation() -> None:
    records = [
        _rec("q1", ["a", "b"], ["a"], ["a", "x"], text="Uses LayerNorm.", keywords=["layernorm", "batchnorm"]),
        _rec("q2", ["c"], ["c"], ["c"], text="BatchNorm.", keywords=["batchnorm"]),
        _rec("q3", ["d"], ["d"], [], abstained=True),
        _rec("n1", [], ["z"], [], abstained=True),
        _rec("n2", [], ["z"], ["z"]),
    ]
    scores = answer_scores(records)
    assert scores["citation_precision"] == pytest.approx((1 / 2 + 1) / 2)
    assert scores["citation_recall"] == pytest.approx((1 / 2 + 1) / 2)
    assert scores["abstention_rate_none"] == pytest.approx(0.5)
    assert scores["false_abstention_rate"] == pytest.approx(1 / 3)
    assert scores["keyword_hit_rate"] == pytest.approx((1 / 2 + 1) / 2)
    assert latency(records)["total_p50_ms"] == pytest.approx(20.0)


def test_gold_matches_duplicates_and_truncated_copies_by_text() -> None:
    papers = read_corpus(SHIPPED_CORPUS).papers
    matcher = harness.GoldMatcher(papers, [SHIPPED_CORPUS])
    questions = harness.load_questions(DEV_SET)
    for question in questions:
        for gold in question["gold"]:
            assert len(matcher.match(gold)) == 1, gold
    by_prefix = harness.GoldMatcher(papers, [])  # corpus files absent: the 80-character prefix decides
    assert by_prefix.match(questions[0]["gold"][0]) == matcher.match(questions[0]["gold"][0])


def test_run_in_python_and_unknown_config(shipped_settings: Settings, tmp_path: Path) -> None:
    report = harness.run(DEV_SET, ["hybrid", "bm25"], tmp_path / "run", limit=6, settings=shipped_settings, progress=False)
    assert set(report.summaries) == {"hybrid", "bm25"} and len(report.records) == 12
    assert report.summaries["hybrid"]["overall"]["R@5"] >= 0.8 and not report.unmatched_gold
    with pytest.raises(harness.AssistantError, match="unknown configuration"):
        harness.run(DEV_SET, ["nope"], settings=shipped_settings)


def test_cli_eval_writes_reports(shipped_settings: Settings, tmp_path: Path) -> None:
    out = tmp_path / "report"
    env = {"INDEX_DIR": str(shipped_settings.index_dir), "CACHE_DIR": str(shipped_settings.cache_dir)}
    result = CliRunner().invoke(app, ["eval", "--questions", str(DEV_SET), "--config", "hybrid", "--config", "dense",
                                      "--types", "single", "--types", "none", "--limit", "8", "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert "deltas against hybrid" in result.stdout and "R@5" in result.stdout
    data = json.loads((out / "report.json").read_text())
    assert data["configs"] == ["hybrid", "dense"] and len(data["records"]) == 16
    assert set(data["summaries"]["hybrid"]["by_type"]) <= {"single", "none"}
    markdown = (out / "report.md").read_text()
    assert "| metric | hybrid | dense |" in markdown and "## `single`" in markdown
    rows = list(csv.DictReader((out / "per_question.csv").open()))
    assert len(rows) == 16 and {"gold", "retrieved_top5", "cited", "answer", "relevance", "relevance_e5"} <= set(rows[0])
    assert all(float(row["relevance"]) >= 0 for row in rows)
    for plot in ("recall_at_k.png", "latency.png"):
        assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_after_an_opening_turn_asks_every_question_as_a_chat_s_later_turn(shipped_settings: Settings, tmp_path: Path) -> None:
    """`--after` opens every question's conversation with one question and its answer: the development set's single-paper
    questions score as they do alone (before, most were answered from the opening turn's paper)."""
    env = {"INDEX_DIR": str(shipped_settings.index_dir), "CACHE_DIR": str(shipped_settings.cache_dir)}
    scores = {}
    for name, extra in (("alone", []), ("after", ["--after", "any work on protein structure generation with diffusion models?"])):
        result = CliRunner().invoke(app, ["eval", "--questions", str(DEV_SET), "--types", "single", "--out", str(tmp_path / name), *extra], env=env)
        assert result.exit_code == 0, result.output
        scores[name] = json.loads((tmp_path / name / "report.json").read_text())["summaries"]["default"]["overall"]["R@1"]
    assert scores["after"] == scores["alone"] > 0.8, scores


def test_facts_present_and_confident_wrong_answers_are_counted() -> None:
    from dataclasses import replace

    right = replace(_rec("q1", ["a"], ["a"], ["a"], text="It uses 21 datasets and MuJoCo.", keywords=["21", "mujoco"]), confidence="high")
    half = replace(_rec("q2", ["b"], ["b"], ["b"], text="It uses MuJoCo.", keywords=["21", "mujoco"]), confidence="medium")
    wrong = replace(_rec("q3", ["c"], ["d"], ["d"]), confidence="high")
    invented = replace(_rec("q4", [], ["e"], ["e"]), confidence="high")
    scores = answer_scores([right, half, wrong, invented])
    assert scores["facts_present"] == 0.5  # q1 holds both facts, q2 one of two
    assert scores["confident_wrong"] == 2 / 3  # q3 cites no gold paper, q4 answers where nothing should be
