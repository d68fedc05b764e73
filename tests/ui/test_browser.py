"""The real app in a real browser (Debian chromium via Playwright) and through gradio_client."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.exceptions import AuthenticationError
from playwright.sync_api import Page, expect, sync_playwright

from assistant.indexing.indexer import build_index
from assistant.settings import SAMPLE_FACTS, Settings
from tests.conftest import SHARED_DATA, SHIPPED_CORPUS, make_settings, serving
from tests.openai_server import MODEL, Behaviour, ScriptedServer

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


METADATA = SHARED_DATA / "icml2024_all.jsonl"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory, shipped_settings: Settings) -> Iterator[str]:
    """The default index (the shipped corpus, whose titles and links come with it), served by `assistant serve`.

    Its own store, with the test run's embedding caches copied in (as a user's warm cache): building starts from cached vectors.
    """
    root = tmp_path_factory.mktemp("ui")
    settings = make_settings(root)
    settings.cache_dir.mkdir(parents=True)
    for cached in shipped_settings.cache_dir.glob("*.npy"):
        shutil.copy(cached, settings.cache_dir / cached.name)
    build_index(settings, SHIPPED_CORPUS, progress=False)
    if METADATA.is_file():  # a second index: conference papers the sample lacks, among them one on accelerated MRI
        build_index(settings.with_overrides(collection=MORE), _conference_slice(root), progress=False, reader_vectors=False)
    with serving(root, settings) as (url, _):
        yield url


MORE = "icml2024-more"
MRI = "Robustness of Deep Learning for Accelerated MRI"


def _conference_slice(root: Path, count: int = 60) -> Path:
    """`count` conference papers that are not in the shipped sample, the accelerated-MRI paper first, as a JSONL corpus."""
    sample = {json.loads(line)["title"] for line in SAMPLE_FACTS.read_text(encoding="utf-8").splitlines() if line.strip()}
    rows = [json.loads(line) for line in METADATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = sorted((r for r in rows if r.get("abstract") and r.get("title") not in sample), key=lambda r: MRI not in r["title"])[:count]
    path = root / "more.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    return path


def test_chat_in_browser_shows_citation_and_card(app_url: str, tmp_path: Path) -> None:
    assert os.path.exists(CHROMIUM), "make test installs Debian's chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(app_url)
        page.locator("#question textarea").fill("What is PRepBN and what problem does it solve in Transformers?")
        page.locator("#ask").click()
        bot = page.locator("#chat [data-testid='bot']").last
        expect(bot).to_contain_text("[1]", timeout=30_000)
        expect(bot).to_contain_text("PRepBN")
        card = page.locator("#papers .paper-card").first
        expect(card).to_contain_text("[1]")
        expect(card).to_contain_text("PRepBN")
        link = card.locator(".paper-title a")  # real titles and links out of the box, from index/papers.jsonl
        expect(link).to_have_text("SLAB: Efficient Transformers with Simplified Linear Attention and Progressive Re-parameterized Batch Normalization")
        assert link.get_attribute("href").startswith("https://icml.cc/virtual/2024/")
        expect(card.locator(".authors")).not_to_be_empty()
        expect(page.locator("#status")).to_contain_text("mode: extractive")

        page.locator("#question textarea").fill("Is there a paper about shrinking the storage footprint of grid-based neural radiance field models?")
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']")).to_have_count(2, timeout=30_000)
        page.locator("#question textarea").fill("What training objective does it introduce?")  # names no topic: needs the history
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']")).to_have_count(3, timeout=30_000)
        expect(page.locator("#papers .paper-card").first).to_contain_text("NeRF", timeout=30_000)
        page.screenshot(path=str(tmp_path / "chat.png"), full_page=True)
        assert (tmp_path / "chat.png").stat().st_size > 10_000
        browser.close()


def _ask(page: object, question: str, answers: int) -> None:
    page.locator("#question textarea").fill(question)  # type: ignore[attr-defined]
    page.locator("#ask").click()  # type: ignore[attr-defined]
    expect(page.locator("#chat [data-testid='bot']")).to_have_count(answers, timeout=30_000)  # type: ignore[attr-defined]
    expect(page.locator("#status")).to_contain_text("mode:", timeout=30_000)  # type: ignore[attr-defined]


@contextmanager
def _page(url: str) -> Iterator[Page]:
    """A 1366×768 page of the app at `url` in headless chromium, closed after."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.goto(url)
            yield page
        finally:
            browser.close()


def _download(page: Page, button: str, path: Path) -> str:
    """Press an export button, follow the file link it shows, and return the downloaded file's text."""
    with page.expect_download() as download:
        page.locator(button).click()
        page.locator("#exported a").first.click()
    download.value.save_as(path)
    return path.read_text(encoding="utf-8")


def test_the_page_switches_index_says_its_scope_and_shows_filters_as_chips(app_url: str) -> None:
    if not METADATA.is_file():
        pytest.skip("the conference data is not beside this checkout")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(app_url)
        expect(page.locator("#scope")).to_contain_text("440 papers, a sample of ICML 2024's 2,634 papers", timeout=30_000)
        question = "How robust is deep learning for accelerated MRI reconstruction?"
        page.locator("#question textarea").fill(question)
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']").last).to_contain_text("don't cover", timeout=30_000)  # not in the sample

        page.locator("#index input").click()
        page.get_by_role("option", name=f"{MORE} · 60 papers").click()
        expect(page.locator("#scope")).to_contain_text(f"{MORE}: 60 papers, from more.jsonl")
        page.locator("#settings").click()
        page.locator("#filter-status").get_by_label("Poster").check()
        chip = page.locator("#chip-status")
        expect(chip).to_be_visible()
        expect(chip).to_have_text("status: Poster ✕")
        page.locator("#question textarea").fill(question)
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']")).to_have_count(2, timeout=60_000)
        expect(page.locator("#chat [data-testid='bot']").last).to_contain_text("[1]", timeout=60_000)
        expect(page.locator("#papers .paper-card").filter(has_text=MRI).first).to_contain_text("[1]")  # cited first, from the other index
        chip.click()  # removing the chip clears its filter
        expect(chip).to_be_hidden()
        expect(page.locator("#filter-status").get_by_label("Poster")).not_to_be_checked()
        browser.close()


def test_citations_open_their_card_and_every_turn_keeps_its_cards(app_url: str) -> None:
    with _page(app_url) as page:
        _ask(page, "Which papers tackle imitation learning from imperfect demonstrations?", 1)
        chip = page.locator("#chat [data-testid='bot']").last.locator("a.cite", has_text="[2]").first
        chip.click()
        card = page.locator("#card-0-2")
        expect(card).to_have_class(re.compile(r"\bopened\b"))
        expect(card).to_be_in_viewport()
        assert card.locator("details").evaluate("d => d.open")
        abstract = card.locator("details p").inner_text()
        for mark in card.locator(".snippet mark").all_inner_texts():  # highlights are the abstract's own sentences
            assert mark and mark in abstract, mark
        _ask(page, "How can a grid-based NeRF be compressed?", 2)
        expect(page.locator("#card-1-1")).to_contain_text("NeRF")
        expect(page.locator("#card-0-2")).to_have_count(1)  # the first turn's cards are still there
        page.locator("#chat [data-testid='bot']").first.locator("a.cite", has_text="[1]").first.click()
        expect(page.locator("#card-0-1")).to_be_in_viewport()


def test_layout_at_1366x768_and_on_a_phone(app_url: str) -> None:
    with _page(app_url) as page:
        for element in ("#status", "#examples", "#counter"):
            box = page.locator(element).bounding_box()
            assert box and box["y"] + box["height"] <= 768, (element, box)  # above the fold
        page.locator("#question textarea").fill("x" * 4100)
        expect(page.locator("#counter")).to_contain_text("4,100 / 4,000 characters — too long")
        phone = page.context.browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        phone.goto(app_url)
        _ask(phone, "What is PRepBN and what problem does it solve in Transformers?", 1)
        top = {name: phone.locator(name).bounding_box()["y"] for name in ("#chat", "#question", "#papers", "#settings")}
        assert top["#chat"] < top["#question"] < top["#papers"] < top["#settings"], top  # the cards follow the answer


def test_status_filter_bibtex_and_copy(app_url: str, tmp_path: Path) -> None:
    import bibtexparser

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        page = context.new_page()
        page.goto(app_url)
        page.locator("#settings").click()
        page.locator("#filter-status").get_by_label("Oral").check()
        _ask(page, "Is there work on diffusion models?", 1)
        statuses = page.locator("#papers .paper-card .status").all_inner_texts()
        assert statuses and set(statuses) == {"Oral"}, statuses
        entries = bibtexparser.loads(_download(page, "#bibtex", tmp_path / "references.bib")).entries
        assert len(entries) == len(page.locator("#card-0-1, #card-0-2, #card-0-3, #card-0-4, #card-0-5").all())
        assert all(e["ENTRYTYPE"] == "inproceedings" and e["year"] == "2024" and e["author"] and e["title"] for e in entries)
        page.locator("#copy").click()
        copied = ""
        for _ in range(40):  # the copy runs after a round trip to the server
            copied = page.evaluate("navigator.clipboard.readText()")
            if "References" in copied:
                break
            page.wait_for_timeout(250)
        assert re.search(r"\[1\][\s\S]*References\s+\[1\] \S", copied), copied  # the answer, then its numbered references
        browser.close()


def test_comparison_table_under_the_answer_links_to_cards_and_exports(app_url: str, tmp_path: Path) -> None:
    """A list question's answer has a table under it: each cell its paper's own sentence, its chip opening that paper's
    card; the table downloads as CSV (one row per paper) and sits in the Markdown export."""
    with _page(app_url) as page:
        _ask(page, "Which papers evaluate on D4RL?", 1)
        table = page.locator("#chat [data-testid='bot']").last.locator(".answer-table table")
        expect(table).to_be_visible()
        assert table.locator("thead th").all_inner_texts() == ["Paper", "Data / benchmarks", "Problem", "Approach", "Headline result"]
        rows = table.locator("tbody tr")
        assert rows.count() >= 3
        cell = rows.nth(1).locator("td").nth(1)  # the second paper's data cell
        cell.locator("a.cite").click()
        card = page.locator("#card-0-2")
        expect(card).to_have_class(re.compile(r"\bopened\b"))
        expect(card).to_be_in_viewport()
        said = cell.inner_text().removesuffix("[2]").strip()
        assert "D4RL" in said and said in card.locator("details p").inner_text(), said
        shown = rows.count()
        exported = list(csv.reader(io.StringIO(_download(page, "#export-csv", tmp_path / "comparison.csv"))))
        assert exported[0][:4] == ["question", "number", "paper_id", "title"] and len(exported) == shown + 1
        assert exported[2][1] == "2" and said + " [2]" in exported[2]
        markdown = _download(page, "#export", tmp_path / "conversation.md")
        assert "| Paper | Data / benchmarks | Problem | Approach | Headline result |" in markdown


def test_ticked_cards_are_compared_exactly(app_url: str) -> None:
    """Tick two cards' "compare" boxes, press the compare button: the answer cites those two papers, side by side."""
    with _page(app_url) as page:
        _ask(page, "Which papers evaluate on D4RL?", 1)
        chosen = [page.locator(f"#card-0-{n}") for n in (1, 3)]
        titles = [card.locator(".paper-title").inner_text().split("] ", 1)[1] for card in chosen]
        for card in chosen:
            card.locator("input.pick").check()
        page.locator("#compare").click()
        expect(page.locator("#status")).not_to_contain_text("Tick at least two", timeout=5_000)
        expect(page.locator("#chat [data-testid='bot']")).to_have_count(2, timeout=30_000)
        answer = page.locator("#chat [data-testid='bot']").last
        expect(answer).to_contain_text("The 2 papers you chose, side by side", timeout=30_000)
        rows = answer.locator(".answer-table tbody tr")
        expect(rows).to_have_count(2)
        assert sorted(row.locator("td.paper").inner_text().split("] ", 1)[1] for row in rows.all()) == sorted(titles)
        cards = page.locator("#turn-1 .paper-card .paper-title").all_inner_texts()
        assert sorted(card.split("] ", 1)[1] for card in cards) == sorted(titles)  # the new turn's cards are those two


def test_empty_and_overlong_questions_add_no_bubbles_and_say_why(app_url: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(app_url)
        page.locator("#ask").click()
        expect(page.locator("#status")).to_contain_text("The question is empty", timeout=15_000)
        pasted = "spiking networks " * 1200  # 20,400 characters
        page.locator("#question textarea").fill(pasted)
        page.locator("#ask").click()
        expect(page.locator("#status")).to_contain_text("characters long; the limit is 4,000", timeout=15_000)
        assert page.locator("#chat [data-testid='user']").count() == 0 and page.locator("#chat [data-testid='bot']").count() == 0
        assert len(page.locator("#question textarea").input_value()) == len(pasted)  # nothing cut, nothing lost
        browser.close()


def _luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return sum(w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4) for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b)))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_highlighted_passages_are_readable_in_light_and_dark_mode(app_url: str, scheme: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(color_scheme=scheme)
        page.goto(app_url + ("?__theme=dark" if scheme == "dark" else "?__theme=light"))
        page.locator("#question textarea").fill("What is PRepBN and what problem does it solve in Transformers?")
        page.locator("#ask").click()
        mark = page.locator("#papers .snippet mark").first
        expect(mark).to_be_visible(timeout=30_000)
        colours = mark.evaluate("m => [getComputedStyle(m).color, getComputedStyle(m).backgroundColor]")
        light, dark = sorted((_luminance(c) for c in colours), reverse=True)
        assert (light + 0.05) / (dark + 0.05) >= 4.5, colours  # WCAG AA contrast for body text
        browser.close()


def test_gradio_client_api(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    result = client.predict("Is there work on pruning spiking neural networks?", [], 3, api_name="/ask")
    assert len(result["sources"]) == 3 and result["citations"] and "[1]" in result["text"]
    assert "spiking" in result["citations"][0]["abstract"].lower()
    error = client.predict("   ", [], 3, api_name="/ask")
    assert "empty" in error["error"]


HOSTILE = [
    "We study cross-site scripting in chat interfaces. <script>window.__xss = 'script';</script> Our filter blocks injected markup in rendered answers.",
    "Image tags are dangerous too: <img src=x onerror=\"window.__xss='img'\"> We measure how often chat interfaces render injected markup.",
    "Spiking neural networks are energy efficient. We propose SpikePrune, a channel pruning method for spiking networks.",
]


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An app behind UI_AUTH whose corpus carries HTML and JavaScript."""
    root = tmp_path_factory.mktemp("hostile")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "hostile.txt").write_text("\n\n".join(HOSTILE), encoding="utf-8")
    settings = make_settings(root)
    build_index(settings, corpus, progress=False)
    with serving(root, settings, UI_AUTH="alice:s3cret-pass") as (url, log):
        yield url
    assert "s3cret-pass" not in log.read_text()


def test_auth_guards_the_page_and_the_api(hostile_app: str) -> None:
    for path in ("config", "gradio_api/info"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(hostile_app + path, timeout=10)
        assert refused.value.code in (401, 403)
    with pytest.raises(AuthenticationError, match="credentials were not provided"):
        Client(hostile_app, verbose=False)
    allowed = Client(hostile_app, auth=("alice", "s3cret-pass"), verbose=False)
    assert "SpikePrune" in allowed.predict("pruning spiking networks", [], 3, api_name="/ask")["text"]


def test_corpus_html_never_executes_in_the_browser(hostile_app: str, tmp_path: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(hostile_app)
        page.get_by_label("username").fill("alice")
        page.get_by_label("password").fill("s3cret-pass")
        page.get_by_role("button", name="Login").click()
        page.locator("#question textarea").fill("How often do chat interfaces render injected markup from scripts and image tags?")
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']").last).to_contain_text("[1]", timeout=30_000)
        expect(page.locator("#papers")).to_contain_text("<img src=x onerror=")  # shown as text, not run
        page.locator("#papers details").first.click()
        page.wait_for_timeout(500)
        assert page.evaluate("window.__xss") is None and not dialogs
        assert page.locator("#papers script, #papers img, #chat img[src='x']").count() == 0
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
        browser.close()


def test_ten_concurrent_api_clients(app_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    questions = {
        "What is PRepBN and what problem does it solve in Transformers?": "PRepBN",
        "What guarantees does the FESSNC controller provide?": "FESSNC",
        "What is MorseDet and which mathematical tools does it build on?": "MorseDet",
        "How does the balanced resonate-and-fire (BRF) neuron improve recurrent spiking networks?": "balanced RF",
        "How can a grid-based NeRF model be compressed to reduce its storage overhead?": "NeRF",
    }
    work = list(questions.items()) * 2

    def one(case: tuple[str, str]) -> bool:
        question, marker = case
        result = Client(app_url, verbose=False).predict(question, [], 5, api_name="/ask")
        return marker in result["citations"][0]["abstract"]

    with ThreadPoolExecutor(10) as pool:
        assert all(pool.map(one, work))


def test_model_markdown_cannot_make_the_browser_fetch_anything(small_corpus: Path, tmp_path: Path) -> None:
    """A model answer with an image, a link and bare URLs pointing at a recording server: the image and link are
    removed before the answer is shown (their text stays), the bare URL is text; nothing is fetched."""
    import http.server
    import threading

    fetched: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            fetched.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    recorder = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{recorder.server_address[1]}"
    reply = f"SpikePrune removes kernels of spiking networks [1]. ![x]({target}/img.png?q=secret) [more]({target}/link) {target}/bare"
    try:
        with app_with_model(small_corpus, tmp_path, Behaviour(text=reply)) as page:
            typed = "How does SpikePrune prune spiking neural networks? <img src=x> <script>alert(1)</script>"
            page.locator("#question textarea").fill(typed)
            page.locator("#ask").click()
            bot = page.locator("#chat [data-testid='bot']").last
            expect(bot).to_contain_text("more", timeout=30_000)
            expect(bot).not_to_contain_text("![x](")
            expect(page.locator("#chat [data-testid='user']").last).to_contain_text(typed)  # the question as typed
            expect(page.locator("#status")).to_contain_text("mode: ", timeout=30_000)
            page.wait_for_timeout(1500)
            assert bot.locator("img").count() == 0 and bot.locator(f"a[href^='{target}']").count() == 0
            assert fetched == []
    finally:
        recorder.shutdown()


@contextmanager
def app_with_model(corpus: Path, root: Path, behaviour: Behaviour) -> Iterator[Page]:
    """`corpus` served by `assistant serve` with a scripted chat model behaving as told, open in chromium."""
    model = ScriptedServer(script=[behaviour]).start()
    settings = make_settings(root)
    build_index(settings, corpus, progress=False)
    try:
        with serving(root, settings, LLM_PROVIDER="openai-compatible", OPENAI_BASE_URL=model.base_url, LLM_MODEL=MODEL, READING="false") as (url, _), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.goto(url)
            yield page
            browser.close()
    finally:
        model.stop()


def test_a_models_comparison_shows_one_table_first_the_quoted_one_then_its_own(small_corpus: Path, tmp_path: Path) -> None:
    """While a model writes, the quoted papers' table sits under the bubble; its answer's table then takes its place."""
    text = "SpikePrune prunes spiking networks [1], while GraphHop rewires graphs with virtual nodes [2]."
    with app_with_model(small_corpus, tmp_path, Behaviour(kind="stall", delay_s=4.0, text=text)) as page:
        page.locator("#question textarea").fill("How do SpikePrune and GraphHop differ?")
        page.locator("#ask").click()
        bot = page.locator("#chat [data-testid='bot']").last
        expect(bot).to_contain_text("From the abstracts", timeout=5_000)
        expect(bot.locator(".answer-table")).to_have_count(1)
        expect(bot).to_contain_text("while GraphHop rewires graphs with virtual nodes", timeout=30_000)
        expect(page.locator("#status")).to_contain_text("mode: scripted-model")
        expect(bot.locator(".answer-table")).to_have_count(1)
        expect(bot.locator(".answer-table tbody tr")).to_have_count(2)


def test_an_answer_that_is_the_quotes_again_is_said_once(small_corpus: Path, tmp_path: Path) -> None:
    """A model whose answer repeats the quoted evidence word for word: the bubble shows the quotes once and says so."""
    from assistant.answer.result import QUOTES_KEPT
    from assistant.engine import Assistant

    question = "How does SpikePrune prune spiking neural networks?"
    probe = make_settings(tmp_path / "probe")
    build_index(probe, small_corpus, progress=False)
    quoted = Assistant(probe).ask(question, llm_provider="extractive")
    first = quoted.passages[0][0]
    with app_with_model(small_corpus, tmp_path / "app", Behaviour(text=quoted.text)) as page:
        page.locator("#question textarea").fill(question)
        page.locator("#ask").click()
        bot = page.locator("#chat [data-testid='bot']").last
        expect(page.locator("#status")).to_contain_text("mode: scripted-model", timeout=30_000)
        expect(bot).to_contain_text(QUOTES_KEPT)
        assert bot.inner_text().count(first) == 1


def test_evidence_shows_before_the_models_first_token(small_corpus: Path, tmp_path: Path) -> None:
    """A model that takes 6 s to start: the question, the quoted evidence with [1] and its card appear well before."""
    import time

    with app_with_model(small_corpus, tmp_path, Behaviour(kind="stall", delay_s=6.0, text="SpikePrune regrows pruned kernels while training [1].")) as page:
        page.locator("#question textarea").fill("How does SpikePrune prune spiking neural networks?")
        started = time.monotonic()
        page.locator("#ask").click()
        bot = page.locator("#chat [data-testid='bot']").last
        expect(bot).to_contain_text("From the abstracts", timeout=5_000)
        expect(bot).to_contain_text("We propose SpikePrune")
        expect(page.locator("#card-0-1")).to_contain_text("SpikePrune")
        expect(page.locator("#status")).to_contain_text("writing")
        assert time.monotonic() - started < 5 and "regrows pruned kernels" not in bot.inner_text()  # before the model's first token
        expect(bot).to_contain_text("SpikePrune regrows pruned kernels while training [1]", timeout=30_000)
        expect(bot).to_contain_text("We propose SpikePrune")  # the evidence stays above the answer
        expect(page.locator("#status")).to_contain_text("mode: scripted-model")
