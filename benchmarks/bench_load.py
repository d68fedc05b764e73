"""Issue #7 numbers: throughput and p95 latency for 1, 4 and 16 concurrent clients (extractive), answers
lost, and how long answers take to come from the model again after its server restarts.

Run: python -m benchmarks.bench_load
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import percentiles, report, temp_settings
from tests.openai_server import MODEL, ScriptedServer

CASES = {
    "What is PRepBN and what problem does it solve in Transformers?": "PRepBN",
    "What guarantees does the FESSNC controller provide?": "FESSNC",
    "What is MorseDet and which mathematical tools does it build on?": "MorseDet",
    "How can a grid-based NeRF model be compressed to reduce its storage overhead?": "NeRF",
}


def concurrency() -> None:
    from assistant.engine import Assistant
    from assistant.indexer import build_index
    from benchmarks.bench_scale import SHIPPED

    settings = temp_settings(llm_provider="extractive")
    build_index(settings, SHIPPED, progress=False)
    assistant = Assistant(settings)
    assistant.ask(next(iter(CASES)))
    work = list(CASES.items()) * 16

    def one(case: tuple[str, str]) -> tuple[float, bool]:
        question, marker = case
        started = time.perf_counter()
        try:
            answer = assistant.ask(question)
            ok = bool(answer.citations) and marker in answer.citations[0].abstract
        except Exception:
            ok = False
        return time.perf_counter() - started, ok

    for clients in (1, 4, 16):
        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            results = list(pool.map(one, work))
        wall = time.perf_counter() - started
        lost = sum(not ok for _, ok in results)
        report(f"{clients:>2} clients: throughput", len(work) / wall, "answers/s")
        report(f"{clients:>2} clients: p95 latency", percentiles([t * 1000 for t, _ in results])["p95"], "ms")
        report(f"{clients:>2} clients: answers lost or wrong", lost, "", target=0)


def restart_recovery() -> None:
    from assistant.engine import Assistant
    from assistant.indexer import build_index
    from benchmarks.bench_scale import SHIPPED

    settings = temp_settings(llm_provider="openai-compatible", llm_model=MODEL, llm_max_retries=0, llm_timeout_s=2)
    build_index(settings, SHIPPED, progress=False)
    server = ScriptedServer().start()
    port = server.port
    assistant = Assistant(settings.with_overrides(openai_base_url=server.base_url))
    assert assistant.ask(next(iter(CASES))).notice is None
    server.stop()
    down = assistant.ask(next(iter(CASES)))
    report("while the model server is down: answered (extractive fallback)", float(bool(down.citations and down.notice)), "", target=1, lower_is_better=False)
    restarted_at = time.perf_counter()
    server = ScriptedServer(port=port).start()
    while assistant.ask(next(iter(CASES))).notice is not None:
        time.sleep(0.05)
    report("recovery: server back → next answer from the model", time.perf_counter() - restarted_at, "s")
    server.stop()


def main() -> None:
    concurrency()
    restart_recovery()


if __name__ == "__main__":
    main()
