"""Issue #3 numbers: the embedded model's time to first token and tokens/s here, and the overhead our
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
    from assistant.indexer import build_index
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
    from assistant import local_model
    from assistant.context import build_prompt
    from assistant.engine import Assistant
    from assistant.llm import ChatModel, ModelConfig
    from assistant.settings import Settings

    settings = Settings(llm_provider="extractive")
    started = time.perf_counter()
    base_url = local_model.server(settings.model_dir, 8791, settings.local_threads, settings.local_context).ensure()
    report("embedded model: server start incl. model load", time.perf_counter() - started, "s")
    chat = ChatModel(ModelConfig(base_url=base_url, model=local_model.MODEL_NAME, api_key=None, max_tokens=120, temperature=0.0, timeout_s=300))
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-local", action="store_true", help="Skip the embedded llama.cpp model.")
    args = parser.parse_args()
    request_overhead()
    if not args.skip_local:
        embedded_model()


if __name__ == "__main__":
    main()
