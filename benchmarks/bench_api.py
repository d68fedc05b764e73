"""What the HTTP server adds to an answer: `ask()` in-process against /v1/chat/completions and /api/ask.

The same questions, extractive answers, one warm server (uvicorn in this process, the UI mounted as
`assistant serve` runs it); the overhead is the p50 of the HTTP time minus the p50 of `ask()`.
Run: python -m benchmarks.bench_api
"""

from __future__ import annotations

import logging
import threading
import time

import httpx
import uvicorn

from benchmarks.bench_core import QUESTIONS
from benchmarks.common import percentiles, report, timed

ROUNDS = 10
logging.getLogger("httpx").setLevel(logging.WARNING)


def main() -> None:
    from assistant.engine import Assistant
    from assistant.indexing.indexer import ensure_index
    from assistant.serve.http_api import create_app
    from assistant.settings import Settings
    from tests.conftest import free_port
    from ui.app import mount

    settings = Settings(llm_provider="extractive")
    ensure_index(settings)
    assistant = Assistant(settings)
    server = uvicorn.Server(uvicorn.Config(mount(create_app(assistant), assistant), host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{server.config.port}"
    chat = {"model": settings.collection, "messages": [{"role": "user", "content": ""}]}
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            for question in QUESTIONS:  # warm every path once
                assistant.ask(question)
                http.post("/api/ask", json={"question": question}).raise_for_status()
            direct, completions, streamed, api = [], [], [], []
            for _ in range(ROUNDS):
                for question in QUESTIONS:
                    body = {**chat, "messages": [{"role": "user", "content": question}]}
                    direct.append(timed(lambda q=question: assistant.ask(q)) * 1000)
                    completions.append(timed(lambda b=body: http.post("/v1/chat/completions", json=b).raise_for_status()) * 1000)
                    streamed.append(timed(lambda b=body: http.post("/v1/chat/completions", json={**b, "stream": True}).raise_for_status()) * 1000)
                    api.append(timed(lambda q=question: http.post("/api/ask", json={"question": q}).raise_for_status()) * 1000)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    base_p50 = percentiles(direct)["p50"]
    report("ask() in-process, extractive, p50", base_p50, "ms")
    for name, samples in (("/v1/chat/completions", completions), ("/v1/chat/completions stream=true", streamed), ("/api/ask", api)):
        stats = percentiles(samples)
        report(f"{name} p50", stats["p50"], "ms")
        report(f"{name} overhead over ask(), p50", stats["p50"] - base_p50, "ms", target=5)


if __name__ == "__main__":
    main()
