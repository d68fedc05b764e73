"""The real app in a real browser (Debian chromium via Playwright) and through gradio_client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client
from playwright.sync_api import expect, sync_playwright

from assistant.indexer import build_index
from tests.conftest import SHARED_DATA, SHIPPED_CORPUS, free_port, make_settings

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


METADATA = SHARED_DATA / "icml2024_all.jsonl"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The shipped corpus with the conference's metadata (when ../shared/data is here), served by `assistant serve`."""
    root = tmp_path_factory.mktemp("ui")
    settings = make_settings(root)
    build_index(settings, SHIPPED_CORPUS, metadata_path=METADATA if METADATA.exists() else None, progress=False)
    port = free_port()
    env = {**os.environ, "INDEX_DIR": str(settings.index_dir), "CACHE_DIR": str(settings.cache_dir), "UI_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False", "LLM_PROVIDER": "extractive"}
    log = root / "serve.log"
    with open(log, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "assistant.cli", "serve"], env=env, stdout=handle, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"UI did not start:\n{log.read_text()}")
            time.sleep(0.5)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


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
        if METADATA.exists():
            link = card.locator(".paper-title a")
            expect(link).to_have_text("SLAB: Efficient Transformers with Simplified Linear Attention and Progressive Re-parameterized Batch Normalization")
            assert link.get_attribute("href").startswith("https://icml.cc/virtual/2024/")
            expect(card.locator(".authors")).not_to_be_empty()
        expect(page.locator("#status")).to_contain_text("mode: extractive")

        page.locator("#question textarea").fill("Which normalization does it replace?")
        page.locator("#ask").click()
        expect(page.locator("#chat [data-testid='bot']")).to_have_count(2, timeout=30_000)
        expect(page.locator("#chat [data-testid='bot']").last).to_contain_text("LayerNorm", timeout=30_000)
        page.screenshot(path=str(tmp_path / "chat.png"), full_page=True)
        assert (tmp_path / "chat.png").stat().st_size > 10_000
        browser.close()


def test_gradio_client_api(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    result = client.predict("Is there work on pruning spiking neural networks?", [], 3, api_name="/ask")
    assert len(result["sources"]) == 3 and result["citations"] and "[1]" in result["text"]
    assert "spiking" in result["citations"][0]["abstract"].lower()
    error = client.predict("   ", [], 3, api_name="/ask")
    assert "empty" in error["error"]
