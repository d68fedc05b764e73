"""Helpers for the benchmarks: timing, percentiles, peak memory, a throwaway store."""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from assistant.evaluation.harness import shared_dir
from assistant.settings import Settings

SHARED = shared_dir()


def temp_settings(**overrides: object) -> Settings:
    """Settings with a fresh store and cache in a temporary folder; every text embedded (no shipped vectors), as a user's corpus would be."""
    root = Path(tempfile.mkdtemp(prefix="assistant-bench-"))
    overrides.setdefault("shipped_vectors", False)
    return Settings(index_dir=root / "store", cache_dir=root / "cache", **overrides)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "n": len(ordered),
    }


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of a process now (VmRSS, not the peak), in MB; this one unless `pid` is given."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(name: str, value: float, unit: str, target: float | None = None, lower_is_better: bool = True) -> str:
    line = f"{name:<48} {value:>10.3f} {unit}"
    if target is not None:
        ok = value <= target if lower_is_better else value >= target
        ratio = f"  ratio {value / target:.2f}" if target else ""
        line += f"   target {'≤' if lower_is_better else '≥'} {target:g} {unit}{ratio}  {'OK' if ok else 'MISSED'}"
    print(line, flush=True)
    return line
