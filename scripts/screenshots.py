"""The screenshots in docs/serving.md: the app on the default index, light and dark at 1366×768 and on a 390-px phone.

Run: python scripts/screenshots.py   (starts `assistant serve` with extractive answers on a free port;
needs Debian's chromium and the test extra's Playwright). Writes docs/screenshots/*.png.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
QUESTION = "Which papers tackle imitation learning from imperfect demonstrations?"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {**os.environ, "UI_PORT": str(port), "LLM_PROVIDER": "extractive", "GRADIO_ANALYTICS_ENABLED": "False"}
    server = subprocess.Popen([sys.executable, "-m", "assistant.cli", "serve"], env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            for name, options, theme in (
                ("light", {"viewport": {"width": 1366, "height": 768}}, "light"),
                ("dark", {"viewport": {"width": 1366, "height": 768}, "color_scheme": "dark"}, "dark"),
                ("phone", {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "device_scale_factor": 1}, "light"),
            ):
                page = browser.new_page(**options)
                page.goto(f"{url}?__theme={theme}")
                page.locator("#question textarea").fill(QUESTION)
                page.locator("#ask").click()
                expect(page.locator("#status")).to_contain_text("mode:", timeout=60_000)
                page.locator("#chat [data-testid='bot']").last.locator("a.cite", has_text="[2]").first.click()
                page.wait_for_timeout(500)
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=name == "phone")
                print(OUT / f"{name}.png")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
