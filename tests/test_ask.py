"""`ask()` and `Assistant` on the shipped corpus, and the `assistant` command in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from assistant import Answer, Assistant, Paper
from assistant.cli import app
from assistant.errors import AssistantError, QuestionError
from assistant.settings import Settings
from tests.conftest import GRAPHS, ROBOTS, SOLAR, SPIKING, titled_corpus

UNAMBIGUOUS = {
    "What is PRepBN and what problem does it solve in Transformers?": "PRepBN",
    "What guarantees does the FESSNC controller provide for stochastic differential equations?": "FESSNC",
    "What is MorseDet and which mathematical tools does it build on?": "MorseDet",
    "How does the balanced resonate-and-fire (BRF) neuron improve recurrent spiking neural networks?": "balanced RF",
    "How can a grid-based NeRF model be compressed to reduce its storage overhead?": "compressing a grid-based NeRF",
}


@pytest.mark.parametrize("question", list(UNAMBIGUOUS))
def test_right_paper_first(shipped: Assistant, question: str) -> None:
    answer = shipped.ask(question)
    assert not answer.abstained
    assert UNAMBIGUOUS[question] in answer.sources[0].abstract
    assert UNAMBIGUOUS[question] in answer.citations[0].abstract
    assert "[1]" in answer.text


def test_answer_shape_and_json(shipped: Assistant) -> None:
    answer = shipped.ask("Is there work on pruning spiking neural networks?", k=7)
    assert isinstance(answer, Answer) and len(answer.sources) == 7
    assert all(isinstance(p, Paper) and p.paper_id and p.label and p.abstract and p.snippet for p in answer.sources)
    assert [p.paper_id for p in answer.citations] == list(dict.fromkeys(p.paper_id for p in answer.citations))
    assert {p.paper_id for p in answer.citations} <= {p.paper_id for p in answer.sources}
    assert answer.model == "extractive" and answer.timings["retrieval"] > 0 and answer.timings["total"] >= answer.timings["retrieval"]
    data = json.loads(json.dumps(answer.to_dict()))
    assert data["citations"][0]["paper_id"] == answer.citations[0].paper_id
    assert len({p.paper_id for p in answer.sources}) == 7  # one entry per paper


def test_every_quoted_sentence_is_in_its_cited_abstract(shipped: Assistant) -> None:
    """Quotes are verbatim; where an answer quotes several papers, each paragraph opens with its paper's title."""
    import re

    for question in ["Which papers study imitation learning from imperfect demonstrations?", "How do diffusion models solve inverse problems?"]:
        answer = shipped.ask(question)
        for paragraph in answer.text.split("\n\n"):
            heading = re.match(r"\*\*(.+?)\*\*: ", paragraph)
            for sentence, number in re.findall(r"(.+?) \[(\d+)\]\s*", paragraph[heading.end() if heading else 0 :]):
                paper = answer.citations[int(number) - 1]
                assert sentence.strip() in paper.abstract
                assert heading is None or heading.group(1) == paper.title


def test_stream_yields_text_then_answer(shipped: Assistant) -> None:
    pieces = list(shipped.stream("Which papers propose new neuron models for spiking neural networks?"))
    assert all(isinstance(p, str) for p in pieces[:-1]) and isinstance(pieces[-1], Answer)
    assert "".join(pieces[:-1]).strip() == pieces[-1].text


def test_history_as_strings_or_messages(shipped: Assistant) -> None:
    first = "Is there a paper about shrinking the storage footprint of grid-based neural radiance field models?"
    follow = "What training objective does that method introduce?"
    for history in ([first], [{"role": "user", "content": first}, {"role": "assistant", "content": "Yes [1]."}]):
        answer = shipped.ask(follow, history)
        assert "NeRF" in answer.citations[0].abstract



def test_a_topic_question_is_answered_from_the_paper_ranked_first_not_one_sentence_elsewhere(tmp_path: Path) -> None:
    """Ranking reads whole abstracts; one sentence of another paper can share more of the question's words ("whether
    language model agents can negotiate prices is beside the point here") without being about it."""
    about = "We study language model agents that negotiate with one another. Agents split a shared pot, trade resources and bargain over prices in multi-turn dialogues. We find that stronger models strike better deals, and that agents often concede too early. We release a benchmark of negotiation games."
    aside = "We argue that scaling simulation is not enough for robot learning. Whether language model agents can negotiate prices is beside the point here. We analyse contact-rich manipulation and show where simulators fail. Grasping and insertion remain hard."
    assistant = titled_corpus(tmp_path, [("Negotiating Agents", about), ("Simulation Critique", aside)] + [(name, text) for name, text in zip(("SpikePrune", "GraphHop", "Robots", "SunCast"), (SPIKING, GRAPHS, ROBOTS, SOLAR))])
    answer = assistant.ask("Can language model agents negotiate prices?")
    assert answer.sources[0].abstract == about and answer.citations[0].abstract == about, answer.text


def test_a_follow_up_on_the_conversations_paper_is_not_declined_for_its_own_words(shipped: Assistant) -> None:
    """After a terse first question, both turns' words together match its paper less well than the first turn alone
    (the reader declined them); "they" are still the paper the first turn found, and the missing detail is said."""
    first = "rl for moving ambulances between stations"
    found = shipped.ask(first)
    answer = shipped.ask("which models did they test it on?", [first])
    assert not found.abstained and "ambulance" in found.citations[0].abstract
    assert not answer.abstained and answer.citations == found.citations[:1]
    assert answer.partial and answer.missing == ["which models"]

def test_off_topic_question_abstains_with_closest_matches(shipped: Assistant) -> None:
    answer = shipped.ask("Which paper proposes a neural method for music source separation, isolating vocals from a mixed track?")
    assert answer.abstained and not answer.citations and answer.sources
    assert "don't cover" in answer.text and "Closest matches" in answer.text


@pytest.mark.parametrize("question", ["", "   \n\t", "???", "\x00\x01"])
def test_empty_questions_are_rejected_clearly(shipped: Assistant, question: str) -> None:
    with pytest.raises(QuestionError, match="empty"):
        shipped.ask(question)


def test_huge_question_is_rejected_and_odd_text_answered(shipped: Assistant) -> None:
    with pytest.raises(QuestionError, match="limit is 4,000"):
        shipped.ask("spiking " * 2000)
    for odd in ["<script>alert(1)</script> spiking networks", "剪枝 spiking \ud800 networks", "**pruning** _SNN_ `code`"]:
        assert isinstance(shipped.ask(odd), Answer)


def test_unknown_option_and_bad_k(shipped: Assistant) -> None:
    with pytest.raises(TypeError, match="unknown option"):
        shipped.ask("spiking", temperature_typo=1)
    for bad in (0, 51, "three", 2.5, True):
        with pytest.raises(AssistantError, match="k must be a whole number between 1 and 50"):
            shipped.ask("spiking", k=bad)  # type: ignore[arg-type]
    assert len(shipped.ask("spiking networks", k="3", llm_provider="extractive").sources) == 3  # type: ignore[arg-type]
    assert shipped.ask("spiking networks", retrieval_mode="bm25").sources


def test_concurrent_asks_each_get_their_own_paper(shipped: Assistant) -> None:
    questions = list(UNAMBIGUOUS.items()) * 4
    results: dict[int, Answer] = {}

    def run(i: int, question: str) -> None:
        results[i] = shipped.ask(question)

    threads = [threading.Thread(target=run, args=(i, q)) for i, (q, _) in enumerate(questions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == len(questions)
    for i, (_, marker) in enumerate(questions):
        assert marker in results[i].citations[0].abstract


def _cli(args: list[str], settings: Settings, **env: str) -> Result:
    """The `assistant` command run in this process (Typer's runner), against `settings`' store."""
    return CliRunner().invoke(app, args, env={"INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(settings.cache_dir), **env})


def test_cli_ask_json_and_text(shipped_settings: Settings) -> None:
    result = _cli(["ask", "--json", "-k", "3", "What is PRepBN?"], shipped_settings)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["sources"]) == 3 and "PRepBN" in data["citations"][0]["abstract"]
    text = _cli(["ask", "What is PRepBN?"], shipped_settings)
    assert text.exit_code == 0 and "[1]" in text.stdout and "Cited papers" in text.stdout


@pytest.mark.slow
def test_cli_in_a_fresh_process_starts_without_the_server_side(shipped_settings: Settings) -> None:
    """The one CLI test in a subprocess: a cold `assistant ask` answers, and importing the API loads no Gradio."""
    env = {**os.environ, "INDEX_DIR": str(shipped_settings.index_dir), "CACHE_DIR": str(shipped_settings.cache_dir)}
    cold = subprocess.run([sys.executable, "-m", "assistant.cli", "ask", "What is PRepBN?"], env=env, capture_output=True, text=True, timeout=120)
    assert cold.returncode == 0 and "[1]" in cold.stdout, cold.stderr
    probe = "import sys, assistant.cli; from assistant import ask; print('gradio' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"


def _failed(result: Result, code: int) -> str:
    """The one-line error of a command that exited with `code` on purpose (an exception escaping would be a crash)."""
    assert result.exit_code == code and isinstance(result.exception, SystemExit), result.output
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
    return result.stderr


def test_cli_errors_are_messages_with_exit_codes(shipped_settings: Settings) -> None:
    _failed(_cli(["ask", "  "], shipped_settings), 1)
    assert "assistant index --collection nothere" in _failed(_cli(["ask", "x", "--collection", "nothere"], shipped_settings), 1)
    assert "TOP_K" in _failed(_cli(["ask", "x"], shipped_settings, TOP_K="zero"), 2)
    assert "/nonexistent" in _failed(_cli(["index", "--corpus", "/nonexistent"], shipped_settings), 1)


def test_public_names_load_on_first_use() -> None:
    import assistant
    from assistant import Answer as PublicAnswer
    from assistant import Assistant as PublicAssistant
    from assistant import ask as public_ask
    from assistant.engine import ask as engine_ask

    assert public_ask is engine_ask and PublicAssistant is Assistant and PublicAnswer is Answer
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        assistant.nope  # noqa: B018
