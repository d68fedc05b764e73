"""The embedded model's time to first token and tokens/s here, and the overhead our
code adds between retrieval and the first byte of the model request (measured against a local server).

Run: python -m benchmarks.bench_model [--skip-local]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import percentiles, report, temp_settings
from tests.openai_server import MODEL, ScriptedServer

QUESTIONS = [
    "What is PRepBN and what problem does it solve in Transformers?",
    "Which papers tackle imitation learning from imperfect demonstrations?",
    "How can a grid-based NeRF be compressed?",
]


def request_overhead() -> None:
    from assistant.engine import Assistant
    from assistant.indexing.indexer import build_index
    from benchmarks.bench_scale import SHIPPED

    settings = temp_settings(llm_provider="openai-compatible", llm_model=MODEL, llm_max_retries=0)
    build_index(settings, SHIPPED, progress=False)
    server = ScriptedServer().start()
    assistant = Assistant(settings.with_overrides(openai_base_url=server.base_url))
    assistant.ask(QUESTIONS[0])
    overheads = []
    for _ in range(5):
        for question in QUESTIONS:
            started = time.perf_counter()
            answer = assistant.ask(question)
            overheads.append((server.arrivals[-1] - started - answer.timings["retrieval"]) * 1000)
    server.stop()
    stats = percentiles(overheads)
    report("our overhead, retrieval end → model request arrives, p50", stats["p50"], "ms", target=10)
    report("our overhead, retrieval end → model request arrives, p95", stats["p95"], "ms")


def embedded_model() -> None:
    from assistant.answer.context import build_prompt
    from assistant.chat import local_server
    from assistant.chat.client import ChatModel, ModelConfig
    from assistant.engine import Assistant
    from assistant.settings import Settings

    settings = Settings(llm_provider="extractive")
    started = time.perf_counter()
    server = local_server.server(settings.model_dir, 8791, settings.local_threads, settings.local_context)
    base_url = server.ensure()
    report("embedded model: server start incl. model load", time.perf_counter() - started, "s")
    chat = ChatModel(ModelConfig(base_url=base_url, model=local_server.MODEL_NAME, api_key=server.key, max_tokens=120, temperature=0.0, timeout_s=300))
    assistant = Assistant(settings)
    for label, budget in (("short context (1 source)", 450), ("default local context (LOCAL_CONTEXT_TOKENS)", settings.local_context_tokens), ("5 full abstracts", 3000)):
        ttfts, rates = [], []
        for question in QUESTIONS:
            prompt = build_prompt(question, [], assistant.search(question).papers, budget)
            t0 = time.perf_counter()
            first = None
            pieces = 0
            for _ in chat.stream(prompt.messages):
                first = first or time.perf_counter()
                pieces += 1
            end = time.perf_counter()
            ttfts.append(first - t0)
            rates.append(pieces / max(end - first, 1e-6))
        report(f"embedded model TTFT, {label} (~{prompt.tokens} prompt tokens)", percentiles(ttfts)["p50"], "s")
        report(f"embedded model generation, {label}", percentiles(rates)["p50"], "tokens/s")


PROGRESSIVE_QUESTIONS = [
    *QUESTIONS,
    "Is there work on pruning spiking neural networks?",
    "What guarantees does the FESSNC controller provide?",
    "Which paper studies grokking of permutation groups?",
]


def progressive() -> None:
    """What a user of `make serve` waits for with the embedded model: evidence, first model token, whole answer.

    The default (the model reads numbered sentences and replies with a JSON verdict, 480 tokens) beside the
    free-text answer from each source's 2 best sentences (READING=false, 650 tokens), one question at a time
    and two at once (the second waits its turn).
    """
    from concurrent.futures import ThreadPoolExecutor

    from assistant.answer.result import Answer
    from assistant.engine import Assistant
    from assistant.settings import Settings

    def timed(assistant: Assistant, question: str) -> dict[str, float]:
        answer = [piece for piece in assistant.stream(question) if isinstance(piece, Answer)][-1]
        return answer.timings | {"failed": float(bool(answer.notice))}

    configs = (
        ("free text from the best 2 sentences per source, 650-token prompt (READING=false)", {"reading": False, "local_context_tokens": 650}),
        ("reads first, JSON verdict over numbered sentences, 480-token prompt (default)", {}),
    )
    for label, overrides in configs:
        default = not overrides
        assistant = Assistant(Settings(llm_provider="local", llm_timeout_s=120, **overrides))
        timed(assistant, QUESTIONS[0])  # the server started, the system prompt cached
        for concurrent in (1, 2):
            with ThreadPoolExecutor(concurrent) as pool:
                runs = list(pool.map(lambda q, a=assistant: timed(a, q), PROGRESSIVE_QUESTIONS * concurrent))
            for key, name, target in (("first_text", "evidence shown", 0.5), ("first_token", "model answer shown", None), ("total", "complete answer", 12.0)):
                stats = percentiles([r.get(key, r["total"]) for r in runs])
                ok_target = target if concurrent == 1 and default else None
                report(f"embedded, {label}, {concurrent} at once: {name} p50", stats["p50"], "s", target=ok_target)
                report(f"embedded, {label}, {concurrent} at once: {name} p95", stats["p95"], "s")
            report(f"embedded, {label}, {concurrent} at once: answers that fell back", sum(r["failed"] for r in runs), "of " + str(len(runs)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-local", action="store_true", help="Skip the embedded llama.cpp model.")
    args = parser.parse_args()
    request_overhead()
    if not args.skip_local:
        embedded_model()
        progressive()


if __name__ == "__main__":
    main()
