"""Scale beyond one process: two app processes sharing one Chroma server (`chroma run`), 16 clients.

Builds an index of `--size` abstracts (the shipped 440 plus conference
distractors, as bench_scale) into a Chroma server, starts two `assistant
serve` processes against it, each with its own CACHE_DIR as if on its own
machine (so each derives the build's search files from the server once),
then runs 16 clients over HTTP (`/api/ask`, alternating apps) for
`--seconds`. A rebuild starts from a third process `--rebuild-at` seconds in
(default: a third of the way) and lands while they run: both apps must switch
to it (same build, same BM25) without a failed or wrong answer. Prints
throughput, p50/p95, errors, each app's start and switch time, its RSS
sampled every second (the highest, and after the switch), and the server's
RSS.

Run: python -m benchmarks.bench_shared [--size 100000] [--seconds 120] [--rebuild-at 0] [--embed-model wordllama]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchmarks.bench_load import CASES
from benchmarks.bench_scale import BUILD, corpus_of
from benchmarks.common import percentiles, report, rss_mb, temp_settings
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent


def wait_for(url: str, limit_s: float) -> float:
    """Seconds until `url` answers 200, or an error after `limit_s`."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {limit_s} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rebuild-at", type=float, default=None, help="Seconds into the run the rebuild starts (default: a third).")
    parser.add_argument("--embed-model", default="wordllama", choices=["minilm", "wordllama"])
    args = parser.parse_args()

    root = Path(temp_settings().index_dir).parent
    corpus = corpus_of(args.size, root / "corpus")
    port = free_port()
    chroma = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(root / "chroma"), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    apps: list[subprocess.Popen] = []
    try:
        wait_for(f"http://127.0.0.1:{port}/api/v2/heartbeat", 60)
        common = {"chroma_host": "127.0.0.1", "chroma_port": port, "embed_model": args.embed_model, "reranker": "none", "llm_provider": "extractive",
                  "shipped_vectors": False}

        def build(rebuild: bool) -> dict:
            values = {**common, "cache_dir": str(root / "cache-builder")}
            flag = ["--rebuild"] if rebuild else []
            out = subprocess.run([sys.executable, "-c", BUILD, json.dumps(values), str(corpus), *flag], capture_output=True, text=True, cwd=ROOT)
            if out.returncode:
                raise RuntimeError(out.stderr[-3000:])
            return json.loads(out.stdout.strip().splitlines()[-1])

        built = build(False)
        report(f"build into the Chroma server, {built['papers']:,} abstracts", built["seconds"], "s")
        urls = []
        for n in range(2):
            app_port = free_port()
            env = {**os.environ, "CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(port), "CACHE_DIR": str(root / f"cache-app{n}"),
                   "EMBED_MODEL": args.embed_model, "RERANKER": "none", "LLM_PROVIDER": "extractive", "INDEX_CHECK_S": "2", "UI_PORT": str(app_port)}
            started = time.monotonic()
            apps.append(subprocess.Popen([str(Path(sys.executable).parent / "assistant"), "serve"], env=env, cwd=ROOT,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            url = f"http://127.0.0.1:{app_port}"
            wait_for(f"{url}/api/health", 600)
            first = httpx.post(f"{url}/api/ask", json={"question": next(iter(CASES))}, timeout=600)
            first.raise_for_status()
            report(f"app {n + 1}: start to first answer (derives the search files)", time.monotonic() - started, "s")
            urls.append(url)

        built_at = [httpx.get(f"{u}/api/health").json()["built_at"] for u in urls]
        latencies: list[float] = []
        failures = [0]
        switched: dict[int, float] = {}
        lock = threading.Lock()
        end = time.monotonic() + args.seconds
        rebuild_done = [0.0]
        highest = [0.0, 0.0]  # each app's RSS, sampled every second
        after_switch = [float("nan"), float("nan")]

        def client(number: int) -> None:
            cases = list(CASES.items())
            i = number
            while time.monotonic() < end:
                question, marker = cases[i % len(cases)]
                app = i % 2
                i += 1
                t = time.perf_counter()
                try:
                    answer = httpx.post(f"{urls[app]}/api/ask", json={"question": question}, timeout=60).json()
                    ok = marker in answer["citations"][0]["abstract"]
                except (httpx.HTTPError, KeyError, IndexError, ValueError):
                    ok = False
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)
                    failures[0] += not ok

        def sampler() -> None:
            while time.monotonic() < end:
                for n in range(2):
                    highest[n] = max(highest[n], rss_mb(apps[n].pid))
                time.sleep(1.0)

        def rebuilder() -> None:
            time.sleep(args.seconds / 3 if args.rebuild_at is None else args.rebuild_at)
            stats = build(True)
            rebuild_done[0] = time.monotonic()
            report("rebuild while serving", stats["seconds"], "s")
            while time.monotonic() < end and len(switched) < 2:
                for n, u in enumerate(urls):
                    if n not in switched and httpx.get(f"{u}/api/health").json()["built_at"] != built_at[n]:
                        switched[n] = time.monotonic() - rebuild_done[0]
                time.sleep(0.2)
            time.sleep(max(0.0, min(30.0, end - time.monotonic() - 1)))  # answers on the new build for a while
            for n in switched:
                after_switch[n] = rss_mb(apps[n].pid)

        started = time.monotonic()
        with ThreadPoolExecutor(args.clients + 2) as pool:
            for number in range(args.clients):
                pool.submit(client, number)
            pool.submit(rebuilder)
            pool.submit(sampler)
        wall = time.monotonic() - started
        spread = percentiles(latencies)
        report(f"{args.clients} clients over 2 apps: answers", len(latencies), "")
        report("throughput", len(latencies) / wall, "answers/s")
        report("latency p50", spread["p50"], "ms")
        report("latency p95", spread["p95"], "ms")
        report("failed or wrong answers", failures[0], "", target=0)
        for n in range(2):
            report(f"app {n + 1}: switched to the new build after", switched.get(n, float("nan")), "s")
            report(f"app {n + 1}: highest RSS while serving", highest[n], "MB", target=1024)
            report(f"app {n + 1}: RSS after the switch (up to 30 s on the new build)", after_switch[n], "MB", target=1024)
        report("Chroma server: RSS", rss_mb(chroma.pid), "MB")
    finally:
        for process in [*apps, chroma]:
            process.terminate()
        for process in [*apps, chroma]:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(root, ignore_errors=True)  # two builds of the corpus, three caches: ~4.5 GB at 100k


if __name__ == "__main__":
    main()
