"""The UI's HTML: citations in order, highlighted sentences, closest matches, and escaping of untrusted text."""

from __future__ import annotations

from assistant.answer.result import Answer
from assistant.ingest.papers import Paper
from ui.render import escape_answer, export_markdown, papers_html, status_text

EVIL = Paper(
    paper_id="evil",
    label="<img src=x onerror=alert(1)>",
    abstract="We study <script>alert('x')</script> attacks. Results hold.",
    snippet="We study <script>alert('x')</script> attacks. Results hold.",
    score=0.5,
    url="javascript:alert(1)",
)
GOOD = Paper(paper_id="good", label="GoodNet: a net", abstract="GoodNet is good. It works well.", snippet="GoodNet is good. It works well.", score=0.8,
             title="GoodNet", authors=["A. Author"], url="https://example.org/good", status="Oral",
             links={"openreview": "https://openreview.net/g", "pdf": "javascript:alert(1)"})


def test_cards_escape_corpus_text_and_refuse_script_links() -> None:
    html = papers_html(Answer(text="We study <script>alert('x')</script> attacks. [1]", citations=[EVIL], sources=[EVIL]))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "javascript:" not in html
    assert escape_answer("<b>x</b> [1]") == "&lt;b&gt;x&lt;/b&gt; [1]"
    assert escape_answer("![a](http://h/x.png) [1]") == "!\\[a\\](http\\://h/x.png) [1]"


def test_cited_papers_in_citation_order_with_highlight_and_link() -> None:
    answer = Answer(text="GoodNet is good. [1] We study <script>alert('x')</script> attacks. [2]", citations=[GOOD, EVIL], sources=[EVIL, GOOD],
                    passages=[["GoodNet is good."], ["We study <script>alert('x')</script> attacks."]])
    html = papers_html(answer)
    assert html.index("[1]") < html.index("GoodNet") < html.index("[2]")
    assert "<mark>GoodNet is good.</mark>" in html and "<mark>We study &lt;script&gt;" in html
    assert '<a href="https://example.org/good"' in html and "A. Author" in html
    assert '<a href="https://openreview.net/g"' in html and "Oral" in html and "javascript" not in html
    assert "<details><summary>Full abstract</summary>" in html


def test_abstained_answer_shows_closest_matches_not_citations() -> None:
    html = papers_html(Answer(text="not covered", sources=[GOOD], abstained=True))
    assert "Closest matches" in html and "[1]" not in html


def test_status_and_export() -> None:
    answer = Answer(text="GoodNet is good. [1]", citations=[GOOD], sources=[GOOD], model="extractive",
                    timings={"retrieval": 0.012, "first_token": 0.02, "total": 0.03}, question="Is GoodNet good?", notice="model down")
    assert status_text(answer).startswith("mode: extractive · confidence: n/a · retrieval 12 ms · first text 20 ms · total 30 ms")
    assert "⚠ model down" in status_text(answer)
    abstained = Answer(text="not covered", sources=[GOOD], abstained=True, relevance={"lexical": 0.5512, "semantic": 0.8361})
    assert status_text(abstained).endswith("relevance 0.55 · E5 0.836")
    read = Answer(text="not covered", sources=[GOOD], abstained=True, relevance={"lexical": 0.5512, "reader": 0.4102})
    assert status_text(read).endswith("relevance 0.55 · reader 0.410")
    md = export_markdown([answer.to_dict()])
    assert "## Q: Is GoodNet good?" in md and "[1] GoodNet. A. Author. https://example.org/good" in md


def test_unsupported_citation_is_marked_on_its_card() -> None:
    answer = Answer(text="GoodNet cures colds [1].", citations=[GOOD], sources=[GOOD],
                    unsupported=[{"number": 1, "sentence": "GoodNet cures <colds>", "score": 0.1}])
    html = papers_html(answer)
    assert 'class="paper-card unsupported"' in html and "may not support: “GoodNet cures &lt;colds&gt;”" in html
    assert "without citing" in papers_html(Answer(text="Claims.", citations=[GOOD], sources=[GOOD], ungrounded=True))


def test_gradio_chat_messages_become_plain_turns() -> None:
    import gradio as gr

    from ui.app import chat_history

    chatbot = gr.Chatbot()
    messages = chatbot.preprocess(chatbot.postprocess([{"role": "user", "content": "Is there work on NeRF compression?"},
                                                       {"role": "assistant", "content": "Yes &lt;b&gt; [1]"}]))
    assert chat_history(messages) == [{"role": "user", "content": "Is there work on NeRF compression?"},
                                      {"role": "assistant", "content": "Yes <b> [1]"}]
    typed = "What about <script>x</script>, ![a](http://h/i.png) and www.x.org?"
    shown = chatbot.preprocess(chatbot.postprocess([{"role": "user", "content": escape_answer(typed)}]))
    assert chat_history(shown) == [{"role": "user", "content": typed}]  # earlier turns reach the engine as typed


def test_partial_and_unsure_answers_say_so_beside_the_cards() -> None:
    partial = Answer(text="GoodNet is about this [1].", citations=[GOOD], sources=[GOOD], partial=True, missing=["which GPU"], confidence="medium")
    assert "Partial answer: the cited abstract does not state which GPU." in papers_html(partial)
    assert "confidence: partial" in status_text(partial)
    unsure = Answer(text="GoodNet is good [1].", citations=[GOOD], sources=[GOOD], confidence="medium")
    assert "likely, but not certain" in papers_html(unsure) and "confidence: medium" in status_text(unsure)
    sure = Answer(text="GoodNet is good [1].", citations=[GOOD], sources=[GOOD], confidence="high")
    assert "not certain" not in papers_html(sure) and sure.caveat == ""


def test_every_retrieved_paper_is_listed_with_its_score() -> None:
    answer = Answer(text="GoodNet is good [1].", citations=[GOOD], sources=[GOOD, EVIL])
    html = papers_html(answer)
    listed = html.split('<details class="retrieved">')[1]
    assert "All 2 retrieved" in listed and listed.count("<li") == 2 and "· cited" in listed
    assert "&lt;img src=x onerror=alert(1)&gt;" in listed and "<img" not in listed


def test_highlights_are_the_abstracts_own_sentences_never_the_model_wording() -> None:
    """A model's paraphrase is not highlighted as if the abstract said it; the abstract sentence backing it is."""
    answer = Answer(text="GoodNet performs very well and is good [1] and [2].", citations=[GOOD, EVIL], sources=[GOOD, EVIL],
                    passages=[["It works well."], ["Results hold."]])
    html = papers_html(answer)
    assert "<mark>It works well.</mark>" in html and "<mark>Results hold.</mark>" in html
    assert "performs very well" not in html and "<mark>and</mark>" not in html


def test_citation_chips_link_each_number_to_its_turns_card_and_go_back_to_plain_text() -> None:
    from ui.render import link_citations, unescape_answer

    shown = link_citations(escape_answer("A <b>claim</b> [1]. Two at once [1, 2]."), 4)
    assert shown.count('href="#card-4-1"') == 2 and shown.count('href="#card-4-2"') == 1 and "<b>" not in shown
    assert unescape_answer(shown) == "A <b>claim</b> [1]. Two at once [1, 2]."


def test_the_panel_keeps_every_turns_cards_newest_first() -> None:
    from ui.render import panel_html

    first = Answer(text="GoodNet is good. [1]", citations=[GOOD], sources=[GOOD], question="Is GoodNet good?", passages=[["GoodNet is good."]])
    second = Answer(text="Results hold. [1]", citations=[EVIL], sources=[EVIL], question="Do results hold?", passages=[["Results hold."]])
    html = panel_html([first.to_dict(), second.to_dict()])
    assert html.index('id="card-1-1"') < html.index('id="card-0-1"') and "Q1: Is GoodNet good?" in html


def test_bibtex_for_cited_papers_once_each_and_parseable() -> None:
    import bibtexparser

    from ui.render import bibtex

    odd = Paper(paper_id="odd", label="x", abstract="x", title="Braces {and} 100% & more_", authors=["Ann Lee", "Bo Chen"],
                url="https://proceedings.mlr.press/v235/lee24a.html")
    turns = [Answer(text="[1] [2]", citations=[GOOD, odd]).to_dict(), Answer(text="[1]", citations=[GOOD]).to_dict()]
    entries = bibtexparser.loads(bibtex(turns)).entries
    assert len(entries) == 2
    lee = next(e for e in entries if e["ID"].startswith("lee"))
    assert lee["ENTRYTYPE"] == "inproceedings" and lee["year"] == "2024" and lee["author"] == "Ann Lee and Bo Chen"
    assert "ICML 2024" in lee["booktitle"] and lee["url"] == odd.url
    assert bibtex([]) == ""
