"""Quality gates: the default configuration, extractive answers, on the development set and the hard file.

Thresholds were chosen on the development set, `eval/own.jsonl` and the odd-numbered hard questions; the hard
gates score only the even-numbered ones (held out), with the default settings (the reader on).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.engine import Assistant
from assistant.evaluation import harness
from assistant.settings import Settings
from tests.conftest import DEV_SET, HARD_SET, dev_questions, gold_paper_ids

pytestmark = pytest.mark.eval


@pytest.fixture(scope="module")
def held_out(shipped_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> dict:
    questions = [json.loads(line) for line in HARD_SET.read_text().splitlines() if line.strip()]
    even = [q for q in questions if int(q["id"].rsplit("-", 1)[1]) % 2 == 0]
    path = tmp_path_factory.mktemp("hard") / "held_out.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in even))
    report = harness.run(path, ["default"], None, settings=shipped_settings, progress=False)
    assert not report.unmatched_gold
    return report.summaries["default"]["by_kind"]


def test_paraphrases_find_and_answer_the_paper(held_out: dict) -> None:
    paraphrase = held_out["paraphrase"]
    assert paraphrase["questions"] == 20
    assert paraphrase["R@5"] >= 0.95 and paraphrase["R@1"] >= 0.8
    assert paraphrase["refused_rate"] <= 0.05  # abstained or partial
    assert paraphrase["cites_gold"] >= 0.9


def test_absent_details_are_partial_answers_citing_the_paper(held_out: dict) -> None:
    detail = held_out["absent-detail"]
    assert detail["declined_rate_none"] >= 0.9  # the goal
    assert detail["partial_cites_about"] >= 0.85  # goal: all; one about-paper ranks below an on-topic neighbour


def test_absent_topics_abstain(held_out: dict) -> None:
    assert held_out["absent-topic"]["abstention_rate_none"] >= 0.9


def test_dev_set_meets_the_grounding_bars(shipped_settings: Settings, tmp_path: Path) -> None:
    """The grounding bars, measured on the shipped dev set with the default settings and extractive answers."""
    report = harness.run(DEV_SET, ["default"], tmp_path / "run", settings=shipped_settings, progress=False)
    by_type = report.summaries["default"]["by_type"]
    assert not report.unmatched_gold
    assert by_type["single"]["R@5"] >= 0.95 and by_type["keyword"]["R@5"] >= 0.95
    assert by_type["multi"]["R@10"] >= 0.8
    assert by_type["none"]["abstention_rate_none"] >= 0.8
    assert report.summaries["default"]["overall"]["false_abstention_rate"] <= 0.05
    assert by_type["single"]["cites_gold"] >= 0.9 and by_type["keyword"]["cites_gold"] >= 0.9
    for record in report.records:
        assert set(record.cited) <= set(record.ranking), record.qid
        assert record.abstained == (not record.cited), record.qid


def test_dev_set_retrieval_recall(shipped: Assistant) -> None:
    """Retrieval alone: Recall@5 >= 0.95 on single+keyword, gold recall within top 10 >= 0.8 on multi."""
    hits, multi = [], []
    for q in dev_questions():
        if q["type"] not in ("single", "keyword", "multi"):
            continue
        gold = gold_paper_ids(q)
        found = [p.paper_id for p in shipped.search(q["question"], q["history"], k=10).papers]
        if q["type"] == "multi":
            multi.append(len(gold & set(found)) / len(gold))
        else:
            hits.append(bool(gold & set(found[:5])))
    assert sum(hits) / len(hits) >= 0.95
    assert sum(multi) / len(multi) >= 0.8
