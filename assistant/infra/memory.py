"""Giving memory back to the operating system, and keeping a threaded server's heap from spreading.

CPython frees objects into its own and glibc's heaps, which keep the pages:
reading 100,000 abstracts left ~150 MB resident that nothing used. glibc's
`malloc_trim` returns them. glibc also gives each thread that allocates its
own heap arena (up to 8 per core), each keeping its freed pages: a server
answering on many threads grows with them. Elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_WORTH_FROM = 2_000  # abstracts or chunks: below, their garbage is a few MB, and a full collection costs 0.1–0.4 s


def release(items: int) -> None:
    """Collect garbage, then hand free heap pages back to the OS (glibc only), after work over `items` records."""
    if items < _WORTH_FROM:
        return
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_M_ARENA_MAX = -8  # glibc's mallopt parameter


def limit_arenas(count: int = 2) -> None:
    """Cap glibc's heap arenas for this process (a long-running server), unless MALLOC_ARENA_MAX already says.

    Called before the server starts its threads: arenas made earlier stay.
    """
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt") and "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(_M_ARENA_MAX, count)
