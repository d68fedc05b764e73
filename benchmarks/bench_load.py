"""Load numbers: throughput and p95 latency for 1, 4 and 16 concurrent clients (extractive), answers
lost, and how long answers take to come from the model again after its server restarts; the memory
after 20 switches to a new build, and a soak at 8 clients (RSS slope, errors), printed, not asserted.

Run: python -m benchmarks.bench_load [--soak-minutes 30]
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import percentiles, report, rss_mb, temp_settings
from tests.openai_server import MODEL, ScriptedServer

CASES = {
    "What is PRepBN and what problem does it solve in Transformers?": "PRepBN",
    "What guarantees does the FESSNC controller provide?": "FESSNC",
    "What is MorseDet and which mathematical tools does it build on?": "MorseDet",
    "How can a grid-based NeRF model be compressed to reduce its storage overhead?": "NeRF",
}


def concurrency() -> None:
    from assistant.engine import Assistant
    from assistant.indexing.indexer import build_index
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
    from assistant.indexing.indexer import build_index
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


def build_switches(switches: int = 20) -> None:
    """A serving process follows 20 new builds: its memory after the last switch against after the first."""
    from assistant.engine import Assistant
    from assistant.indexing.indexer import build_index
    from benchmarks.bench_scale import SHIPPED

    settings = temp_settings(llm_provider="extractive", index_check_s=0.0)
    build_index(settings, SHIPPED, progress=False)
    assistant = Assistant(settings)
    question = next(iter(CASES))
    after: list[float] = []
    for _ in range(switches):
        build_index(settings, SHIPPED, rebuild=True, progress=False)  # embeddings cached: a new build in seconds
        assert assistant.ask(question).citations  # the handle notices the new build and switches to it
        after.append(rss_mb())
    report("RSS after the 1st switch to a new build", after[0], "MB")
    report(f"RSS after the {switches}th switch", after[-1], "MB")
    report(f"RSS growth over {switches} switches (after / after the 1st)", after[-1] / after[0], "x", target=1.10)


def soak(minutes: float, clients: int = 8) -> None:
    """`clients` threads asking for `minutes` while a rebuild lands every minute: RSS slope and errors."""
    from assistant.engine import Assistant
    from assistant.indexing.indexer import build_index
    from benchmarks.bench_scale import SHIPPED

    settings = temp_settings(llm_provider="extractive", index_check_s=1.0)
    build_index(settings, SHIPPED, progress=False)
    assistant = Assistant(settings)
    end = time.monotonic() + minutes * 60
    errors, answered, samples = [0], [0], []
    lock = threading.Lock()

    def client() -> None:
        cases = list(CASES.items())
        i = 0
        while time.monotonic() < end:
            question, marker = cases[i % len(cases)]
            i += 1
            try:
                ok = marker in assistant.ask(question).citations[0].abstract
            except Exception:
                ok = False
            with lock:
                answered[0] += ok
                errors[0] += not ok

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    next_build = started + 60
    while time.monotonic() < end:
        samples.append((time.monotonic() - started, rss_mb()))
        if time.monotonic() >= next_build:
            build_index(settings, SHIPPED, rebuild=True, progress=False)
            next_build += 60
        time.sleep(5)
    for thread in threads:
        thread.join()
    half = [mb for t, mb in samples if t >= (minutes * 60) / 2] or [samples[-1][1]]
    first = [mb for t, mb in samples if t < (minutes * 60) / 2] or [samples[0][1]]
    slope = (sum(half) / len(half) - sum(first) / len(first)) / max(minutes / 2, 1e-9)
    report(f"soak {minutes:g} min, {clients} clients, a rebuild a minute: answers", answered[0], "")
    report("soak: wrong or failed answers", errors[0], "", target=0)
    report("soak: RSS, second half against first half", slope, "MB/min")
    report("soak: RSS after the first minute", next((mb for t, mb in samples if t >= 60), samples[-1][1]), "MB")
    report("soak: RSS at the end", samples[-1][1], "MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--soak-minutes", type=float, default=30.0, help="How long the soak runs (0 to skip).")
    args, _ = parser.parse_known_args()
    concurrency()
    restart_recovery()
    build_switches()
    if args.soak_minutes > 0:
        soak(args.soak_minutes)


if __name__ == "__main__":
    main()
